"""ActiveMQ's ConsumerControl: a running consumer's prefetch window changes (AMQP link credit)."""

from __future__ import annotations

from tests.core.harness import Harness, accepted, q


def test_a_wider_window_is_filled_at_once(harness: Harness) -> None:
    harness.connect("c1")
    consumer = harness.subscribe("c1", "s", q("work"), prefetch=2)
    for i in range(5):
        harness.send("c1", q("work"), str(i).encode())
    assert harness.bodies(consumer) == [b"0", b"1"]
    accepted(harness.region.control_consumer("c1", "s", 4))
    harness.collect()
    assert harness.bodies(consumer) == [b"2", b"3"]


def test_a_closed_window_holds_back_without_taking_anything_back(harness: Harness) -> None:
    harness.connect("c1")
    consumer = harness.subscribe("c1", "s", q("work"), prefetch=3)
    harness.send("c1", q("work"), b"first")
    (delivery,) = harness.taken(consumer)
    accepted(harness.region.control_consumer("c1", "s", 0))
    harness.collect()
    harness.ack(delivery)
    harness.send("c1", q("work"), b"held")
    assert harness.taken(consumer) == []
    accepted(harness.region.control_consumer("c1", "s", 1))
    harness.collect()
    assert harness.bodies(consumer) == [b"held"]


def test_an_unknown_subscription_or_a_negative_window_is_refused(harness: Harness) -> None:
    harness.connect("c1")
    harness.subscribe("c1", "s", q("work"))
    unknown = harness.region.control_consumer("c1", "nope", 5)
    assert unknown.refused is not None
    assert "No subscription matched: nope" in unknown.refused.message
    negative = harness.region.control_consumer("c1", "s", -1)
    assert negative.refused is not None
