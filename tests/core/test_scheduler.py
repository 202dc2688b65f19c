"""Scheduled delivery in the core: AMQ_SCHEDULED_DELAY, PERIOD, REPEAT and CRON."""

from __future__ import annotations

import itertools

import pytest

from ferrymq.core.errors import BrokerError
from ferrymq.core.scheduler import JOB_ID, SCHEDULED_CONTAINER
from ferrymq.store.base import AddMessage, RemoveMessage, StoredMessage
from tests.core.harness import Harness, q


def _harness() -> Harness:
    harness = Harness(scheduler=True)
    harness.connect("c1")
    return harness


def _advance(harness: Harness, ms: int) -> None:
    harness.advance(ms)


def test_delayed_message_waits_then_arrives_once() -> None:
    harness = _harness()
    consumer = harness.subscribe("c1", "s", q("later"))
    sent = harness.send(
        "c1", q("later"), b"x", persistent=True, properties={"AMQ_SCHEDULED_DELAY": "500"}
    )
    (job,) = [op for op in harness.ops(AddMessage) if op.container == SCHEDULED_CONTAINER]
    assert harness.taken(consumer) == []
    _advance(harness, 499)
    assert harness.taken(consumer) == []
    _advance(harness, 1)
    (delivery,) = harness.taken(consumer)
    assert delivery.entry.message.message_id == sent.message_id
    assert "AMQ_SCHEDULED_DELAY" not in delivery.entry.message.properties
    assert JOB_ID in delivery.entry.message.properties
    assert RemoveMessage(SCHEDULED_CONTAINER, job.seq) in harness.store_ops
    _advance(harness, 10_000)
    assert harness.taken(consumer) == []


def test_repeat_with_period_delivers_repeat_plus_one_times() -> None:
    harness = _harness()
    consumer = harness.subscribe("c1", "s", q("tick"))
    harness.send(
        "c1",
        q("tick"),
        b"t",
        properties={"AMQ_SCHEDULED_PERIOD": "100", "AMQ_SCHEDULED_REPEAT": "3"},
    )
    times = []
    for _ in range(10):
        for delivery in harness.taken(consumer):
            times.append(harness.region.now_ms)
            assert delivery.entry.message.body == b"t"
        _advance(harness, 50)
    assert len(times) == 4
    assert [b - a for a, b in itertools.pairwise(times)] == [100, 100, 100]


def test_cron_fires_each_matching_minute() -> None:
    harness = _harness()
    harness.region.begin_batch(1_795_000_000_000)  # a minute boundary is ahead
    consumer = harness.subscribe("c1", "s", q("cron"))
    harness.send("c1", q("cron"), b"c", properties={"AMQ_SCHEDULED_CRON": "* * * * *"})
    ids: set[str] = set()
    for _ in range(3 * 60 + 1):
        _advance(harness, 1000)
        ids.update(d.entry.message.message_id for d in harness.taken(consumer))
    assert len(ids) == 3


def test_jobs_survive_a_restart_through_the_store() -> None:
    first = _harness()
    first.send("c1", q("later"), b"kept", properties={"AMQ_SCHEDULED_DELAY": "1000"})
    (job,) = [op for op in first.ops(AddMessage) if op.container == SCHEDULED_CONTAINER]
    second = _harness()
    second.region.begin_batch(first.region.now_ms)
    assert second.region.scheduler is not None
    second.region.scheduler.restore([StoredMessage(SCHEDULED_CONTAINER, job.seq, job.blob, False)])
    consumer = second.subscribe("c1", "s", q("later"))
    _advance(second, 999)
    assert second.taken(consumer) == []
    _advance(second, 1)
    assert second.bodies(consumer) == [b"kept"]


def test_bad_scheduling_headers_are_refused() -> None:
    harness = _harness()
    with pytest.raises(BrokerError, match="AMQ_SCHEDULED_DELAY"):
        harness.send("c1", q("x"), b"", properties={"AMQ_SCHEDULED_DELAY": "soon"})
    with pytest.raises(BrokerError, match="AMQ_SCHEDULED_CRON"):
        harness.send("c1", q("x"), b"", properties={"AMQ_SCHEDULED_CRON": "every minute"})
    with pytest.raises(BrokerError, match="AMQ_SCHEDULED_PERIOD must fit"):
        harness.send("c1", q("x"), b"", properties={"AMQ_SCHEDULED_PERIOD": str(2**63)})


def test_without_scheduler_support_the_headers_are_plain_properties() -> None:
    harness = Harness()
    harness.connect("c1")
    consumer = harness.subscribe("c1", "s", q("now"))
    harness.send("c1", q("now"), b"n", properties={"AMQ_SCHEDULED_DELAY": "60000"})
    (delivery,) = harness.taken(consumer)
    assert delivery.entry.message.properties["AMQ_SCHEDULED_DELAY"] == "60000"
