"""The mirror tap (``core.mirror``): the events a `<mirror>` reproduces, queued in the same batch
as what caused them, with the address filter, the switches and the loop rules."""

from __future__ import annotations

import json

import pytest

from ferrymq.config.broker_connections import AddressFilter
from ferrymq.core import codec
from ferrymq.core.consumer import AckMode
from ferrymq.core.destination import Destination, DestinationType
from ferrymq.core.ledger import AckRef
from ferrymq.core.message import Message
from ferrymq.core.mirror import (
    MIRROR_QUEUE_PREFIX,
    MirrorSpec,
    applying_for,
)
from ferrymq.core.policy import RedeliveryPolicy
from ferrymq.store.base import AddMessage, RemoveMessage
from tests.core.harness import Harness, default_policy, q, t

MQ = q(MIRROR_QUEUE_PREFIX + "dr")


def mirrored(harness: Harness, *specs: MirrorSpec) -> Harness:
    harness.region.mirror.configure(specs or (MirrorSpec("dr"),))
    return harness


@pytest.fixture
def harness() -> Harness:
    harness = mirrored(Harness())
    harness.connect("c1", "client-1")
    return harness


def events(harness: Harness, name: str = "dr") -> list[Message]:
    """The events queued in a mirror queue so far, in order (read from the store writes)."""
    key = (q(MIRROR_QUEUE_PREFIX + name)).qualified
    return [codec.decode(op.blob) for op in harness.ops(AddMessage) if op.container == key]


def kinds(harness: Harness, name: str = "dr") -> list[tuple[str, str]]:
    return [
        (e.properties["ferrymq.mirror.event"], e.properties["ferrymq.mirror.dst"])
        for e in events(harness, name)
    ]


def test_a_send_and_its_event_are_in_the_same_batch(harness: Harness) -> None:
    message = harness.message(q("orders"), b"m1", persistent=True)
    outcome = harness.region.send("c1", message)
    assert outcome.needs_commit
    effects = harness.region.drain()
    containers = [op.container for op in effects.store_ops if isinstance(op, AddMessage)]
    # the queue's creation, the send, then the message itself: one write
    assert containers == [MQ.qualified, MQ.qualified, "queue://orders"]
    harness.store_ops.extend(effects.store_ops)
    (send,) = [e for e in events(harness) if e.properties["ferrymq.mirror.event"] == "send"]
    assert send.message_id == message.message_id
    assert send.body == b"m1"
    assert send.persistent
    assert send.expires == 0
    assert send.properties["ferrymq.mirror.persistent"] == "true"
    assert "ferrymq.mirror.origin" not in send.properties  # sent here


def test_a_non_persistent_message_is_mirrored_durably(harness: Harness) -> None:
    harness.send("c1", q("orders"), b"m", persistent=False, priority=9, expires=10**13)
    (event,) = [e for e in events(harness) if e.properties["ferrymq.mirror.event"] == "send"]
    assert (event.persistent, event.priority, event.expires) == (True, 4, 0)
    assert event.properties["ferrymq.mirror.persistent"] == "false"
    assert event.properties["ferrymq.mirror.priority"] == "9"
    assert event.properties["ferrymq.mirror.expires"] == str(10**13)


def test_queue_creation_then_send_then_ack_in_order(harness: Harness) -> None:
    consumer = harness.subscribe("c1", "s", q("orders"), ack=AckMode.CLIENT_INDIVIDUAL)
    harness.send("c1", q("orders"), b"m", persistent=True)
    (delivery,) = harness.taken(consumer)
    harness.ack(delivery)
    assert kinds(harness) == [
        ("createQueue", "queue://orders"),
        ("send", "queue://orders"),
        ("postAck", "queue://orders"),
    ]
    create, _, ack = events(harness)
    assert json.loads(create.body) == {
        "address": "orders",
        "name": "orders",
        "routing-type": "ANYCAST",
        "durable": True,
    }
    assert ack.properties["ferrymq.mirror.queue"] == "orders"
    assert ack.properties["ferrymq.mirror.id"] == delivery.entry.message.message_id
    assert "ferrymq.mirror.reason" not in ack.properties  # 0, normal


def test_the_ack_and_its_event_are_in_the_same_batch(harness: Harness) -> None:
    consumer = harness.subscribe("c1", "s", q("orders"))
    harness.send("c1", q("orders"), b"m", persistent=True)
    (delivery,) = harness.taken(consumer)
    harness.region.acknowledge("c1", AckRef(ack_id=delivery.ack_id))
    effects = harness.region.drain()
    kinds_ = [
        type(op).__name__ + ":" + op.container
        for op in effects.store_ops
        if isinstance(op, AddMessage | RemoveMessage)
    ]
    assert kinds_ == [f"AddMessage:{MQ.qualified}", "RemoveMessage:queue://orders"]


@pytest.mark.parametrize(
    ("text", "mirrored_", "not_mirrored"),
    [
        ("eu", ["eu.uk", "eu.de", "europe"], ["us"]),
        ("!eu", ["us", "asia"], ["eu.uk", "europe"]),
        ("eu.uk,eu.de", ["eu.uk", "eu.de.berlin"], ["eu.fr", "us"]),
        ("eu,!eu.uk", ["eu.de", "eu.fr"], ["eu.uk", "eu.uk.london", "us"]),
    ],
)
def test_the_address_filter_examples(
    text: str, mirrored_: list[str], not_mirrored: list[str]
) -> None:
    """The manual's address-filter examples: prefixes, ``!`` excludes, an exclusion wins."""
    parsed = AddressFilter.parse(text)
    harness = mirrored(Harness(), MirrorSpec("dr", parsed.includes, parsed.excludes))
    harness.connect("c1")
    for name in mirrored_ + not_mirrored:
        harness.send("c1", q(name), name.encode(), persistent=True)
    sent = [dst for kind, dst in kinds(harness) if kind == "send"]
    assert sent == [f"queue://{name}" for name in mirrored_]


def test_scenario_15_16_internal_temporary_and_advisory_destinations_are_not_mirrored(
    harness: Harness,
) -> None:
    """Artemis scenarios 15 (internal queues) and 16 (temporary queues)."""
    harness.region.create_temporary("c1", Destination(DestinationType.TEMP_QUEUE, "tmp"))
    harness.collect()
    for name in ("$ACTIVEMQ_ARTEMIS_FEDERATION.x", "activemq.management", "ActiveMQ.DLQ.x"):
        harness.send("c1", q(name), b"m", persistent=True)
    harness.subscribe("c1", "plain", t("news"))  # a plain subscription: a temporary queue
    harness.send("c1", t("news"), b"n")
    assert [dst for _, dst in kinds(harness)] == [
        "queue://ActiveMQ.DLQ.x",
        "queue://ActiveMQ.DLQ.x",
        "topic://news",  # the address, not the send (no durable subscription)
    ]


def test_scenario_11_durable_subscriptions_are_mirrored_with_their_names(
    harness: Harness,
) -> None:
    """Artemis scenario 11: multicast durable subscriptions: created, sent to, acked."""
    consumer = harness.subscribe("c1", "d", t("news"), durable_name="sub1", selector="a = 1")
    harness.send("c1", t("news"), b"n", properties={"a": "1"}, persistent=True)
    (delivery,) = harness.taken(consumer)
    harness.ack(delivery)
    assert kinds(harness) == [
        ("addAddress", "topic://news"),
        ("createQueue", "topic://news"),
        ("send", "topic://news"),
        ("postAck", "topic://news"),
    ]
    _, create, _, ack = events(harness)
    assert json.loads(create.body) == {
        "address": "news",
        "name": "client-1.sub1",
        "routing-type": "MULTICAST",
        "durable": True,
        "client-id": "client-1",
        "subscription-name": "sub1",
        "no-local": False,
        "filter-string": "a = 1",
    }
    assert ack.properties["ferrymq.mirror.queue"] == "client-1.sub1"


def test_scenario_6_creation_and_removal_switches() -> None:
    """Artemis scenario 6: queue-creation=false sends no create; queue-removal=false no delete."""
    harness = mirrored(
        Harness(),
        MirrorSpec("dr", queue_creation=False),
        MirrorSpec("other", queue_removal=False),
    )
    harness.connect("c1")
    harness.send("c1", q("orders"), b"m", persistent=True)
    harness.region.remove_destination(q("orders"))
    harness.collect()
    assert [k for k, _ in kinds(harness, "dr")] == ["send", "deleteQueue"]
    assert [k for k, _ in kinds(harness, "other")] == ["createQueue", "send"]


def test_scenario_2_acks_off() -> None:
    """Artemis scenario 2: message-acknowledgements=false mirrors sends, not acks."""
    harness = mirrored(Harness(), MirrorSpec("dr", message_acknowledgements=False))
    harness.connect("c1")
    consumer = harness.subscribe("c1", "s", q("orders"))
    harness.send("c1", q("orders"), b"m", persistent=True)
    harness.ack(harness.taken(consumer)[0])
    assert [k for k, _ in kinds(harness)] == ["createQueue", "send"]


def test_scenario_17_expiry_is_an_ack_with_reason_2_and_its_copy_is_not_mirrored() -> None:
    """Artemis scenario 17: expired once on each side; the source sends the reason, not the
    expiry copy (the target expires its own)."""
    harness = mirrored(Harness())
    harness.connect("c1")
    harness.send("c1", q("orders"), b"m", persistent=True, expires=harness.region.now_ms + 10)
    harness.advance(60_000)
    assert harness.region.queues[q("ActiveMQ.DLQ")].depth == 1
    sent = [(k, d) for k, d in kinds(harness)]
    assert ("send", "queue://ActiveMQ.DLQ") not in sent
    ack = events(harness)[-1]
    assert ack.properties["ferrymq.mirror.event"] == "postAck"
    assert ack.properties["ferrymq.mirror.reason"] == "2"


def test_a_dead_lettered_message_is_an_ack_with_reason_1() -> None:
    policy = default_policy(
        redelivery=RedeliveryPolicy(maximum_redeliveries=0, nack_redelivers=False)
    )
    harness = mirrored(Harness(policy=policy))
    harness.connect("c1")
    consumer = harness.subscribe("c1", "s", q("orders"))
    harness.send("c1", q("orders"), b"m", persistent=True)
    harness.nack(harness.taken(consumer)[0])
    ack = events(harness)[-1]
    assert ack.properties["ferrymq.mirror.reason"] == "1"
    assert ("send", "queue://ActiveMQ.DLQ") not in kinds(harness)


def test_loop_rules_origin_and_applying_for() -> None:
    """Dual mirror: nothing that came from the peer goes back to it; other mirrors get it."""
    harness = mirrored(Harness(), MirrorSpec("dr"), MirrorSpec("third"))
    harness.region.mirror.learn_peer("dr", "node-B")
    harness.connect("c1")
    message = harness.message(q("orders"), b"from B", persistent=True)
    message.origin_node = "node-B"
    with applying_for("node-B"):
        harness.region.send("c1", message)
        harness.collect()
    assert kinds(harness, "dr") == []  # not even the queue's creation
    third = events(harness, "third")
    assert [e.properties["ferrymq.mirror.event"] for e in third] == ["createQueue", "send"]
    assert third[1].properties["ferrymq.mirror.origin"] == "node-B"
    assert all(e.properties["ferrymq.mirror.skip"] == "node-B" for e in third)


def test_a_peer_not_known_yet_is_tagged_for_the_forwarder() -> None:
    harness = mirrored(Harness())
    harness.connect("c1")
    with applying_for("node-B"):
        harness.region.queue(q("made-by-B"))
        harness.collect()
    (event,) = events(harness)
    assert event.properties["ferrymq.mirror.skip"] == "node-B"


def test_recovery_and_existing_messages_are_not_mirrored() -> None:
    """Pre-existing state is no event: restoring queues from the store mirrors nothing."""
    from ferrymq.store.base import ContainerState, Recovery

    harness = mirrored(Harness())
    recovery = Recovery(
        destinations=["queue://old", "topic://oldt"],
        containers={"queue://old": ContainerState("queue://old", 3, 30, 1, 3)},
        durable_subscriptions=[],
        producer_message_ids=[],
        last_seq=10,
    )
    harness.region.recover(recovery)
    harness.collect()
    assert events(harness) == []


def test_the_forwarder_acking_the_mirror_queue_mirrors_nothing_and_releases_sync() -> None:
    harness = mirrored(Harness(), MirrorSpec("dr", sync=True))
    harness.connect("c1")
    harness.connect("fwd")
    settled: list[int] = []
    tap = harness.region.mirror
    tap.on_sync_settled = settled.append
    forwarder = harness.subscribe("fwd", "f", MQ)
    harness.send("c1", q("orders"), b"m", persistent=True)
    newest = tap.take_sync()
    assert newest
    assert tap.take_sync() == 0  # taken once
    deliveries = harness.taken(forwarder)
    assert len(deliveries) == 2  # createQueue, send
    harness.ack(deliveries[0])
    assert settled
    assert settled[-1] <= newest  # the send still waits
    harness.ack(deliveries[1])
    assert settled[-1] > newest
    assert len(events(harness)) == 2  # acking the mirror queue made no event
    assert harness.ops(RemoveMessage)


def test_no_mirror_configured_is_dormant() -> None:
    harness = Harness()
    harness.connect("c1")
    harness.send("c1", q("orders"), b"m", persistent=True)
    assert harness.region.mirror.take_sync() == 0
    assert not [op for op in harness.ops(AddMessage) if "MIRROR" in op.container]
    assert harness.region.mirror.statistics() == {}


def test_what_a_mirror_target_applies_makes_nobody_wait_on_a_sync_mirror() -> None:
    harness = mirrored(Harness(), MirrorSpec("dr", sync=True))
    harness.connect("c1")
    with applying_for("node-B"):
        harness.send("c1", q("orders"), b"from B", persistent=True)
    assert harness.region.mirror.take_sync() == 0
    harness.send("c1", q("orders"), b"local", persistent=True)
    assert harness.region.mirror.take_sync() > 0
