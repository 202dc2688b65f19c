"""The broker's inactivity monitor on real sockets: a client that promised heart-beats and fell
silent is dropped, one that keeps its promise is not."""

from __future__ import annotations

import asyncio
from pathlib import Path

from ferrymq.testing import broker_config, running_broker

PROMISE_MS = 100
"""The client's ``heart-beat: 100,0``: it sends something at least every 100 ms."""
GRACE = 1.5
"""The broker allows 1.5 promised intervals of silence (``hbGracePeriodMultiplier``'s floor)."""
CONNECT = b"CONNECT\naccept-version:1.2\nhost:x\nheart-beat:%d,0\n\n\x00" % PROMISE_MS


async def _connect(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(CONNECT)
    frame = await asyncio.wait_for(reader.readuntil(b"\x00\n"), 5)
    assert frame.startswith(b"CONNECTED\n")
    assert b"heart-beat:0," in frame  # the broker sends nothing back: it only listens
    return reader, writer


async def test_a_client_silent_past_its_promise_and_the_grace_is_dropped(tmp_path: Path) -> None:
    async with running_broker(broker_config(tmp_path / "data", persistent=False)) as broker:
        loop = asyncio.get_running_loop()
        started = loop.time()
        reader, writer = await _connect(broker.stomp_ports[0])
        assert await asyncio.wait_for(reader.read(), 5) == b""  # closed, without an ERROR
        assert loop.time() - started >= PROMISE_MS * GRACE / 1000
        writer.close()


async def test_a_client_that_keeps_its_promise_stays_connected(tmp_path: Path) -> None:
    async with running_broker(broker_config(tmp_path / "data", persistent=False)) as broker:
        reader, writer = await _connect(broker.stomp_ports[0])
        for _ in range(12):  # six promised intervals, at twice the promised rate
            await asyncio.sleep(PROMISE_MS / 2 / 1000)
            writer.write(b"\n")
        writer.write(b"DISCONNECT\nreceipt:bye\n\n\x00")
        frame = await asyncio.wait_for(reader.readuntil(b"\x00\n"), 5)
        assert frame.startswith(b"RECEIPT\nreceipt-id:bye\n")
        writer.close()
