"""A broker whose store fails (its lock was lost) closes its connections without an ERROR frame
(issue 13, item 1), deterministically: a consumer's next MESSAGE waits for the very write that
fails, so the connection sees the failure before the broker starts stopping its listeners."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ferrymq.broker import Broker
from ferrymq.client import BrokerErrorFrame, ConnectionClosed, connect
from ferrymq.store.base import LockLostError
from ferrymq.store.sqlite import SqliteStore
from ferrymq.testing import broker_config

WAIT_S = 10.0
SUBSCRIBE = (
    b"CONNECT\naccept-version:1.2\nhost:localhost\n\n\x00"
    b"SUBSCRIBE\nid:s\ndestination:/queue/q\nack:client-individual\nreceipt:subscribed\n\n\x00"
)


class Fence:
    """The store's fence, as a master/slave locker's: passes until the lock is taken."""

    def __init__(self) -> None:
        self.taken = False

    def __call__(self) -> None:
        if self.taken:
            raise LockLostError("the lock was taken (test)")


async def test_a_failed_write_closes_the_connection_waiting_for_it_without_an_error(
    tmp_path: Path,
) -> None:
    fence = Fence()
    store = SqliteStore(tmp_path / "store", fence=fence)
    broker = Broker(broker_config(tmp_path / "data"), store=store)
    await broker.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", broker.stomp_ports[0])
        writer.write(SUBSCRIBE)
        async with asyncio.timeout(WAIT_S):
            await reader.readuntil(b"receipt-id:subscribed")
            await reader.readuntil(b"\x00\n")
        fence.taken = True
        async with await connect(broker.stomp_urls[0]) as producer:
            with pytest.raises(ConnectionClosed) as closed:
                await producer.send("/queue/q", "lost with the lock", persistent=True)
        async with asyncio.timeout(WAIT_S):
            rest = await reader.read()  # until the broker closes the socket
        writer.close()
    finally:
        await broker.stop()
    assert not isinstance(closed.value, BrokerErrorFrame)
    assert closed.value.error is None  # no ERROR frame came before the close
    assert b"ERROR" not in rest
    assert b"MESSAGE" not in rest  # what waited for the failed write is not sent
