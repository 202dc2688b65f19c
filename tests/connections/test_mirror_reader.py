"""A local queue read in process (``LocalSide.consume_raw``, ``service.local_consumer``): what a
mirror's forwarder takes its events with, instead of a ``vm://`` client.

A message leaves the queue only when acknowledged (cumulatively), at most ``window`` are taken
and not acknowledged at once, and a reader closed mid-window gives back what it did not
acknowledge, in order and uncounted, to the next reader."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ferrymq.broker import Broker
from ferrymq.connections.api import LocalMessage, LocalQueueReader
from ferrymq.core.destination import Destination
from ferrymq.service.local_consumer import in_process_readers
from ferrymq.testing import broker_config, running_broker
from tests.connections.mirror_support import WAIT_S, depth, send

QUEUE = "reader.q"


def reader_of(broker: Broker, window: int) -> LocalQueueReader:
    """Opened as the broker connections open it: through their ``LocalSide``."""
    return broker.broker_connections.local.consume_raw(QUEUE, window)


async def take(reader: LocalQueueReader, count: int) -> list[LocalMessage]:
    taken: list[LocalMessage] = []
    while len(taken) < count:
        taken.extend(await asyncio.wait_for(reader.take(), WAIT_S))
    assert len(taken) == count, "more than asked for: the window was not kept"
    return taken


def bodies(messages: list[LocalMessage]) -> list[bytes]:
    return [message.body for message in messages]


async def test_messages_leave_the_queue_only_once_acknowledged(tmp_path: Path) -> None:
    async with running_broker(broker_config(tmp_path)) as broker:
        await send(broker, f"/queue/{QUEUE}", 5)
        reader = reader_of(broker, window=3)
        try:
            first = await take(reader, 3)
            assert bodies(first) == [b"m0", b"m1", b"m2"]
            assert [m.properties.get("persistent") for m in first] == [None] * 3  # a field
            await asyncio.sleep(0.05)  # the window holds: nothing more comes
            assert depth(broker, QUEUE) == 5

            reader.ack(first[1].handle)  # cumulative: m0 and m1
            assert depth(broker, QUEUE) == 3
            rest = await take(reader, 2)
            assert bodies(rest) == [b"m3", b"m4"]
            reader.ack(rest[-1].handle)
            assert depth(broker, QUEUE) == 0
        finally:
            reader.close()


async def test_a_reader_closed_mid_window_gives_back_the_rest_in_order_uncounted(
    tmp_path: Path,
) -> None:
    async with running_broker(broker_config(tmp_path)) as broker:
        await send(broker, f"/queue/{QUEUE}", 4)
        reader = reader_of(broker, window=10)
        taken = await take(reader, 4)
        reader.ack(taken[0].handle)
        reader.close()
        with pytest.raises(ConnectionError):
            await reader.take()
        assert depth(broker, QUEUE) == 3

        again = reader_of(broker, window=10)
        try:
            back = await take(again, 3)
            assert bodies(back) == [b"m1", b"m2", b"m3"]
            assert [m.message_id for m in back] == [m.message_id for m in taken[1:]]
            assert [m.redeliveries for m in back] == [0, 0, 0]
        finally:
            again.close()
        assert depth(broker, QUEUE) == 3


async def test_the_reader_is_a_connection_of_the_broker_until_closed(tmp_path: Path) -> None:
    """The admin API lists it; the broker closing it ends the reader (a mirror then
    reconnects), and its messages go back to the queue."""
    async with running_broker(broker_config(tmp_path)) as broker:
        await send(broker, f"/queue/{QUEUE}", 2)
        reader = in_process_readers(broker.service)(QUEUE, 10, "broker-connection:test")
        await take(reader, 2)
        connection = broker.service.connections[reader.connection_id]
        assert connection.converter.protocol == "in-process"

        connection.close("closed by the operator")
        with pytest.raises(ConnectionError):
            await reader.take()
        with pytest.raises(ConnectionError):
            reader.ack("anything")
        reader.close()  # harmless after the broker closed it
        assert reader.connection_id not in broker.service.connections
        queue = broker.service.region.queues[Destination.queue(QUEUE)]
        assert (queue.depth, queue.in_flight) == (2, 0)
