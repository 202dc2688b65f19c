"""``<peer>`` (ActiveMQ Artemis manual, "Peers"): the broker as the store-and-forward queue of a
router's waypoint address, against ``router_standin`` (Qpid Dispatch Router's documented
waypoint routing; no router ships with FerryMQ).

Clients use python-qpid-proton's blocking API against the router, on a thread each, since the
broker runs in the test's loop.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from proton import Message, ProtonException
from proton.utils import BlockingConnection

from ferrymq.client import connect
from ferrymq.config.broker_connections import PeerConfig
from ferrymq.core.destination import Destination
from ferrymq.testing import running_broker, wait_until
from tests.connections.router_standin import RouterStandIn
from tests.connections.senders_support import (
    count_numbered,
    element_links,
    local_config,
    stomp_url,
)

TIMEOUT_S = 10.0
QUEUES = (("queues.A", "queues.A"), ("queues.B", "queues.B"))


@contextmanager
def router_client(router: RouterStandIn) -> Iterator[BlockingConnection]:
    connection = BlockingConnection(router.url, timeout=TIMEOUT_S)
    try:
        yield connection
    finally:
        with suppress(ProtonException):
            connection.close()


def produce(router: RouterStandIn, address: str, numbers: range) -> None:
    """Send through the router; each send returns once the broker settled it (the router
    settles end to end)."""
    with router_client(router) as connection:
        sender = connection.create_sender(address)
        for n in numbers:
            sender.send(Message(body=f"m{n}", properties={"n": n}, durable=True))


def consume(router: RouterStandIn, address: str, expected: int) -> Counter[int]:
    """Receive from the router until ``expected`` came and one more second brings nothing."""
    seen: Counter[int] = Counter()
    with router_client(router) as connection:
        receiver = connection.create_receiver(address, credit=50)
        while True:
            timeout = 1.0 if sum(seen.values()) >= expected else TIMEOUT_S
            try:
                message = receiver.receive(timeout=timeout)
            except ProtonException:  # proton's Timeout
                break
            properties: dict[str, Any] = message.properties or {}
            seen[int(properties["n"])] += 1
            receiver.accept()
    return seen


async def test_peer_attaches_waypoint_links_the_router_routes_through(tmp_path: Path) -> None:
    """For each matching queue, a receiver (router -> broker, phase 0) and a sender
    (broker -> router, phase 1), both marked ``qd.waypoint``; messages clients send to the
    address cross the broker's queue and reach the clients that consume it, once each."""
    with RouterStandIn(waypoint_prefixes=("queues.",)) as router:
        uri = router.url.replace("amqp://", "tcp://")
        config = local_config(
            tmp_path, uri, PeerConfig(address_match="queues.#"), queues=QUEUES, name="peer"
        )
        async with running_broker(config) as broker:
            await wait_until(
                lambda: len(router.waypoint_links()) == 4, 15, "two waypoint links per queue"
            )
            assert sorted(router.waypoint_links()) == [
                ("receiver", "queues.A", 0),
                ("receiver", "queues.B", 0),
                ("sender", "queues.A", 1),
                ("sender", "queues.B", 1),
            ]
            consuming = asyncio.create_task(asyncio.to_thread(consume, router, "queues.A", 100))
            await asyncio.to_thread(produce, router, "queues.A", range(100))
            seen = await consuming
            stats = element_links(broker)["other-server.peer.0"]
    assert sorted(seen) == list(range(100))
    assert set(seen.values()) == {1}
    assert stats


async def test_broker_stores_what_has_no_consumer_yet(tmp_path: Path) -> None:
    """Store and forward: with no consumer at the router, what clients send waits in the
    broker's queue; a consumer attached later receives all of it."""
    with RouterStandIn(waypoint_prefixes=("queues.",)) as router:
        uri = router.url.replace("amqp://", "tcp://")
        config = local_config(
            tmp_path, uri, PeerConfig(address_match="queues.#"), queues=QUEUES, name="peer"
        )
        async with running_broker(config) as broker:
            await wait_until(lambda: len(router.waypoint_links()) == 4, 15, "waypoint links")
            await asyncio.to_thread(produce, router, "queues.B", range(30))
            queue = broker.service.region.queues[Destination.queue("queues.B")]
            assert queue.depth == 30
            seen = await asyncio.to_thread(consume, router, "queues.B", 30)
            await wait_until(lambda: queue.depth == 0, 10, "the queue emptied")
    assert sorted(seen) == list(range(30))
    assert set(seen.values()) == {1}


def consume_with_outcomes(router: RouterStandIn, address: str) -> list[tuple[int, str]]:
    """Reject message 0, release message 1 the first time and accept it the second: what the
    consumer saw, in order."""
    seen: list[tuple[int, str]] = []
    with router_client(router) as connection:
        receiver = connection.create_receiver(address, credit=10)
        while len(seen) < 3:
            message = receiver.receive(timeout=TIMEOUT_S)
            properties: dict[str, Any] = message.properties or {}
            n = int(properties["n"])
            if n == 0:
                receiver.reject()
                seen.append((n, "rejected"))
            elif not any(n == m for m, _ in seen):
                receiver.release(delivered=False)
                seen.append((n, "released"))
            else:
                receiver.accept()
                seen.append((n, "accepted"))
    return seen


async def test_consumer_outcomes_reach_the_broker(tmp_path: Path) -> None:
    """The router settles end to end, so the broker's sender sees the consumer's outcome: a
    rejected message goes to the local dead-letter queue (ActiveMQ's policy for a persistent
    message), a released one is offered again."""
    with RouterStandIn(waypoint_prefixes=("queues.",)) as router:
        uri = router.url.replace("amqp://", "tcp://")
        config = local_config(
            tmp_path, uri, PeerConfig(address_match="queues.#"), queues=QUEUES, name="peer"
        )
        async with running_broker(config) as broker:
            await wait_until(lambda: len(router.waypoint_links()) == 4, 15, "waypoint links")
            consuming = asyncio.create_task(
                asyncio.to_thread(consume_with_outcomes, router, "queues.A")
            )
            await asyncio.to_thread(produce, router, "queues.A", range(2))
            seen = await consuming
            client = await connect(stomp_url(broker))
            try:
                dead = await count_numbered(client, "/queue/ActiveMQ.DLQ", 1)
            finally:
                await client.close()
            queue = broker.service.region.queues[Destination.queue("queues.A")]
            await wait_until(lambda: queue.depth == 0, 10, "the queue emptied")
    assert seen == [(0, "rejected"), (1, "released"), (1, "accepted")]
    assert dict(dead.seen) == {0: 1}
