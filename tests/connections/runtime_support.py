"""Brokers with broker connections for tests, and a tiny element for the runtime's own tests.

``broker_with_connections`` starts an in-process FerryMQ broker (STOMP and AMQP listeners on
127.0.0.1 port 0, optionally the admin API) with the given ``<amqp-connection>``s, on the test's
event loop. ``TinyElement`` is the smallest ``ConnectionElement``: it attaches one sender link
(``tiny_elements`` builds it from a ``<sender>``, whose ``address-match`` is the target) and
keeps it until the connection ends, so the runtime's tests do not depend on the real elements.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from ferrymq.broker import Broker
from ferrymq.config.broker_connections import AmqpConnectionConfig, SenderConfig
from ferrymq.config.model import AdminConfig, BrokerConfig
from ferrymq.connections import service as connections_service
from ferrymq.connections.api import (
    ConnectionElement,
    LinkOptions,
    LocalSide,
    RemoteConnection,
    RemoteSender,
)
from ferrymq.testing import broker_config
from ferrymq.testing.brokers import amqp_port

TINY = "tests.connections.runtime_support:tiny_elements"


def connection(name: str, uri: str, *elements: object, **options: object) -> AmqpConnectionConfig:
    """An ``<amqp-connection>``; retry-interval 50 ms unless given."""
    settings: dict[str, object] = {"retry_interval_ms": 50, **options}
    return AmqpConnectionConfig(name=name, uri=uri, elements=tuple(elements), **settings)  # type: ignore[arg-type]


def with_connections(
    data_dir: Path,
    *connections: AmqpConnectionConfig,
    name: str = "local",
    persistent: bool = True,
    admin: bool = False,
) -> BrokerConfig:
    config = broker_config(data_dir, name=name, persistent=persistent, amqp=True)
    if admin:
        config = replace(config, admin=AdminConfig(enabled=True, host="127.0.0.1", port=0))
    return replace(config, broker_connections=tuple(connections))


@asynccontextmanager
async def running(config: BrokerConfig) -> AsyncIterator[Broker]:
    broker = Broker(config)
    await broker.start()
    try:
        yield broker
    finally:
        await broker.stop()


@asynccontextmanager
async def broker_with_connections(
    data_dir: Path, *connections: AmqpConnectionConfig, **options: object
) -> AsyncIterator[Broker]:
    """A started broker with these broker connections (see ``with_connections``)."""
    async with running(with_connections(data_dir, *connections, **options)) as broker:  # type: ignore[arg-type]
        yield broker


def amqp_url(broker: Broker) -> str:
    return f"tcp://127.0.0.1:{amqp_port(broker)}"


def use_tiny_senders(monkeypatch: pytest.MonkeyPatch) -> None:
    """Serve ``<sender>`` with ``TinyElement`` in this test."""
    monkeypatch.setitem(connections_service.ELEMENT_FACTORIES, SenderConfig, TINY)


class TinyElement:
    """Attaches a sender to ``address``; ``send`` puts messages on it while connected."""

    def __init__(self, name: str, address: str) -> None:
        self.name = name
        self.address = address
        self.runs = 0
        self.sender: RemoteSender | None = None
        self.remote: RemoteConnection | None = None

    async def run(self, remote: RemoteConnection) -> None:
        self.runs += 1
        self.remote = remote
        self.sender = await remote.attach_sender(
            LinkOptions(name=f"{self.name}-{self.runs}", target=self.address)
        )
        try:
            await remote.closed()
        finally:
            self.sender = None

    def statistics(self) -> dict[str, object]:
        return {"runs": self.runs, "address": self.address}


def tiny_elements(
    connection: AmqpConnectionConfig, local: LocalSide
) -> Sequence[ConnectionElement]:
    return [
        TinyElement(element.name or f"{connection.name}.tiny.{n}", element.address_match or "q")
        for n, element in enumerate(connection.elements)
        if isinstance(element, SenderConfig)
    ]
