"""The message trace (issue 7 §2) without Spark: the writer (rotation, retention, a full buffer,
a clean stop) and what a real broker records for each kind of event, configured by
``<messageTracePlugin>`` or ``--trace``."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ferrymq.cli.main import build_parser
from ferrymq.client import connect
from ferrymq.config import ConfigError, config_from_flags, parse_config
from ferrymq.config.model import MessageTraceConfig
from ferrymq.service.trace import FIELDS, KINDS, TraceWriter
from ferrymq.testing import broker_config, running_broker
from ferrymq.testing.network import BrokerNetwork

WAIT_S = 10.0


def records(directory: Path) -> list[dict[str, Any]]:
    """Every record in the directory's trace files, file by file in name order."""
    return [
        json.loads(line)
        for path in sorted(directory.rglob("*.jsonl"))
        for line in path.read_text().splitlines()
    ]


def numbered(count: int, start: int = 0) -> list[str]:
    """Lines of about 60 bytes, numbered by ``seq``."""
    return [
        json.dumps({"seq": n, "kind": "sent", "message_id": f"ID:x-{n:06d}"}) + "\n"
        for n in range(start, count)
    ]


# -- the writer ---------------------------------------------------------------------------------


def test_writer_rotates_files_by_size(tmp_path: Path) -> None:
    writer = TraceWriter(tmp_path, "t", max_file_size=4096)
    writer.open()
    for start in range(0, 300, 7):
        writer.append(numbered(min(start + 7, 300), start))
    writer.close()
    files = sorted(tmp_path.glob("*.jsonl"))
    assert files == writer.files
    assert len(files) > 2
    assert all(0 < f.stat().st_size <= 4096 for f in files)
    assert [r["seq"] for r in records(tmp_path)] == list(range(300))
    assert writer.written == 300
    assert writer.dropped == 0


def test_writer_keeps_at_most_max_files(tmp_path: Path) -> None:
    writer = TraceWriter(tmp_path, "t", max_file_size=4096, max_files=2)
    writer.open()
    writer.append(numbered(400))
    writer.close()
    files = sorted(tmp_path.glob("*.jsonl"))
    assert len(files) == 2
    assert files == writer.files
    segments = [int(f.name.split(".")[1]) for f in files]
    assert segments[0] > 2
    assert segments[1] == segments[0] + 1
    kept = [r["seq"] for r in records(tmp_path)]
    assert kept == list(range(400 - len(kept), 400))


def test_a_full_buffer_drops_records_and_the_trace_says_so(tmp_path: Path) -> None:
    """Records that do not fit are dropped rather than waited for; a gap record counts them."""
    writer = TraceWriter(
        tmp_path,
        "t",
        max_file_size=1 << 20,
        max_queued_records=10,
        identity={"broker_id": "b1", "broker_name": "one"},
    )
    writer.append(numbered(25))  # the thread has not started: nothing drains the buffer
    writer.open()
    writer.close()
    found = records(tmp_path)
    assert [r["seq"] for r in found[:10]] == list(range(10))
    assert found[10:] == [
        {
            "ts_us": found[10]["ts_us"],
            "kind": "gap",
            "broker_id": "b1",
            "broker_name": "one",
            "dropped": 15,
        }
    ]
    assert writer.dropped == 15


def test_close_writes_everything_queued(tmp_path: Path) -> None:
    writer = TraceWriter(tmp_path, "t", max_file_size=64 << 20)
    writer.open()
    for start in range(0, 20000, 500):
        writer.append(numbered(start + 500, start))
    writer.close()
    assert [r["seq"] for r in records(tmp_path)] == list(range(20000))
    writer.append(numbered(1))  # after close: dropped, never written
    assert writer.written == 20000
    assert writer.dropped == 1


# -- configuration ------------------------------------------------------------------------------


def test_message_trace_plugin_in_activemq_xml(tmp_path: Path) -> None:
    config = parse_config(
        f"""<broker xmlns="http://activemq.apache.org/schema/core" brokerName="b">
          <plugins><messageTracePlugin directory="{tmp_path}" maxFileSize="1 mb" maxFiles="3"/>
          </plugins></broker>"""
    )
    assert config.message_trace == MessageTraceConfig(tmp_path, 1 << 20, 3)
    assert parse_config("<broker/>").message_trace is None


@pytest.mark.parametrize(
    ("attributes", "named"),
    [
        ('directory="t" maxFileSize="a lot"', "maxFileSize"),
        ('directory="t" size="1"', "size"),
        ('maxFiles="2"', "directory"),
    ],
)
def test_a_wrong_message_trace_plugin_is_an_error_naming_it(attributes: str, named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        parse_config(f"<broker><plugins><messageTracePlugin {attributes}/></plugins></broker>")


def test_trace_flag(tmp_path: Path) -> None:
    args = build_parser().parse_args(["broker", "--trace", str(tmp_path)])
    assert args.trace == tmp_path
    config = config_from_flags("b", tmp_path / "data", trace=args.trace)
    assert config.message_trace == MessageTraceConfig(tmp_path)
    assert config_from_flags("b", tmp_path / "data").message_trace is None


# -- what a broker records ---------------------------------------------------------------------


async def test_tracing_is_off_by_default(tmp_path: Path) -> None:
    async with running_broker(broker_config(tmp_path / "data")) as broker:
        assert broker.service.trace is None
        conn = await connect(broker.stomp_urls[0])
        await conn.send("/queue/Q", "x", persistent=True)
        assert broker.service.region.effects.trace == []
        await conn.disconnect()
        assert broker.service.region.tracing is False
    assert records(tmp_path / "data") == []


async def test_each_kind_of_event_is_recorded(tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    config = replace(broker_config(tmp_path / "data"), message_trace=MessageTraceConfig(trace))
    async with running_broker(config) as broker:
        url = broker.stomp_urls[0]
        first = await connect(url)
        producer_id = await first.send("/queue/Q", "acked", persistent=True)
        sub = await first.subscribe("/queue/Q", ack="client-individual", id="s1")
        acked = await sub.get(timeout=WAIT_S)
        await acked.ack(receipt=True)
        await first.send("/queue/Q", "dies", persistent=True)
        orphan = await sub.get(timeout=WAIT_S)
        await first.close()  # the consumer dies holding it

        second = await connect(url)
        sub = await second.subscribe("/queue/Q", ack="client-individual", id="s2")
        again = await sub.get(timeout=WAIT_S)
        assert again.redelivered
        await again.nack(receipt=True)  # to ActiveMQ.DLQ
        await second.subscribe("/queue/E", id="s3")
        await second.send("/queue/E", "late", persistent=True, expires=int(time.time() * 1000) - 1)
        await second.disconnect()
        lingering = await connect(url)
        await lingering.subscribe("/queue/L", id="s4")
    await lingering.close()  # the broker closed it first, stopping
    found = records(trace)

    assert found[0]["kind"] == "started"
    assert set(KINDS) - {r["kind"] for r in found} == {"forwarded", "gap"}
    assert all(set(r) <= set(FIELDS) for r in found)
    assert {r["broker_id"] for r in found} == {broker.service.broker_id}
    assert [r["seq"] for r in found] == list(range(1, len(found) + 1))
    assert [r["ts_us"] for r in found] == sorted(r["ts_us"] for r in found)

    def of(message_id: str | None) -> list[str]:
        return [r["kind"] for r in found if r.get("message_id") == message_id]

    assert of(acked.message_id) == ["sent", "stored", "delivered", "acked"]
    assert of(orphan.message_id) == [
        "sent",
        "stored",
        "delivered",
        "redelivered",
        "dead_lettered",
        "stored",
    ]
    late = [r for r in found if r.get("destination") == "queue://E" and "message_id" in r]
    assert [r["kind"] for r in late] == ["sent", "stored", "expired", "dead_lettered"]

    sent = next(r for r in found if r["kind"] == "sent")
    assert sent["producer_message_id"] == producer_id
    assert sent["destination"] == "queue://Q"
    assert sent["connection_id"].startswith("ID:")
    assert sent["persistent"] is True
    assert sent["broker_path"] == []
    delivered = next(r for r in found if r["kind"] == "delivered")
    assert delivered["consumer_id"] == f"{delivered['connection_id']}:s1"
    assert "container" not in delivered  # the queue's own: left out
    dead = [r for r in found if r["kind"] == "dead_lettered"]
    assert [(r["cause"], r["dead_letter_queue"]) for r in dead] == [
        ("Poison ack (STOMP NACK)", "queue://ActiveMQ.DLQ"),
        ("Message expired", "queue://ActiveMQ.DLQ"),
    ]
    # Written on a clean stop: the stop, then the consumer the stop closed.
    assert [(r["kind"], r.get("consumer_id", "").split(":")[-1]) for r in found[-2:]] == [
        ("stopping", ""),
        ("unsubscribed", "s4"),
    ]


async def test_a_forward_names_the_next_broker(tmp_path: Path) -> None:
    """The forwarding broker records the hop (forwarded, then the bridge's ack); the next one
    records the bridge's send with the path it came by."""
    net = BrokerNetwork(tmp_path)
    net.trace_dir = tmp_path / "trace"
    net.add("B")
    net.add("A", '<networkConnector name="toB" uri="static:({B})"/>')
    async with net:
        await net.wait_for_bridges()
        consumer = await connect(net.url("B"))
        sub = await consumer.subscribe("/queue/Q")
        await net.wait_for_demand("A", "queue://Q")
        await net.produce("A", "/queue/Q", 1)
        message = await sub.get(timeout=WAIT_S)
        await consumer.disconnect()
    found = [r for r in records(net.trace_dir) if r.get("message_id") == message.message_id]
    on_a = [
        (r["kind"], r.get("network", False), r.get("remote_broker_id"))
        for r in found
        if r["broker_id"] == "A"
    ]
    on_b = [
        (r["kind"], r.get("network", False), r.get("remote_broker_id"))
        for r in found
        if r["broker_id"] == "B"
    ]
    assert on_a == [
        ("sent", False, None),
        ("stored", False, None),
        ("forwarded", True, "B"),
        ("acked", True, "B"),
    ]
    assert on_b == [
        ("sent", True, "A"),
        ("stored", False, None),
        ("delivered", False, None),
        ("acked", False, None),
    ]
    assert {tuple(r["broker_path"]) for r in found if r["broker_id"] == "B"} == {("A",)}
