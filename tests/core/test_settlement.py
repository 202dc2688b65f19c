"""Settlements finer than ACK and NACK (AMQP's outcomes, as ActiveMQ reads them), and consumers
whose window is link credit rather than a prefetch."""

from __future__ import annotations

import pytest

from ferrymq.core.consumer import AckMode, Consumer
from ferrymq.core.effects import Delivery
from ferrymq.core.policy import RedeliveryPolicy
from ferrymq.core.region import AckRef, Settlement
from tests.core.harness import Harness, accepted, default_policy, q


def settle(harness: Harness, delivery: Delivery, how: Settlement, tx: str | None = None) -> None:
    ref = AckRef(ack_id=delivery.ack_id)
    accepted(harness.region.settle(delivery.consumer.connection_id, ref, tx, how))
    harness.collect()


@pytest.fixture
def harness() -> Harness:
    policy = default_policy(
        redelivery=RedeliveryPolicy(maximum_redeliveries=2, nack_redelivers=False)
    )
    harness = Harness(policy=policy)
    harness.connect("c1")
    return harness


def test_a_released_delivery_comes_back_uncounted(harness: Harness) -> None:
    consumer = harness.subscribe("c1", "s", q("work"))
    harness.send("c1", q("work"), b"m", persistent=True)
    for _ in range(5):  # beyond maximumRedeliveries: a release is not a failure
        (delivery,) = harness.taken(consumer)
        assert delivery.entry.redelivery_count == 0
        settle(harness, delivery, Settlement.RELEASE)
    assert q("ActiveMQ.DLQ") not in harness.region.queues


def test_a_redelivered_delivery_is_counted_then_dead_lettered(harness: Harness) -> None:
    consumer = harness.subscribe("c1", "s", q("work"))
    harness.send("c1", q("work"), b"m", persistent=True)
    counts = []
    for _ in range(3):
        (delivery,) = harness.taken(consumer)
        counts.append(delivery.entry.redelivery_count)
        settle(harness, delivery, Settlement.REDELIVER)
    assert counts == [0, 1, 2]
    assert harness.region.queues[q("ActiveMQ.DLQ")].depth == 1


def test_a_rejected_delivery_is_dead_lettered_at_once(harness: Harness) -> None:
    consumer = harness.subscribe("c1", "s", q("work"))
    harness.send("c1", q("work"), b"m", persistent=True)
    (delivery,) = harness.taken(consumer)
    settle(harness, delivery, Settlement.DEAD_LETTER)
    assert harness.region.queues[q("work")].depth == 0
    assert harness.region.queues[q("ActiveMQ.DLQ")].depth == 1


def test_a_settlement_in_a_transaction_applies_at_commit(harness: Harness) -> None:
    consumer = harness.subscribe("c1", "s", q("work"))
    harness.send("c1", q("work"), b"m", persistent=True)
    (delivery,) = harness.taken(consumer)
    accepted(harness.region.begin("c1", "tx"))
    settle(harness, delivery, Settlement.DEAD_LETTER, "tx")
    assert q("ActiveMQ.DLQ") not in harness.region.queues
    accepted(harness.region.commit("c1", "tx"))
    harness.collect()
    assert harness.region.queues[q("ActiveMQ.DLQ")].depth == 1


def credit_consumer(harness: Harness, subscription: str) -> Consumer:
    consumer = Consumer(
        "c1", subscription, q("work"), ack_mode=AckMode.CLIENT_INDIVIDUAL, prefetch=0
    )
    consumer.credit_mode = True
    accepted(harness.region.subscribe(consumer))
    harness.collect()
    return consumer


def test_credit_is_used_up_by_deliveries_and_not_given_back_by_acks(harness: Harness) -> None:
    for i in range(10):
        harness.send("c1", q("work"), f"m{i}".encode())
    consumer = credit_consumer(harness, "s")
    assert harness.taken(consumer) == [], "no credit, no delivery"
    accepted(harness.region.control_consumer("c1", "s", 3))
    harness.collect()
    first = harness.taken(consumer)
    assert len(first) == 3
    for delivery in first:
        harness.ack(delivery)
    assert harness.taken(consumer) == [], "an ack is not credit"
    accepted(harness.region.control_consumer("c1", "s", 4))
    harness.collect()
    assert [d.entry.message.body for d in harness.taken(consumer)] == [
        b"m3", b"m4", b"m5", b"m6"
    ]  # fmt: skip
