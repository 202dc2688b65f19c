"""The operator's commands in the core (``core.management``), decided without a store: what they
write, how they count, and how they meet paging (issue 15, item 10)."""

from __future__ import annotations

from ferrymq.core import codec
from ferrymq.core.management import ManagementError, Refusal
from ferrymq.core.usage import UsageLimits
from ferrymq.store.base import AddMessage, PurgeContainer, RemoveMessage, StoredMessage
from tests.core.harness import Harness, accepted, q


def test_a_move_removes_and_adds_in_one_batch() -> None:
    harness = Harness()
    harness.connect("c1")
    for colour in ("red", "blue", "red"):
        harness.send("c1", q("src"), colour.encode(), persistent=True, properties={"c": colour})
    outcome = harness.region.management.move(q("src"), q("dst"), "c = 'red'")
    assert (outcome.accepted, outcome.needs_commit, outcome.affected) == (True, True, 2)
    effects = harness.region.drain()
    removed = [op for op in effects.store_ops if isinstance(op, RemoveMessage)]
    added = [op for op in effects.store_ops if isinstance(op, AddMessage)]
    assert [op.container for op in removed] == ["queue://src"] * 2
    assert [op.container for op in added] == ["queue://dst"] * 2
    assert (harness.region.queues[q("src")].depth, harness.region.queues[q("dst")].depth) == (1, 2)


def test_a_copy_leaves_the_source_and_gives_new_ids() -> None:
    harness = Harness()
    harness.connect("c1")
    sent = harness.send("c1", q("src"), b"x", persistent=True)
    accepted(harness.region.management.move(q("src"), q("dst"), copy=True))
    (copy,) = [e.message for e in harness.region.queues[q("dst")].pending]
    assert copy.message_id != sent.message_id
    assert harness.region.queues[q("src")].depth == 1


def test_refusals_say_why() -> None:
    harness = Harness()
    harness.connect("c1")
    harness.send("c1", q("src"), b"x")
    management = harness.region.management
    missing = management.purge(q("nothing")).refused
    assert isinstance(missing, ManagementError)
    assert missing.reason is Refusal.NOT_FOUND
    bad = management.move(q("src"), q("dst"), "c =").refused
    assert bad is not None
    assert "invalid selector" in bad.message
    same = management.move(q("src"), q("src")).refused
    assert same is not None
    assert "same queue" in same.message
    wildcard = management.move(q("src"), q("dst.>")).refused
    assert wildcard is not None
    reserved = management.send(q("src"), b"", {"message-id": "mine"})[0].refused
    assert reserved is not None
    assert "set by the broker" in reserved.message


def test_a_page_in_read_before_a_purge_brings_nothing_back() -> None:
    harness = Harness(usage=UsageLimits(memory_bytes=20_000))
    harness.connect("c1")
    for i in range(60):
        harness.send("c1", q("deep"), b"%03d" % i, persistent=True)
    queue = harness.region.queues[q("deep")]
    assert queue.paged_out > 0
    harness.subscribe("c1", "s", q("deep"), prefetch=1)  # asks for a page-in
    (page_in,) = [p for e in harness.effects for p in e.page_ins]
    adds = {op.seq: op for op in harness.ops(AddMessage)}
    stale = [
        StoredMessage("queue://deep", seq, adds[seq].blob, False)
        for seq in sorted(adds)
        if seq >= page_in.from_seq
    ][: page_in.limit]
    outcome = harness.region.management.purge(q("deep"))
    assert outcome.affected == 60 - 1  # one was delivered to the consumer
    assert any(isinstance(op, PurgeContainer) for op in harness.region.drain().store_ops)
    harness.region.paged_in("queue://deep", stale, page_in.limit)  # the read that raced it
    assert (len(queue.pending), queue.paged_out) == (0, 0)


def test_retry_restores_the_original_destination() -> None:
    harness = Harness()
    harness.connect("c1")
    harness.send("c1", q("orders"), b"x", persistent=True, properties={"k": "v"})
    consumer = harness.subscribe("c1", "s", q("orders"))
    (delivery,) = harness.taken(consumer)
    harness.nack(delivery)
    dlq = harness.region.queues[q("ActiveMQ.DLQ")]
    (dead,) = [e.message for e in dlq.pending]
    assert dead.original_destination == q("orders")
    assert accepted(harness.region.management.retry(q("ActiveMQ.DLQ"))).affected == 1
    harness.collect()
    (back,) = harness.taken(consumer)
    message = back.entry.message
    assert (message.destination, message.original_destination) == (q("orders"), None)
    assert "dlqDeliveryFailureCause" not in message.properties
    assert codec.decode(codec.encode(message)).properties == {"k": "v"}


def test_a_message_purged_in_flight_is_not_delivered_again() -> None:
    """ActiveMQ drops a purged message that a consumer holds: when that consumer goes away
    without acknowledging it, another consumer does not get it (its store row is gone)."""
    harness = Harness()
    harness.connect("c1")
    harness.connect("c2")
    harness.send("c1", q("work"), b"held", persistent=True)
    first = harness.subscribe("c1", "s1", q("work"), prefetch=1)
    assert harness.bodies(first) == [b"held"]
    accepted(harness.region.management.purge(q("work")))
    harness.region.drain()
    accepted(harness.region.remove_connection("c1"))  # gives the message back
    second = harness.subscribe("c2", "s2", q("work"), prefetch=1)
    assert harness.bodies(second) == []
    queue = harness.region.queues[q("work")]
    assert (queue.depth, queue.in_flight) == (0, 0)
    assert harness.region.usage.store_used == 0


def test_an_operator_read_leaves_the_queue_s_own_page_in_outstanding() -> None:
    """The operator's read (``read_page``) overlaps the queue's own page-in: it must neither
    settle that request (the queue would issue a second read of the same rows) nor let a short
    read zero the count of what the store still holds (those rows would stay stranded)."""
    harness = Harness(usage=UsageLimits(memory_bytes=20_000))
    harness.connect("c1")
    for i in range(60):
        harness.send("c1", q("deep"), b"%03d" % i, persistent=True)
    queue = harness.region.queues[q("deep")]
    consumer = harness.subscribe("c1", "s", q("deep"), prefetch=1)  # asks for a page-in
    (page_in,) = [p for e in harness.effects for p in e.page_ins]
    adds = {op.seq: op for op in harness.ops(AddMessage)}
    rows = [
        StoredMessage("queue://deep", seq, adds[seq].blob, False)
        for seq in sorted(adds)
        if seq >= page_in.from_seq
    ]
    paged_out = queue.paged_out
    harness.region.management.read_page(q("deep"), rows[:5])  # the operator's read
    harness.collect()
    assert queue.paged_out == paged_out - 5
    for _ in range(8):  # the consumer works through what is in memory
        (delivery,) = harness.taken(consumer)
        harness.ack(delivery)
    # The queue's own read is still outstanding: no second one of the same rows.
    assert [p for e in harness.effects for p in e.page_ins] == [page_in]
    harness.region.paged_in("queue://deep", rows[: page_in.limit], page_in.limit)
    harness.collect()
    assert queue.paged_out == 0
    assert queue.depth == 60 - 8
