"""Queue dispatch in the core: competing consumers, priority, exclusivity, groups, prefetch."""

from __future__ import annotations

from ferrymq.core.consumer import AckMode
from tests.core.harness import Harness, accepted, q


def test_competing_consumers_share_round_robin(harness: Harness) -> None:
    harness.connect("c1")
    a = harness.subscribe("c1", "a", q("work"))
    b = harness.subscribe("c1", "b", q("work"))
    for i in range(6):
        harness.send("c1", q("work"), f"m{i}".encode())
    assert harness.bodies(a) == [b"m0", b"m2", b"m4"]
    assert harness.bodies(b) == [b"m1", b"m3", b"m5"]


def test_each_message_goes_to_exactly_one_consumer(harness: Harness) -> None:
    harness.connect("c1")
    consumers = [harness.subscribe("c1", str(i), q("work"), prefetch=3) for i in range(3)]
    for i in range(9):
        harness.send("c1", q("work"), str(i).encode())
    seen = [body for c in consumers for body in harness.bodies(c)]
    assert sorted(seen) == sorted(str(i).encode() for i in range(9))


def test_higher_priority_consumer_is_served_first(harness: Harness) -> None:
    harness.connect("c1")
    low = harness.subscribe("c1", "low", q("work"), prefetch=10)
    high = harness.subscribe("c1", "high", q("work"), prefetch=2, priority=5)
    for i in range(5):
        harness.send("c1", q("work"), str(i).encode())
    assert harness.bodies(high) == [b"0", b"1"]
    assert harness.bodies(low) == [b"2", b"3", b"4"]


def test_exclusive_consumer_takes_everything_then_hands_over(harness: Harness) -> None:
    harness.connect("c1")
    first = harness.subscribe("c1", "first", q("work"), exclusive=True)
    second = harness.subscribe("c1", "second", q("work"), exclusive=True)
    plain = harness.subscribe("c1", "plain", q("work"))
    for i in range(3):
        harness.send("c1", q("work"), str(i).encode())
    assert len(harness.taken(first)) == 3
    assert harness.taken(second) == []
    assert harness.taken(plain) == []
    accepted(harness.region.unsubscribe("c1", "first"))
    harness.collect()
    # The three unacked messages come back to the next exclusive consumer, flagged redelivered.
    redelivered = harness.taken(second)
    assert [d.entry.redelivery_count for d in redelivered] == [1, 1, 1]
    assert harness.taken(plain) == []


def test_message_group_sticks_to_one_consumer(harness: Harness) -> None:
    harness.connect("c1")
    a = harness.subscribe("c1", "a", q("orders"))
    b = harness.subscribe("c1", "b", q("orders"))
    for i in range(6):
        group = "G1" if i % 3 else "G2"
        harness.send("c1", q("orders"), str(i).encode(), properties={"JMSXGroupID": group})
    got_a = {d.entry.message.group_id for d in harness.taken(a)}
    got_b = {d.entry.message.group_id for d in harness.taken(b)}
    assert got_a.isdisjoint(got_b)
    assert got_a | got_b == {"G1", "G2"}


def test_group_moves_when_its_consumer_leaves(harness: Harness) -> None:
    harness.connect("c1")
    a = harness.subscribe("c1", "a", q("orders"))
    harness.send("c1", q("orders"), b"1", properties={"JMSXGroupID": "G"})
    assert len(harness.taken(a)) == 1
    b = harness.subscribe("c1", "b", q("orders"))
    harness.send("c1", q("orders"), b"2", properties={"JMSXGroupID": "G"})
    assert harness.bodies(a) == [b"2"]
    assert harness.taken(b) == []
    accepted(harness.region.unsubscribe("c1", "a"))
    harness.collect()
    assert sorted(harness.bodies(b)) == [b"1", b"2"]


def test_prefetch_limits_outstanding_messages(harness: Harness) -> None:
    harness.connect("c1")
    consumer = harness.subscribe("c1", "s", q("work"), prefetch=2)
    for i in range(5):
        harness.send("c1", q("work"), str(i).encode())
    first = harness.taken(consumer)
    assert [d.entry.message.body for d in first] == [b"0", b"1"]
    harness.ack(first[0])
    assert harness.bodies(consumer) == [b"2"]


def test_client_ack_is_cumulative(harness: Harness) -> None:
    harness.connect("c1")
    consumer = harness.subscribe("c1", "s", q("work"), ack=AckMode.CLIENT, prefetch=10)
    for i in range(4):
        harness.send("c1", q("work"), str(i).encode())
    deliveries = harness.taken(consumer)
    harness.ack(deliveries[2])
    container = harness.region.queues[q("work")]
    assert container.depth == 1
    assert consumer.delivered_count == 1


def test_client_individual_ack_acks_one(harness: Harness) -> None:
    harness.connect("c1")
    consumer = harness.subscribe("c1", "s", q("work"), prefetch=10)
    for i in range(3):
        harness.send("c1", q("work"), str(i).encode())
    deliveries = harness.taken(consumer)
    harness.ack(deliveries[1])
    assert harness.region.queues[q("work")].depth == 2


def test_higher_priority_messages_are_dispatched_first(harness: Harness) -> None:
    harness.connect("c1")
    for priority in (1, 9, 4, 9, 0):
        harness.send("c1", q("work"), str(priority).encode(), priority=priority)
    consumer = harness.subscribe("c1", "s", q("work"))
    assert harness.bodies(consumer) == [b"9", b"9", b"4", b"1", b"0"]


def test_selector_filters_queue_messages(harness: Harness) -> None:
    harness.connect("c1")
    red = harness.subscribe("c1", "red", q("paint"), selector="color = 'red'")
    harness.send("c1", q("paint"), b"b", properties={"color": "blue"})
    harness.send("c1", q("paint"), b"r", properties={"color": "red"})
    assert harness.bodies(red) == [b"r"]
    blue = harness.subscribe("c1", "blue", q("paint"), selector="color <> 'red'")
    assert harness.bodies(blue) == [b"b"]


def test_selector_compares_numeric_headers_as_numbers(harness: Harness) -> None:
    harness.connect("c1")
    heavy = harness.subscribe("c1", "s", q("parcels"), selector="weight > 10 AND JMSPriority >= 4")
    harness.send("c1", q("parcels"), b"light", properties={"weight": "9"})
    harness.send("c1", q("parcels"), b"heavy", properties={"weight": "12"})
    assert harness.bodies(heavy) == [b"heavy"]


def test_wildcard_queue_consumer_sees_existing_and_new_queues(harness: Harness) -> None:
    harness.connect("c1")
    harness.send("c1", q("orders.eu"), b"eu")
    consumer = harness.subscribe("c1", "s", q("orders.>"))
    harness.send("c1", q("orders.us.east"), b"us")
    harness.send("c1", q("invoices"), b"no")
    assert sorted(harness.bodies(consumer)) == [b"eu", b"us"]


def test_unsubscribe_redelivers_unacked_with_flag(harness: Harness) -> None:
    harness.connect("c1")
    harness.connect("c2")
    first = harness.subscribe("c1", "s", q("work"))
    harness.send("c1", q("work"), b"m")
    assert len(harness.taken(first)) == 1
    accepted(harness.region.remove_connection("c1"))
    harness.collect()
    second = harness.subscribe("c2", "s", q("work"))
    (delivery,) = harness.taken(second)
    assert delivery.entry.redelivery_count == 1
