"""Brokers with `<mirror>` broker connections for the mirror tests: configurations, in-process
pairs, and counts read the way a user reads them (a queue browser, the broker's own numbers)."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from pathlib import Path
from typing import Any

from ferrymq.broker import Broker
from ferrymq.client import connect
from ferrymq.config.cli import config_from_flags
from ferrymq.config.model import BrokerConfig
from ferrymq.core.destination import Destination
from ferrymq.testing import BrokerProcess, broker_config, running_broker, wait_until
from ferrymq.testing.brokers import amqp_port

MIRROR_QUEUE = "$ACTIVEMQ_ARTEMIS_MIRROR_"
WAIT_S = 20.0


def mirror_xml(
    name: str,
    connections: list[tuple[str, str, str]],
    *,
    extra: str = "",
    options: str = "",
) -> str:
    """An activemq.xml whose broker has one `<amqp-connection>` with a `<mirror>` per
    ``(connection name, uri, mirror attributes)``; ``extra`` goes inside `<broker>`,
    ``options`` are more `<amqp-connection>` attributes."""
    if not connections:
        return (
            '<beans><broker xmlns="http://activemq.apache.org/schema/core" '
            f'brokerName="{name}">{extra}</broker></beans>'
        )
    items = "".join(
        f'<amqp-connection uri="{uri}" name="{conn}" retry-interval="100" {options}>'
        f"<mirror {attributes}/></amqp-connection>"
        for conn, uri, attributes in connections
    )
    return (
        '<beans><broker xmlns="http://activemq.apache.org/schema/core" '
        f'brokerName="{name}">{extra}<broker-connections>{items}</broker-connections>'
        "</broker></beans>"
    )


def amqp_uri(broker: Broker) -> str:
    return f"tcp://127.0.0.1:{amqp_port(broker)}"


def depth(broker: Broker, queue: str) -> int | None:
    """A queue's depth as the admin API reports it (None: no such queue)."""
    found = broker.service.region.queues.get(Destination.queue(queue))
    return None if found is None else found.depth


def mirror_backlog(broker: Broker, connection: str = "dr") -> int:
    return depth(broker, MIRROR_QUEUE + connection) or 0


async def wait_depth(broker: Broker, queue: str, count: int | None, what: str = "") -> None:
    await wait_until(
        lambda: depth(broker, queue) == count,
        timeout_s=WAIT_S,
        what=what or f"{queue} on {broker.config.broker_name} holds {count}",
        detail=lambda: f"it holds {depth(broker, queue)}",
    )


async def wait_drained(broker: Broker, connection: str = "dr") -> None:
    await wait_depth(broker, MIRROR_QUEUE + connection, 0, f"mirror {connection} drained")


def node_config(
    tmp: Path,
    name: str,
    connections: list[tuple[str, str, str]] | None = None,
    *,
    amqp_port: int = 0,
    extra: str = "",
    options: str = "",
) -> BrokerConfig:
    """A persistent broker in ``tmp/name`` with a STOMP listener and an AMQP one (on
    ``amqp_port``, so a restarted target comes back where its sources look for it), and a
    mirror per ``(connection name, uri, mirror attributes)``."""
    xml = mirror_xml(name, connections or [], extra=extra, options=options)
    base = broker_config(tmp / name, name=name, xml=xml)
    listen = ["stomp://127.0.0.1:0", f"amqp://127.0.0.1:{amqp_port}"]
    flags = config_from_flags(name, tmp / name, listen, "off", True)
    return replace(base, transport_connectors=flags.transport_connectors)


def target(tmp: Path, name: str = "b", **options: Any) -> AbstractAsyncContextManager[Broker]:
    """A broker with an AMQP listener (a mirror's target)."""
    return running_broker(node_config(tmp, name, **options))


def source(
    tmp: Path, connections: list[tuple[str, str, str]], name: str = "a", **options: Any
) -> AbstractAsyncContextManager[Broker]:
    return running_broker(node_config(tmp, name, connections, **options))


async def send(broker: Broker, destination: str, count: int, *, prefix: str = "m") -> list[str]:
    """Send ``count`` persistent messages (receipted); their message ids."""
    async with await connect(broker.stomp_urls[0]) as client:
        ids = []
        for i in range(count):
            await client.send(destination, f"{prefix}{i}", persistent=True)
            ids.append(f"{prefix}{i}")
        return ids


async def consume(broker: Broker, destination: str, count: int) -> list[str]:
    """Consume and acknowledge (with receipts) ``count`` messages; their bodies."""
    async with await connect(broker.stomp_urls[0]) as client:
        subscription = await client.subscribe(destination, ack="client-individual")
        bodies = []
        for _ in range(count):
            message = await subscription.get(timeout=WAIT_S)
            await message.ack(receipt=True)
            bodies.append(message.text)
        await subscription.unsubscribe()
        return bodies


def mirror_process(
    tmp: Path,
    name: str,
    connections: list[tuple[str, str, str]],
    *,
    amqp_port: int,
    options: str = "",
) -> BrokerProcess:
    """A ``ferrymq broker`` child (to SIGKILL and restart) with a STOMP and an AMQP listener
    and its mirrors."""
    return BrokerProcess(
        tmp / name,
        name=name,
        config_xml=mirror_xml(name, connections, options=options),
        extra_args=["--listen", f"amqp://127.0.0.1:{amqp_port}"],
    )


async def browse(url: str, queue: str) -> list[str]:
    """The bodies a queue browser sees now, in order (nothing is consumed)."""
    async with await connect(url) as client:
        subscription = await client.subscribe(f"/queue/{queue}", browser=True)
        return [message.text async for message in subscription]
