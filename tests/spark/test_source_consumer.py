"""The source's driver side without Spark (``SourceConsumer``), against a real in-process
broker: offsets, the per-trigger cap, the spool, a restart that replays the same rows, the
redelivery of committed and of pending messages, the prefetch bound, and availableNow."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from ferrymq.client.blocking import connect
from ferrymq.spark.consumer import SourceConsumer, SourceOptions
from ferrymq.spark.options import ConnectionOptions
from ferrymq.spark.spool import Spool, storage_for
from ferrymq.testing import BrokerProcess, BrokerThread, broker_config
from ferrymq.testing.scripted import CloseOn, Forward, ScriptedStompServer
from tests.spark.queues import queue_depth, send_numbered

QUEUE = "/queue/SPARK.SOURCE"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    with BrokerThread(broker_config(tmp_path / "data")) as started:
        yield started


def url(broker: BrokerThread) -> str:
    return f"tcp://127.0.0.1:{broker.port}"


def produce(broker: BrokerThread, count: int, *, first: int = 0, pause_s: float = 0.0) -> None:
    send_numbered(url(broker), QUEUE, count, first=first, pause_s=pause_s)


def depth(broker: BrokerThread) -> int:
    return queue_depth(broker, "SPARK.SOURCE")


def consumer(
    broker: BrokerThread, spool: Path | None, *, prefetch: int = 1000, poll_timeout_ms: int = 2000
) -> SourceConsumer:
    return SourceConsumer(
        SourceOptions(
            ConnectionOptions(url(broker), QUEUE),
            spool_location=str(spool) if spool is not None else None,
            prefetch=prefetch,
            poll_timeout_ms=poll_timeout_ms,
        )
    )


def failover_source(broker_url: str, spool: Path) -> SourceConsumer:
    """A spooling source on ``failover:(broker_url)`` that reconnects within 200 ms."""
    return SourceConsumer(
        SourceOptions(
            ConnectionOptions(
                f"failover:({broker_url})?initialReconnectDelay=20&maxReconnectDelay=200", QUEUE
            ),
            spool_location=str(spool),
            poll_timeout_ms=2000,
        )
    )


def bodies(batches: list[pa.RecordBatch]) -> list[str]:
    return [body.decode() for batch in batches for body in batch.column("body").to_pylist()]


def offsets(batches: list[pa.RecordBatch]) -> list[int]:
    return [offset for batch in batches for offset in batch.column("offset").to_pylist()]


def latest_until(source: SourceConsumer, start: int, cap: int | None, want: int) -> int:
    """``latest`` until it has ``want`` offsets after ``start`` (the broker pushes
    asynchronously, so one call may see only part of what was sent)."""
    end = start
    for _ in range(50):
        end = source.latest(start, cap)
        if end - start >= want:
            return end
    raise AssertionError(f"only {end - start} of {want} messages arrived")


def test_offsets_follow_the_cap_and_acknowledgement_follows_the_commit(
    broker: BrokerThread, tmp_path: Path
) -> None:
    produce(broker, 30)
    source = consumer(broker, tmp_path / "spool")
    try:
        assert latest_until(source, 0, 10, 10) == 10
        assert bodies(source.rows(0, 10)) == [f"m{n}" for n in range(10)]
        assert offsets(source.rows(3, 5)) == [4, 5]
        assert depth(broker) == 30  # nothing acknowledged before Spark commits
        assert latest_until(source, 10, 10, 10) == 20  # acknowledges 1..10 first
        assert depth(broker) == 20
        assert bodies(source.rows(10, 20)) == [f"m{n}" for n in range(10, 20)]
        source.acknowledge_through(20)
        assert depth(broker) == 10
        assert source.statistics().pending == 0
        spooled = Spool(storage_for(str(tmp_path / "spool"))).load()
        assert spooled.committed == 20
        assert spooled.segments == []
    finally:
        source.close()


def test_a_restart_replays_the_spooled_rows_and_loses_or_repeats_nothing(
    broker: BrokerThread, tmp_path: Path
) -> None:
    produce(broker, 30)
    first = consumer(broker, tmp_path / "spool")
    try:
        latest_until(first, 0, 10, 10)
        assert latest_until(first, 10, 10, 10) == 20  # Spark planned 11..20, then the crash
        planned = first.rows(10, 20)
    finally:
        first.close()  # the broker takes back every unacknowledged message
    assert depth(broker) == 20

    second = consumer(broker, tmp_path / "spool")
    try:
        replayed = second.rows(10, 20)  # before connecting: from the spool alone
        assert pa.Table.from_batches(replayed).equals(pa.Table.from_batches(planned))
        end = latest_until(second, 20, None, 10)  # 11..20 acknowledged as they come back
        assert end == 30
        assert bodies(second.rows(20, 30)) == [f"m{n}" for n in range(20, 30)]
        second.acknowledge_through(30)
        assert depth(broker) == 0
    finally:
        second.close()


def test_redeliveries_of_committed_messages_are_acknowledged_and_dropped(
    broker: BrokerThread, tmp_path: Path
) -> None:
    produce(broker, 20)
    first = consumer(broker, tmp_path / "spool", prefetch=10)
    try:
        latest_until(first, 0, 10, 10)
        # Spark committed 1..10, and the driver died before its acknowledgements went out.
        Spool(storage_for(str(tmp_path / "spool"))).commit(10)
    finally:
        first.close()
    second = consumer(broker, tmp_path / "spool", prefetch=10)
    try:
        assert second.committed_offset == 10
        assert second.statistics().awaiting == 10
        # The broker redelivers 1..10 first (a full prefetch window of duplicates): one call
        # still waits for new messages, or availableNow would end the query here.
        assert second.latest(10, None) > 10
        assert latest_until(second, 10, None, 10) == 20
        assert bodies(second.rows(10, 20)) == [f"m{n}" for n in range(10, 20)]
        second.acknowledge_through(20)
        assert second.statistics().awaiting == 0
        assert depth(broker) == 0
    finally:
        second.close()


def test_without_a_spool_a_restart_gets_the_messages_again_by_redelivery(
    broker: BrokerThread,
) -> None:
    produce(broker, 10)
    first = consumer(broker, None)
    try:
        latest_until(first, 0, None, 10)
    finally:
        first.close()
    second = consumer(broker, None)
    try:
        assert second.rows(0, 10) == []
        assert latest_until(second, 10, None, 10) == 20
        batches = second.rows(10, 20)
        assert sorted(bodies(batches)) == sorted(f"m{n}" for n in range(10))
        assert set(batches[0].column("redelivered").to_pylist()) == {True}
        second.acknowledge_through(20)
        assert depth(broker) == 0
    finally:
        second.close()


def test_the_prefetch_bounds_what_the_driver_holds(broker: BrokerThread) -> None:
    produce(broker, 20)
    source = consumer(broker, None, prefetch=5)
    try:
        assert latest_until(source, 0, None, 5) == 5
        assert (source.statistics().pending, source.statistics().buffered) == (5, 0)
        assert latest_until(source, 5, None, 5) == 10  # 1..5 acknowledged: 5 more come
        assert (source.statistics().pending, source.statistics().buffered) == (5, 0)
        assert depth(broker) == 15
    finally:
        source.close()


def test_available_now_reads_only_what_was_sent_before_it_started(broker: BrokerThread) -> None:
    produce(broker, 5, pause_s=0.002)
    time.sleep(0.01)
    source = consumer(broker, None, poll_timeout_ms=500)
    source.prepare_available_now(int(time.time() * 1000))
    time.sleep(0.01)
    produce(broker, 5, first=5)
    try:
        assert latest_until(source, 0, None, 5) == 5
        assert bodies(source.rows(0, 5)) == [f"m{n}" for n in range(5)]
        assert source.latest(5, None) == 5  # the later ones stay buffered: the query ends
        assert source.statistics().buffered == 5
    finally:
        source.close()
    assert depth(broker) == 5


def browse(url: str) -> list[str]:
    conn = connect(url)
    try:
        return [m.body.decode() for m in conn.subscribe(QUEUE, browser=True)]
    finally:
        conn.disconnect()


@pytest.mark.slow
def test_a_failover_loses_and_repeats_nothing(tmp_path: Path) -> None:
    """The broker restarts under a failover: URL while 1..10 are committed and 11..20 are
    pending: the acknowledgements the client had to drop are made good on redelivery, and
    the pending messages keep their offsets."""
    process = BrokerProcess(tmp_path / "data").start()
    try:
        send_numbered(process.url, QUEUE, 30)
        source = failover_source(process.url, tmp_path / "spool")
        try:
            latest_until(source, 0, 10, 10)
            latest_until(source, 10, 10, 10)  # 1..10 acknowledged, 11..20 pending
            process.restart()
            source.acknowledge_through(20)  # their handles went with the old connection
            end = latest_until(source, 20, None, 10)
            assert bodies(source.rows(20, end)) == [f"m{n}" for n in range(20, end)]
            assert end == 30
            source.latest(end, None)  # redeliveries of 11..20: acknowledged and dropped
            assert source.statistics().awaiting == 0
            for _ in range(50):
                if not browse(process.url):
                    break
                time.sleep(0.1)
            assert browse(process.url) == []
        finally:
            source.close()
    finally:
        process.stop()


def test_a_restore_cut_by_a_dropped_connection_loses_and_repeats_nothing(
    broker: BrokerThread, tmp_path: Path
) -> None:
    """The driver's failover connection dies; the next one answers CONNECTED and drops as the
    subscription is restored (``ScriptedStompServer``); the one after serves. Every message
    is read once, at the offset it first had, and all are acknowledged (issue 13, item 2)."""
    produce(broker, 20)
    with ScriptedStompServer(broker.port, [Forward(), CloseOn("SUBSCRIBE")]) as server:
        source = failover_source(server.url, tmp_path / "spool")
        try:
            latest_until(source, 0, 10, 10)
            source.acknowledge_through(10)  # 1..10 committed and acknowledged
            server.drop()
            server.wait_closed_on(1)
            end = latest_until(source, 10, None, 10)
            assert end == 20
            assert bodies(source.rows(10, end)) == [f"m{n}" for n in range(10, 20)]
            source.acknowledge_through(end)
            source.latest(end, None)  # redeliveries of 1..10 whose ACKs the drop took
            assert source.statistics().awaiting == 0
            for _ in range(50):
                if depth(broker) == 0:
                    break
                time.sleep(0.1)
            assert depth(broker) == 0
            assert server.accepted == 3
        finally:
            source.close()


def test_a_selector_takes_only_matching_messages(broker: BrokerThread, tmp_path: Path) -> None:
    """The ``selector`` option is the subscription's JMS selector: the others stay queued."""
    with connect(url(broker)) as conn:
        for n in range(10):
            region = "EU" if n % 2 else "US"
            last = n == 9
            conn.send(QUEUE, f"m{n}", persistent=True, headers={"region": region}, receipt=last)
    source = SourceConsumer(
        SourceOptions(
            ConnectionOptions(url(broker), QUEUE),
            selector="region = 'EU'",
            spool_location=str(tmp_path / "spool"),
            poll_timeout_ms=500,
        )
    )
    try:
        end = latest_until(source, 0, None, 5)
        assert bodies(source.rows(0, end)) == ["m1", "m3", "m5", "m7", "m9"]
        assert source.latest(end, None) == end  # nothing else matches
    finally:
        source.close()
    assert depth(broker) == 5  # the US ones, never taken
