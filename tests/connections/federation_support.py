"""Brokers joined by ``<federation>`` broker connections, in this process, for the federation
tests: each has an AMQP listener on its own free port (known before any starts, so rings can
be configured) and is reached by clients over ``vm://NAME``."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import proton

from ferrymq.broker import Broker
from ferrymq.client import Connection, Subscription, connect
from ferrymq.config.activemq_xml import parse_config
from ferrymq.config.model import AdminConfig
from ferrymq.core.destination import Destination
from ferrymq.core.queue import Queue
from ferrymq.core.region import RegionBroker
from ferrymq.core.topic import TopicSubscription
from ferrymq.testing import free_port, wait_until

WAIT_S = 15.0


@dataclass(frozen=True)
class Federation:
    """One broker's ``<amqp-connection>`` to ``to`` with this ``<federation>`` body."""

    to: str
    policies: str
    name: str | None = None


def broker_xml(name: str, port: int, connections: str) -> str:
    return f"""<beans xmlns="http://www.springframework.org/schema/beans">
<broker xmlns="http://activemq.apache.org/schema/core" brokerName="{name}" persistent="true"
    dataDirectory="${{activemq.data}}">
  <broker-connections>{connections}</broker-connections>
  <transportConnectors>
    <transportConnector name="amqp" uri="amqp://127.0.0.1:{port}"/>
  </transportConnectors>
</broker></beans>"""


def connection_xml(federation: Federation, ports: Mapping[str, int], origin: str) -> str:
    name = federation.name or f"{origin}-to-{federation.to}"
    return (
        f'<amqp-connection uri="tcp://127.0.0.1:{ports[federation.to]}" name="{name}" '
        f'retry-interval="100"><federation>{federation.policies}</federation></amqp-connection>'
    )


@contextlib.asynccontextmanager
async def federated(
    tmp_path: Path, topology: Mapping[str, tuple[Federation, ...]]
) -> AsyncIterator[dict[str, Broker]]:
    """Start every broker of ``topology`` (name -> its federations), in order; stop them all."""
    ports = {name: free_port() for name in topology}
    brokers: dict[str, Broker] = {}
    async with contextlib.AsyncExitStack() as stack:
        for name, federations in topology.items():
            connections = "".join(connection_xml(f, ports, name) for f in federations)
            config = parse_config(
                broker_xml(name, ports[name], connections),
                f"{name}.xml",
                {"activemq.data": str(tmp_path / name)},
            )
            broker = Broker(replace(config, admin=AdminConfig(enabled=False)))
            brokers[name] = await stack.enter_async_context(broker)
        yield brokers


def region(broker: Broker) -> RegionBroker:
    return broker.service.region


def subscriptions(broker: Broker, topic: str) -> list[TopicSubscription]:
    """The topic's subscriptions on ``broker`` (Artemis's queue bindings of an address)."""
    return [s for s in region(broker).subscriptions.all() if s.destination.name == topic]


def has_subscriptions(
    broker: Broker, topic: str, count: int, *, federation: bool = False
) -> Callable[[], bool]:
    """A wait's predicate: ``topic`` has ``count`` (federation) subscriptions on ``broker``."""
    find = federation_subscriptions if federation else subscriptions
    return lambda: len(find(broker, topic)) == count


def federation_subscriptions(broker: Broker, topic: str) -> list[TopicSubscription]:
    return [s for s in subscriptions(broker, topic) if s.durable]


def queue(broker: Broker, name: str) -> Queue | None:
    return region(broker).queues.get(Destination.queue(name))


def queue_consumers(broker: Broker, name: str) -> int:
    found = queue(broker, name)
    return 0 if found is None else len(found.consumers)


def depth(broker: Broker, name: str) -> int:
    found = queue(broker, name)
    return 0 if found is None else found.depth


async def client(broker: Broker) -> Connection:
    return await connect(f"vm://{broker.config.broker_name}")


async def drain(subscription: Subscription, quiet_s: float = 0.5) -> list[str]:
    """Every message's ``n`` until none came for ``quiet_s``."""
    seen: list[str] = []
    while True:
        try:
            message = await subscription.get(timeout=quiet_s)
        except TimeoutError:
            return seen
        seen.append(message.headers.get("n", "?"))


async def receive(subscription: Subscription, count: int, timeout_s: float = WAIT_S) -> list[str]:
    seen: list[str] = []
    for _ in range(count):
        message = await subscription.get(timeout=timeout_s)
        seen.append(message.headers.get("n", "?"))
    return seen


async def until(predicate: Callable[[], bool], what: str) -> None:
    await wait_until(predicate, WAIT_S, what)


def decoded(encoded: bytes) -> tuple[dict[Any, Any], dict[Any, Any]]:
    """A control message's annotations and map body."""
    message = proton.Message()
    message.decode(encoded)
    body = message.body
    assert isinstance(body, dict)
    return dict(message.annotations or {}), body
