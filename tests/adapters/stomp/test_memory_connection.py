"""A STOMP connection driven through the service with no socket (``testing.streams``).

The service's whole path, from bytes to core to store to the outbox and back, with a store
whose writes the test completes: a RECEIPT for a persistent SEND and the MESSAGE it leads to
leave only once the write is durable, and a failed write closes the connection without an ERROR.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from ferrymq.adapters.stomp import StompAdapter
from ferrymq.service.broker import BrokerService
from ferrymq.store.base import StoreError, StoreOp
from ferrymq.store.memory import MemoryStore
from ferrymq.testing import broker_config
from ferrymq.testing.streams import MemoryStream
from ferrymq.transport.connection import TransportConnection


class HeldStore(MemoryStore):
    """A memory store whose writes complete when the test says so."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[tuple[asyncio.Future[None], asyncio.Future[None]]] = []

    def write(self, ops: Sequence[StoreOp]) -> asyncio.Future[None]:
        applied = super().write(ops)
        gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.held.append((applied, gate))
        return gate

    def complete(self) -> None:
        for applied, gate in self.held:
            gate.set_result(applied.result())
        self.held.clear()

    def fail(self) -> None:
        for _, gate in self.held:
            gate.set_exception(StoreError("the lock was lost"))
        self.held.clear()


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[tuple[BrokerService, HeldStore]]:
    config = dataclasses.replace(broker_config(tmp_path), transport_connectors=())
    store = HeldStore()
    service = BrokerService(config, adapters=(StompAdapter,), store=store)
    await service.start()
    yield service, store
    store.complete()
    await service.stop()


def connect(service: BrokerService) -> MemoryStream:
    stream = MemoryStream()
    connection = service.connectors.adapter("vm").accept(None)
    stream.attach(TransportConnection(connection))
    stream.send(b"CONNECT\naccept-version:1.2\nhost:x\n\n\0")
    assert stream.take().startswith(b"CONNECTED\n")
    return stream


async def turn() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_receipt_and_message_wait_for_the_store(
    service: tuple[BrokerService, HeldStore],
) -> None:
    broker, store = service
    stream = connect(broker)
    stream.send(b"SUBSCRIBE\ndestination:/queue/q\nid:s\nack:client\n\n\0")
    stream.send(b"SEND\ndestination:/queue/q\npersistent:true\nreceipt:r1\n\nhello\0")
    await turn()
    assert stream.take() == b""
    assert store.held
    store.complete()
    await turn()
    frames = stream.take().split(b"\0\n")
    assert frames[0].startswith(b"RECEIPT\nreceipt-id:r1\n")
    assert frames[1].startswith(b"MESSAGE\n")
    assert frames[1].endswith(b"hello")


async def test_a_failed_write_closes_the_connection_without_an_error(
    service: tuple[BrokerService, HeldStore],
) -> None:
    broker, store = service
    stream = connect(broker)
    stream.send(b"SEND\ndestination:/queue/q\npersistent:true\nreceipt:r1\n\nhello\0")
    await turn()
    store.fail()
    await turn()
    assert stream.take() == b""
    assert stream.closed
