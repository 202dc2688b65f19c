"""The delivery audit (issue 7 §2) on traces of real broker networks, in the shared local[2]
session: seed 001 Figure 3.2 (static propagation leaves messages stuck on D), and a network where
a consumer dies mid-stream (its unacknowledged messages are redelivered, not lost), with one
duplicate acknowledgement injected into the trace and one message dead-lettered."""

from __future__ import annotations

import json
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as sf

from ferrymq.cli.main import main
from ferrymq.client import connect
from ferrymq.spark.audit_job import run_audit
from ferrymq.testing import wait_until
from ferrymq.testing.network import BrokerNetwork

QUEUE = "/queue/TEST.FOO"
QUEUE_NAME = "TEST.FOO"
DESTINATION = "queue://TEST.FOO"
WAIT_S = 15.0
STATIC_FOO = """<staticallyIncludedDestinations>
  <queue physicalName="TEST.FOO"/>
</staticallyIncludedDestinations>"""


def connector(target: str, body: str = "") -> str:
    return (
        f'<networkConnector name="linkTo{target}" uri="static:({{{target}}})" networkTTL="3">'
        f"{body}</networkConnector>"
    )


async def settled(net: BrokerNetwork, expected: dict[str, int]) -> None:
    await wait_until(
        lambda: {name: net.queue_depth(name, QUEUE_NAME) for name in expected} == expected,
        WAIT_S,
        f"TEST.FOO depths {expected}",
    )


async def browse_ids(net: BrokerNetwork, broker: str) -> set[str]:
    conn = await connect(net.url(broker))
    try:
        sub = await conn.subscribe(QUEUE, browser=True)
        return {m.message_id async for m in sub if m.message_id is not None}
    finally:
        await conn.disconnect()


async def consume(net: BrokerNetwork, broker: str, count: int) -> set[str]:
    conn = await connect(net.url(broker))
    try:
        sub = await conn.subscribe(QUEUE, ack="client-individual")
        ids = set()
        for _ in range(count):
            message = await sub.get(timeout=WAIT_S)
            await message.ack(receipt=True)
            assert message.message_id is not None
            ids.add(message.message_id)
        return ids
    finally:
        await conn.disconnect()


def statuses(spark: SparkSession, out: Path) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for row in (
        spark.read.parquet(str(out / "journeys"))
        .where(sf.col("destination") == DESTINATION)
        .collect()
    ):
        found.setdefault(row["status"], set()).add(row["message_id"])
    return found


async def test_figure_3_2_audit_finds_the_messages_stuck_on_d(
    tmp_path: Path, spark: SparkSession, capsys: object
) -> None:
    """seed 001 Figure 3.2 and its NOTE: 10 messages sent to A propagate statically to 5 on D
    and 5 on E; a consumer on E takes its 5.  The audit (through ``ferrymq audit``) reports
    exactly D's 5 as stuck on D, E's 5 as consumed along A>B>C>E, and nothing lost."""
    trace = tmp_path / "trace"
    net = BrokerNetwork(tmp_path / "net")
    net.trace_dir = trace
    net.add("E")
    net.add("D")
    net.add("C", connector("D", STATIC_FOO) + connector("E", STATIC_FOO))
    net.add("B", connector("C", STATIC_FOO))
    net.add("A", connector("B", STATIC_FOO))
    async with net:
        await net.wait_for_bridges()
        await net.wait_for_demand("C", DESTINATION, 2)
        for name in ("A", "B"):
            await net.wait_for_demand(name, DESTINATION)
        await net.produce("A", QUEUE, 10)
        await settled(net, {"A": 0, "B": 0, "C": 0, "D": 5, "E": 5})
        on_d = await browse_ids(net, "D")
        on_e = await consume(net, "E", 5)
    assert len(on_d) == 5

    out = tmp_path / "audit"
    assert main(["audit", str(trace), "--out", str(out)]) == 0

    assert statuses(spark, out) == {"stuck": on_d, "consumed": on_e}
    stuck = spark.read.parquet(str(out / "stuck")).collect()
    assert {(r["message_id"], r["broker_name"]) for r in stuck} == {(i, "D") for i in on_d}
    assert spark.read.parquet(str(out / "lost")).count() == 0
    routes = {
        r["route"]: r["messages"] for r in spark.read.parquet(str(out / "latency_routes")).collect()
    }
    assert routes == {"A>B>C>E": 5}
    hops = {
        r["hop"]: r["messages"] for r in spark.read.parquet(str(out / "latency_hops")).collect()
    }
    assert hops == {"A>B": 10, "B>C": 10, "C>D": 5, "C>E": 5}
    summary = (out / "summary.md").read_text()
    assert "## Stuck: 5" in summary
    assert "## Lost: 0" in summary
    assert summary in capsys.readouterr().out  # type: ignore[attr-defined]


async def test_consumer_dies_redelivered_not_lost_and_injected_duplicate_found(
    tmp_path: Path, spark: SparkSession
) -> None:
    """A -> B (demand forwarding); 20 messages sent to A reach a consumer on B, which takes 3,
    acknowledges 2 and dies.  A second consumer gets the other 18 (all delivered to the dead
    one, so flagged redelivered), NACKs one (dead-lettered) and acknowledges 17; an injected
    second ack record makes one of them duplicated.  Nothing is lost; the redelivered ones
    acked once are consumed.  Besides: a queue nobody consumes is stuck on A, and messages
    waiting for a consumer that was there until the brokers stopped are queued, not stuck."""
    trace = tmp_path / "trace"
    net = BrokerNetwork(tmp_path / "net")
    net.trace_dir = trace
    net.add("B")
    net.add("A", connector("B"))
    async with net:
        await net.wait_for_bridges()
        first = await connect(net.url("B"))
        sub = await first.subscribe(QUEUE, ack="client-individual")
        await net.wait_for_demand("A", DESTINATION)
        await net.produce("A", QUEUE, 20)
        await settled(net, {"A": 0, "B": 20})
        taken = [await sub.get(timeout=WAIT_S) for _ in range(3)]
        for message in taken[:2]:
            await message.ack(receipt=True)
        await first.close()  # dies: no DISCONNECT, one delivered message never acknowledged

        second = await connect(net.url("B"))
        sub = await second.subscribe(QUEUE, ack="client-individual")
        rest = [await sub.get(timeout=WAIT_S) for _ in range(18)]
        await rest[0].nack(receipt=True)
        for message in rest[1:]:
            await message.ack(receipt=True)
        await second.disconnect()
        await settled(net, {"A": 0, "B": 0})

        lonely = await net.produce("A", "/queue/LONELY", 2)  # nobody anywhere consumes it
        holder = await connect(net.url("B"))  # still subscribed when the brokers stop
        held = await holder.subscribe("/queue/HELD", ack="client-individual", prefetch=1)
        await net.produce("B", "/queue/HELD", 3)
        await held.get(timeout=WAIT_S)
    await holder.close()
    redelivered = {m.message_id for m in rest if m.redelivered}
    assert taken[2].message_id in redelivered
    nacked = rest[0].message_id

    acks = [
        json.loads(line)
        for path in sorted(trace.iterdir())
        for line in path.read_text().splitlines()
        if '"kind":"acked"' in line and '"network"' not in line
    ]
    injected = dict(acks[-1], consumer_id="ID:injected:sub-9", seq=1)
    # ... and the cut-short line a broker killed mid-write leaves: skipped.
    (trace / "injected.jsonl").write_text(json.dumps(injected) + '\n{"ts_us":17953,"kind":"ack')

    report = run_audit(spark, [str(trace)])
    found: dict[str, set[str]] = {}
    elsewhere: dict[tuple[str, str], int] = {}
    for row in report.journeys.collect():
        if row["destination"] == DESTINATION:
            found.setdefault(row["status"], set()).add(row["message_id"])
        else:
            key = (row["destination"], row["status"])
            elsewhere[key] = elsewhere.get(key, 0) + 1
    stuck_on = {(r["destination"], r["broker_name"]) for r in report.stuck.collect()}
    report.unpersist()
    every = {m.message_id for m in taken + rest}
    assert found == {
        "duplicated": {injected["message_id"]},
        "dead_lettered": {nacked},
        "consumed": every - {injected["message_id"], nacked},
    }
    assert redelivered - {nacked, injected["message_id"]} <= found["consumed"]
    dead = report.dead_lettered.collect()
    assert [(r["message_id"], r["dlq"]) for r in dead] == [(nacked, "queue://ActiveMQ.DLQ")]
    assert elsewhere == {
        ("queue://LONELY", "stuck"): len(lonely),
        ("queue://HELD", "queued"): 3,  # its consumer was there until the broker stopped
        ("queue://ActiveMQ.DLQ", "dead_letter_copy"): 1,
    }
    assert stuck_on == {("queue://LONELY", "A")}
    assert report.counts.get("lost", 0) == 0


def test_lost_discarded_expired_and_topic_acks_from_a_written_trace(
    tmp_path: Path, spark: SparkSession
) -> None:
    """Cases no healthy network produces, written by hand: a message B never received although
    A forwarded it there (lost); a non-persistent one gone with its broker's stop (discarded);
    an expired one; a topic message acknowledged by two subscriptions (consumed) and one
    acknowledged twice by the same subscription (duplicated); and a hole in the trace."""
    base: dict[str, object] = {"broker_id": "A", "broker_name": "A"}
    a_queue = {**base, "destination": "queue://Q", "persistent": True, "broker_path": []}
    topic = {**base, "destination": "topic://T", "persistent": False, "broker_path": []}
    lines: list[dict[str, object]] = [
        {**base, "kind": "started"},
        {**a_queue, "kind": "sent", "message_id": "lost"},
        {**a_queue, "kind": "stored", "message_id": "lost"},
        {
            **a_queue,
            "kind": "forwarded",
            "message_id": "lost",
            "network": True,
            "remote_broker_id": "B",
            "consumer_id": "bridge:1",
        },
        {
            **a_queue,
            "kind": "acked",
            "message_id": "lost",
            "network": True,
            "remote_broker_id": "B",
            "consumer_id": "bridge:1",
        },
        {**a_queue, "kind": "sent", "message_id": "gone", "persistent": False},
        {**a_queue, "kind": "sent", "message_id": "old"},
        {**a_queue, "kind": "stored", "message_id": "old"},
        {**a_queue, "kind": "expired", "message_id": "old"},
        {**topic, "kind": "sent", "message_id": "news"},
        {**topic, "kind": "acked", "message_id": "news", "container": "s1", "consumer_id": "c:1"},
        {**topic, "kind": "acked", "message_id": "news", "container": "s2", "consumer_id": "c:2"},
        {**topic, "kind": "sent", "message_id": "twice"},
        {**topic, "kind": "acked", "message_id": "twice", "container": "s1", "consumer_id": "c:1"},
        {**topic, "kind": "acked", "message_id": "twice", "container": "s1", "consumer_id": "c:1"},
        {"kind": "gap", **base, "dropped": 3},
        {**base, "kind": "stopping"},
        {"broker_id": "B", "broker_name": "B", "kind": "started"},
        {"broker_id": "B", "broker_name": "B", "kind": "stopping"},
    ]
    trace = tmp_path / "trace"
    trace.mkdir()
    (trace / "a.jsonl").write_text(
        "".join(
            json.dumps({"ts_us": 1_000_000 + n, "seq": n, **line}) + "\n"
            for n, line in enumerate(lines)
        )
    )
    out = tmp_path / "audit"
    report = run_audit(spark, [str(trace)], str(out))
    found = {r["message_id"]: r["status"] for r in report.journeys.collect()}
    report.unpersist()
    assert found == {
        "lost": "lost",
        "gone": "discarded",
        "old": "expired",
        "news": "consumed",
        "twice": "duplicated",
    }
    assert [r["message_id"] for r in spark.read.parquet(str(out / "lost")).collect()] == ["lost"]
    summary = (out / "summary.md").read_text()
    assert "records dropped: A: 3" in summary
    assert "## Lost: 1" in summary
