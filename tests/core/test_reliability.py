"""Store operations, redelivery, dead letters, expiry, duplicates, transactions, paging."""

from __future__ import annotations

import pytest

from ferrymq.core import codec
from ferrymq.core.consumer import AckMode
from ferrymq.core.errors import BrokerError
from ferrymq.core.policy import RedeliveryPolicy
from ferrymq.core.usage import UsageLimits
from ferrymq.store.base import (
    AddDestination,
    AddMessage,
    MarkDelivered,
    PurgeContainer,
    RemoveMessage,
    StoredMessage,
)
from tests.core.harness import Harness, accepted, default_policy, q, t


def test_persistent_queue_message_is_stored_marked_then_removed(harness: Harness) -> None:
    harness.connect("c1")
    consumer = harness.subscribe("c1", "s", q("work"))
    harness.send("c1", q("work"), b"durable", persistent=True)
    (add,) = harness.ops(AddMessage)
    assert add.container == "queue://work"
    assert add.persistent
    (mark,) = harness.ops(MarkDelivered)
    assert (mark.container, mark.seq) == (add.container, add.seq)
    (delivery,) = harness.taken(consumer)
    assert delivery.after_commit
    harness.ack(delivery)
    (remove,) = harness.ops(RemoveMessage)
    assert (remove.container, remove.seq) == (add.container, add.seq)


def test_non_persistent_message_never_touches_the_store(harness: Harness) -> None:
    harness.connect("c1")
    consumer = harness.subscribe("c1", "s", q("work"))
    harness.send("c1", q("work"), b"volatile")
    (delivery,) = harness.taken(consumer)
    assert not delivery.after_commit
    harness.ack(delivery)
    assert [op for op in harness.store_ops if not isinstance(op, AddDestination)] == []


def test_nack_sends_persistent_message_to_dlq(harness: Harness) -> None:
    harness.connect("c1")
    consumer = harness.subscribe("c1", "s", q("work"))
    sent = harness.send("c1", q("work"), b"bad", persistent=True)
    (delivery,) = harness.taken(consumer)
    harness.nack(delivery)
    dlq = harness.subscribe("c1", "dlq", q("ActiveMQ.DLQ"))
    (dead,) = harness.taken(dlq)
    assert dead.entry.message.message_id == sent.message_id
    assert dead.entry.message.original_destination == q("work")
    assert "dlqDeliveryFailureCause" in dead.entry.message.properties
    assert harness.region.queues[q("work")].depth == 0


def test_nack_drops_non_persistent_message_by_default(harness: Harness) -> None:
    harness.connect("c1")
    consumer = harness.subscribe("c1", "s", q("work"))
    harness.send("c1", q("work"), b"bad")
    harness.nack(harness.taken(consumer)[0])
    assert q("ActiveMQ.DLQ") not in harness.region.queues


def test_redelivery_limit_sends_to_dlq_after_six_redeliveries(harness: Harness) -> None:
    harness.connect("c1")
    harness.send("c1", q("work"), b"poison", persistent=True)
    counts: list[int] = []
    for i in range(7):
        consumer = harness.subscribe("c1", f"s{i}", q("work"))
        deliveries = harness.taken(consumer)
        counts.extend(d.entry.redelivery_count for d in deliveries)
        accepted(harness.region.unsubscribe("c1", f"s{i}"))
        harness.collect()
    assert counts == [0, 1, 2, 3, 4, 5, 6]
    assert harness.region.queues[q("work")].depth == 0
    assert harness.region.queues[q("ActiveMQ.DLQ")].depth == 1


def test_nack_redelivers_when_redelivery_plugin_policy_applies() -> None:
    policy = default_policy(
        redelivery=RedeliveryPolicy(maximum_redeliveries=2, nack_redelivers=True)
    )
    harness = Harness(policy=policy)
    harness.connect("c1")
    consumer = harness.subscribe("c1", "s", q("work"))
    harness.send("c1", q("work"), b"m", persistent=True)
    counts: list[int] = []
    for _ in range(3):
        (delivery,) = harness.taken(consumer)
        counts.append(delivery.entry.redelivery_count)
        harness.nack(delivery)
    assert counts == [0, 1, 2]
    assert harness.region.queues[q("ActiveMQ.DLQ")].depth == 1


def test_expired_persistent_message_goes_to_dlq(harness: Harness) -> None:
    harness.connect("c1")
    harness.send("c1", q("work"), b"late", persistent=True, expires=harness.region.now_ms + 10)
    harness.region.begin_batch(harness.region.now_ms + 20)
    consumer = harness.subscribe("c1", "s", q("work"))
    assert harness.taken(consumer) == []
    assert harness.region.queues[q("ActiveMQ.DLQ")].depth == 1


def test_expiry_sweep_without_consumers(harness: Harness) -> None:
    harness.connect("c1")
    harness.send("c1", q("work"), b"late", expires=harness.region.now_ms + 10)
    harness.advance(20)
    assert harness.region.queues[q("work")].depth == 0
    assert q("ActiveMQ.DLQ") not in harness.region.queues  # non-persistent: dropped


def test_duplicate_producer_message_id_is_not_stored_twice(harness: Harness) -> None:
    harness.connect("c1")
    harness.send("c1", q("work"), b"1", persistent=True, producer_message_id="p1:1")
    harness.send("c1", q("work"), b"1 again", persistent=True, producer_message_id="p1:1")
    assert len(harness.ops(AddMessage)) == 1
    assert harness.region.dedup.duplicates == 1


def test_transacted_sends_appear_only_at_commit(harness: Harness) -> None:
    harness.connect("c1")
    consumer = harness.subscribe("c1", "s", q("work"))
    accepted(harness.region.begin("c1", "tx1"))
    harness.send("c1", q("work"), b"first", transaction="tx1")
    assert harness.taken(consumer) == []
    accepted(harness.region.abort("c1", "tx1"))
    accepted(harness.region.begin("c1", "tx2"))
    harness.send("c1", q("work"), b"second", transaction="tx2")
    accepted(harness.region.commit("c1", "tx2"))
    harness.collect()
    assert harness.bodies(consumer) == [b"second"]


def test_transacted_ack_is_undone_by_abort(harness: Harness) -> None:
    harness.connect("c1")
    consumer = harness.subscribe("c1", "s", q("work"), ack=AckMode.CLIENT, prefetch=1)
    harness.send("c1", q("work"), b"a", persistent=True)
    harness.send("c1", q("work"), b"b", persistent=True)
    (first,) = harness.taken(consumer)
    accepted(harness.region.begin("c1", "tx"))
    harness.ack(first, transaction="tx")
    # The transacted ack frees the prefetch slot at once, as ActiveMQ's delivered ack does.
    (second,) = harness.taken(consumer)
    accepted(harness.region.abort("c1", "tx"))
    harness.collect()
    assert harness.ops(RemoveMessage) == []
    assert consumer.delivered_count == 2
    harness.ack(second)  # cumulative: covers the first again
    assert len(harness.ops(RemoveMessage)) == 2


def test_transacted_ack_removes_at_commit(harness: Harness) -> None:
    harness.connect("c1")
    consumer = harness.subscribe("c1", "s", q("work"))
    harness.send("c1", q("work"), b"a", persistent=True)
    (delivery,) = harness.taken(consumer)
    accepted(harness.region.begin("c1", "tx"))
    harness.ack(delivery, transaction="tx")
    assert harness.ops(RemoveMessage) == []
    accepted(harness.region.commit("c1", "tx"))
    harness.collect()
    assert len(harness.ops(RemoveMessage)) == 1


def test_unknown_transaction_and_ack_are_errors(harness: Harness) -> None:
    harness.connect("c1")
    with pytest.raises(BrokerError, match="Invalid transaction id"):
        accepted(harness.region.commit("c1", "nope"))
    accepted(harness.region.begin("c1", "tx"))
    with pytest.raises(BrokerError, match="already started"):
        accepted(harness.region.begin("c1", "tx"))
    from ferrymq.core.region import AckRef

    with pytest.raises(BrokerError, match="Unexpected ACK"):
        accepted(harness.region.acknowledge("c1", AckRef(ack_id="42")))


def test_temporary_queue_is_deleted_with_its_connection(harness: Harness) -> None:
    harness.connect("c1")
    temp = q("x")
    from ferrymq.core.destination import Destination, DestinationType

    temp = Destination(DestinationType.TEMP_QUEUE, "c1:1")
    harness.region.create_temporary("c1", temp)
    harness.connect("c2")
    harness.send("c2", temp, b"reply")
    accepted(harness.region.remove_connection("c1"))
    harness.collect()
    assert temp not in harness.region.queues
    with pytest.raises(BrokerError, match="deleted Destination"):
        harness.send("c2", temp, b"late reply")


def test_full_memory_pages_messages_out_and_back_in() -> None:
    harness = Harness(usage=UsageLimits(memory_bytes=20_000))
    harness.connect("c1")
    sent = [harness.send("c1", q("deep"), b"%03d" % i, persistent=True) for i in range(60)]
    container = harness.region.queues[q("deep")]
    assert container.paged_out > 0
    in_memory = len(container.pending)
    assert in_memory + container.paged_out == 60
    consumer = harness.subscribe("c1", "s", q("deep"), prefetch=100)
    page_ins = [p for e in harness.effects for p in e.page_ins]
    assert page_ins
    assert page_ins[0].from_seq == container.cursor
    adds = {op.seq: op for op in harness.ops(AddMessage)}
    records = [
        StoredMessage("queue://deep", seq, adds[seq].blob, False)
        for seq in sorted(adds)
        if seq >= page_ins[0].from_seq
    ][: page_ins[0].limit]
    harness.region.paged_in("queue://deep", records, page_ins[0].limit)
    harness.collect()
    bodies = harness.bodies(consumer)
    assert bodies == [m.body for m in sent]
    assert container.paged_out == 0


def test_recovered_delivered_message_comes_back_flagged(harness: Harness) -> None:
    from ferrymq.core.message import Message, MessageId
    from ferrymq.store.base import ContainerState, Recovery

    message = Message(MessageId("ID:old-1"), q("work"), b"was delivered", persistent=True)
    blob = codec.encode(message)
    harness.region.recover(
        Recovery(
            containers={"queue://work": ContainerState("queue://work", 1, len(blob), 7, 7)},
            last_seq=7,
        )
    )
    harness.connect("c1")
    consumer = harness.subscribe("c1", "s", q("work"))
    harness.region.paged_in("queue://work", [StoredMessage("queue://work", 7, blob, True)], 200)
    harness.collect()
    (delivery,) = harness.taken(consumer)
    assert delivery.entry.redelivery_count == 1
    assert harness.region.seq >= 7


def test_queue_purge_on_removal_emits_purge(harness: Harness) -> None:
    harness.connect("c1")
    harness.send("c1", q("gone"), b"x", persistent=True)
    harness.region.remove_destination(q("gone"))
    harness.collect()
    assert harness.ops(PurgeContainer)


def test_topic_durable_copy_is_acked_independently(harness: Harness) -> None:
    harness.connect("c1", client_id="app")
    d1 = harness.subscribe("c1", "a", t("news"), durable_name="one")
    d2 = harness.subscribe("c1", "b", t("news"), durable_name="two")
    harness.send("c1", t("news"), b"x", persistent=True)
    (x1,) = harness.taken(d1)
    (x2,) = harness.taken(d2)
    harness.ack(x1)
    removes = harness.ops(RemoveMessage)
    assert [r.container for r in removes] == ["durable:app:one"]
    other = harness.region.subscriptions.by_key(x2.entry.container.key)
    assert other is not None
    assert other.depth == 1
