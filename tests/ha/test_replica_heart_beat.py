"""The replication link's heart-beats against a scripted master: keep-alives go out, a silent
master is noticed, and a slow store write is not mistaken for a silent master."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest

from ferrymq.ha import replica
from ferrymq.ha.replica import MasterConnector
from ferrymq.store.base import AddMessage, StoreOp
from ferrymq.store.oplog import encode_ops
from ferrymq.store.sqlite import SqliteStore

HEART_BEAT_MS = 200
"""Short enough to watch: a keep-alive after 100 ms without a write, the master gone after
300 ms of silence (1.5 intervals)."""
SILENCE_ALLOWED_S = HEART_BEAT_MS * 1.5 / 1000
CONNECTED = b"CONNECTED\nversion:1.2\nheart-beat:200,200\n\n\x00"


@pytest.fixture(autouse=True)
def short_heart_beats(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replica, "HEART_BEAT_MS", HEART_BEAT_MS)


class SlowStore(SqliteStore):
    """A slave store whose every write takes twice the silence the link allows."""

    def write(self, ops: Sequence[StoreOp]) -> asyncio.Future[None]:
        return asyncio.ensure_future(self._slowly(super().write(ops)))

    async def _slowly(self, written: asyncio.Future[None]) -> None:
        await asyncio.sleep(2 * SILENCE_ALLOWED_S)
        await written


async def test_a_silent_master_is_left_after_one_and_a_half_intervals(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    received = bytearray()

    async def silent_master(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received.extend(await reader.readuntil(b"\x00\n"))  # CONNECT
        writer.write(CONNECTED)
        while data := await reader.read(1024):  # answers nothing, until the slave hangs up
            received.extend(data)
        writer.close()

    server = await asyncio.start_server(silent_master, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    store = SqliteStore(tmp_path / "slave")
    connector = MasterConnector(f"tcp://127.0.0.1:{port}", store, name="slave")
    loop = asyncio.get_running_loop()
    async with server:
        started = loop.time()
        await asyncio.wait_for(connector.run(), 10)  # returns: the master is gone
        elapsed = loop.time() - started
    await store.stop()
    assert elapsed >= SILENCE_ALLOWED_S
    connect, _, after = bytes(received).partition(b"\x00")
    assert b"heart-beat:200,200" in connect
    assert after  # keep-alives,
    assert set(after) == {ord("\n")}  # and nothing else
    assert any("went silent" in record.getMessage() for record in caplog.records)


async def test_a_slow_store_write_is_not_a_silent_master(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    batch = encode_ops([AddMessage("queue://q", 7, b"replicated")])
    acked = asyncio.Event()

    async def beating_master(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\x00\n")  # CONNECT
        writer.write(CONNECTED)
        writer.write(
            b"MESSAGE\ndestination:/queue/ferrymq.replication\nmessage-id:1\n"
            b"subscription:ferrymq.replication\nack:1\nferrymq.batch:1\n"
            b"ferrymq.replication-reset:true\ncontent-length:%d\n\n%b\x00" % (len(batch), batch)
        )

        async def beat() -> None:
            while True:
                await asyncio.sleep(HEART_BEAT_MS / 2 / 1000)
                writer.write(b"\n")

        beating = asyncio.create_task(beat())
        try:
            ack = await reader.readuntil(b"\x00\n")
            # the ACK of batch 1, after a store write that outlasted the allowed silence
            assert ack.lstrip(b"\n").startswith(b"ACK\n")
            acked.set()
        finally:
            beating.cancel()
            await asyncio.wait([beating])
        writer.close()

    server = await asyncio.start_server(beating_master, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    store = SlowStore(tmp_path / "slave")
    connector = MasterConnector(f"tcp://127.0.0.1:{port}", store, name="slave")
    async with server:
        await asyncio.wait_for(connector.run(), 10)  # returns when the master hangs up
    await store.stop()
    assert acked.is_set()
    assert connector.statistics.batches == 1
    messages = [record.getMessage() for record in caplog.records]
    assert not any("went silent" in message for message in messages)
    assert any("closed the connection" in message for message in messages)
