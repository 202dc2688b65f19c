"""ERROR frames, connections the broker closes, and heart-beats."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ferrymq.broker import Broker
from ferrymq.client import BrokerErrorFrame, ConnectionClosed, connect
from ferrymq.testing import broker_config, running_broker, wait_until


async def test_an_error_frame_carries_the_brokers_message(url: str) -> None:
    conn = await connect(url)
    with pytest.raises(BrokerErrorFrame) as caught:
        await conn.subscribe("/queue/s", selector="color ==== 'red'")
    error = caught.value
    assert "selector" in error.message.lower()
    assert error.headers["message"] == error.message
    assert error.receipt_id is not None
    await conn.close()


async def test_an_unsolicited_error_closes_and_reaches_consumers(url: str) -> None:
    conn = await connect(url)
    sub = await conn.subscribe("/queue/listening")
    # No receipt: the broker's ERROR names no call, so it ends the connection.
    await conn.send("/not-a-prefix/x", "refused")
    with pytest.raises(BrokerErrorFrame, match="Illegal destination"):
        await sub.get(timeout=5)
    reason = await conn.wait_closed()
    assert reason.error is not None
    assert "Illegal destination" in reason.error.message
    assert conn.closed
    with pytest.raises(ConnectionClosed) as caught:
        await conn.send("/queue/listening", "too late")
    assert caught.value.error is reason.error
    await conn.close()


async def test_queued_messages_are_delivered_before_the_close(url: str) -> None:
    conn = await connect(url)
    sub = await conn.subscribe("/queue/drain")
    await conn.send("/queue/drain", "before", receipt=True)
    await conn.send("/bad/x", "refused")
    await conn.wait_closed()
    assert (await sub.get()).text == "before"  # auto-acked by the broker: not lost here
    with pytest.raises(BrokerErrorFrame):
        await sub.get()
    await conn.close()


async def test_a_broker_shutdown_surfaces_in_consumers(memory_broker: Broker, url: str) -> None:
    conn = await connect(url)
    sub = await conn.subscribe("/queue/shutdown")
    waiting = asyncio.create_task(sub.get())
    await asyncio.sleep(0)
    await memory_broker.stop()
    with pytest.raises(ConnectionClosed, match="closed the connection"):
        await waiting
    with pytest.raises(ConnectionClosed):
        await sub.get()
    with pytest.raises(ConnectionClosed):
        async for _ in sub:
            pass
    await conn.close()


async def test_heart_beats_keep_an_idle_connection_alive(url: str) -> None:
    async with connect(url, heart_beat=(100, 100)) as conn:
        transport = conn.statistics().transport
        assert transport.send_interval_ms == 100
        assert transport.receive_timeout_ms == 100

        def beats_both_ways() -> bool:
            stats = conn.statistics().transport
            return stats.heart_beats_sent >= 5 and stats.heart_beats_received >= 5

        await wait_until(beats_both_ways, 5.0, "5 heart-beats each way")
        assert not conn.closed
        sub = await conn.subscribe("/queue/alive")
        await conn.send("/queue/alive", "still here")
        assert (await sub.get(timeout=5)).text == "still here"


@pytest.fixture
async def mute_broker() -> AsyncIterator[int]:
    """Answers CONNECTED with heart-beats promised every 50 ms, then never sends anything."""
    writers: list[asyncio.StreamWriter] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        await reader.readuntil(b"\x00\n")
        writer.write(b"CONNECTED\nversion:1.2\nheart-beat:50,50\n\n\x00")
        await writer.drain()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1]
    for writer in writers:
        writer.close()
    server.close()
    await server.wait_closed()


async def test_silence_beyond_the_heart_beat_interval_closes_the_connection(
    mute_broker: int,
) -> None:
    conn = await connect(f"tcp://127.0.0.1:{mute_broker}", heart_beat=(50, 50))
    sub = await conn.subscribe("/queue/x", receipt=False)
    async with asyncio.timeout(5):
        reason = await conn.wait_closed()
    assert "heart-beat" in reason.message
    with pytest.raises(ConnectionClosed, match="heart-beat"):
        await sub.get()
    await conn.close()


async def test_a_time_header_too_large_for_the_store_is_refused_and_the_broker_serves_on(
    tmp_path: Path,
) -> None:
    """A persistent SEND whose ``expires`` does not fit a signed 64-bit integer used to fail
    the store's commit, and so the broker (and, replayed by a failover client, the next one):
    it is an ERROR to that SEND now, and the store keeps working."""
    async with running_broker(broker_config(tmp_path / "data")) as broker:
        url = broker.stomp_urls[0]
        async with await connect(url) as conn:
            with pytest.raises(BrokerErrorFrame, match="expires must fit"):
                await conn.send("/queue/big", "x", persistent=True, expires=2**64)
        async with await connect(url) as conn:
            await conn.send("/queue/big", "kept", persistent=True)
            subscription = await conn.subscribe("/queue/big")
            assert (await subscription.get(timeout=5)).text == "kept"
