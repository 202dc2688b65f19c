"""Brokers with broker connections for the sender, receiver and peer tests, and counting.

The broker that owns the broker connection runs in the test's loop (its configuration built in
code: ``BrokerConfig.broker_connections`` and Artemis-style ``startup_destinations``); the
other end is whatever the test points it at. Messages are counted by their ``n`` property, so
a loss and a duplicate are both visible.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from ferrymq.broker import Broker
from ferrymq.client import Connection, ConnectionClosed
from ferrymq.config.broker_connections import AmqpConnectionConfig, BrokerConnectionElement
from ferrymq.config.model import BrokerConfig, StartupDestination
from ferrymq.testing import broker_config, wait_until

CONNECTION = "other-server"
COUNT_TIMEOUT_S = 30.0


def connection_config(
    uri: str, *elements: BrokerConnectionElement, user: str | None = None
) -> AmqpConnectionConfig:
    """``user`` logs in with the password ``user`` too (SASL PLAIN)."""
    return AmqpConnectionConfig(
        CONNECTION, uri, user=user, password=user, retry_interval_ms=200, elements=elements
    )


def local_config(
    data: Path,
    uri: str,
    *elements: BrokerConnectionElement,
    queues: Iterable[tuple[str, str]] = (),
    name: str = "local",
    user: str | None = None,
) -> BrokerConfig:
    """A broker with one broker connection to ``uri``; ``queues`` are (queue, address) pairs
    created at start, as broker.xml's ``<addresses>`` declares them."""
    startup = tuple(StartupDestination("queue", q, address=a) for q, a in queues)
    return replace(
        broker_config(data, name=name),
        broker_connections=(connection_config(uri, *elements, user=user),),
        startup_destinations=startup,
    )


def stomp_url(broker: Broker) -> str:
    return f"tcp://127.0.0.1:{broker.stomp_ports[0]}"


def element_links(broker: Broker) -> dict[str, dict[str, object]]:
    """Element name -> its links (queue -> counters), from the connection's statistics."""
    stats = broker.broker_connections.get(CONNECTION).statistics()
    elements = stats["elements"]
    assert isinstance(elements, list)
    return {str(e["name"]): dict(e.get("links") or {}) for e in elements}


async def wait_for_links(broker: Broker, count: int) -> None:
    def attached() -> bool:
        return sum(len(links) for links in element_links(broker).values()) >= count

    await wait_until(
        attached, 15, f"{count} links attached", detail=lambda: str(element_links(broker))
    )


async def send_numbered(
    client: Connection, destination: str, numbers: Iterable[int], *, persistent: bool = True
) -> None:
    for n in numbers:
        await client.send(
            destination, f"m{n}", headers={"n": str(n)}, persistent=persistent, priority=n % 10
        )


@dataclass
class Counted:
    seen: Counter[int] = field(default_factory=Counter)
    headers: dict[int, dict[str, str]] = field(default_factory=dict)
    """The headers each ``n`` was last received with."""

    def lost_and_duplicated(self, expected: Iterable[int]) -> tuple[set[int], set[int]]:
        wanted = set(expected)
        extra = {n for n, c in self.seen.items() if c > 1 or n not in wanted}
        return wanted - set(self.seen), extra


async def count_numbered(
    client: Connection, destination: str, expected: int, *, quiet_s: float = 1.0
) -> Counted:
    """Consume ``destination`` until ``expected`` messages came and nothing more comes for
    ``quiet_s`` (so a duplicate after the last one is still seen); each ``n`` counted."""
    counted = Counted()
    seen = counted.seen
    subscription = await client.subscribe(destination, ack="client-individual")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + COUNT_TIMEOUT_S
    try:
        while loop.time() < deadline:
            wait = quiet_s if sum(seen.values()) >= expected else deadline - loop.time()
            try:
                message = await subscription.get(timeout=max(wait, 0.01))
            except TimeoutError:
                if sum(seen.values()) >= expected:
                    break
                continue
            n = int(message.headers["n"])
            seen[n] += 1
            counted.headers[n] = dict(message.headers)
            await message.ack()
    except ConnectionClosed:
        pass
    finally:
        await subscription.unsubscribe()
    return counted
