"""What the core's commands return: accepted or refused, and whether the confirmation waits for
the store; and the rules that now live in one place (admission, time as an argument)."""

from __future__ import annotations

from ferrymq.core.consumer import Consumer
from ferrymq.core.ledger import AckRef
from ferrymq.core.selector import parse_selector
from ferrymq.store.base import AddMessage
from tests.core.harness import START_MS, Harness, accepted, q, t


def test_a_persistent_send_waits_for_the_store_and_a_non_persistent_one_does_not() -> None:
    harness = Harness()
    harness.connect("c1")
    region = harness.region
    durable = accepted(region.send("c1", harness.message(q("work"), persistent=True)))
    assert (durable.needs_commit, durable.duplicate) == (True, False)
    assert region.has_pending_writes()
    harness.collect()
    assert not region.has_pending_writes()
    fleeting = accepted(region.send("c1", harness.message(q("work"))))
    assert (fleeting.needs_commit, fleeting.duplicate) == (False, False)


def test_a_duplicate_is_not_stored_again_but_still_waits_for_the_commit() -> None:
    harness = Harness()
    harness.connect("c1")
    first = harness.message(q("work"), persistent=True, producer_message_id="p:1")
    again = harness.message(q("work"), persistent=True, producer_message_id="p:1")
    assert accepted(harness.region.send("c1", first)).duplicate is False
    outcome = accepted(harness.region.send("c1", again))
    assert (outcome.needs_commit, outcome.duplicate) == (True, True)
    harness.collect()
    assert len(harness.ops(AddMessage)) == 1


def test_a_refusal_is_returned_with_its_reason_and_fatal_flag() -> None:
    harness = Harness()
    harness.connect("c1", client_id="app")
    outcome = harness.region.send("c1", harness.message(q("work")), transaction="nope")
    assert not outcome.accepted
    assert outcome.refused is not None
    assert (outcome.refused.message, outcome.refused.fatal) == (
        "Invalid transaction id: nope",
        True,
    )
    taken = harness.region.add_connection("c2", "app")
    assert taken.refused is not None
    assert taken.refused.message == "Broker: localhost - Client: app already connected"
    assert "c2" not in harness.region.connections


def test_an_ack_waits_for_the_store_only_when_it_removes_a_stored_message() -> None:
    harness = Harness()
    harness.connect("c1")
    consumer = harness.subscribe("c1", "s", q("work"))
    harness.send("c1", q("work"), b"kept", persistent=True)
    harness.send("c1", q("work"), b"fleeting")
    kept, fleeting = harness.taken(consumer)
    region = harness.region
    assert region.acknowledge("c1", AckRef(ack_id=kept.ack_id)).needs_commit
    assert not region.acknowledge("c1", AckRef(ack_id=fleeting.ack_id)).needs_commit


def test_time_enters_as_an_argument() -> None:
    harness = Harness()
    assert harness.region.now_ms == START_MS
    harness.connect("c1")
    harness.send("c1", q("work"), b"late", expires=START_MS + 10)
    harness.region.begin_batch(START_MS + 10)
    consumer = harness.subscribe("c1", "s", q("work"))
    assert harness.taken(consumer) == []
    assert harness.region.queues[q("work")].stats.expired == 1
    harness.region.tick(START_MS + 500)
    assert harness.region.now_ms == START_MS + 500


def test_a_browser_sees_what_its_own_selector_selects_while_the_queue_has_consumers() -> None:
    harness = Harness()
    harness.connect("c1")
    harness.subscribe("c1", "busy", q("work"), selector="color = 'blue'", prefetch=1)
    for color in ("red", "blue", "red"):
        harness.send("c1", q("work"), color.encode(), properties={"color": color})
    browser = Consumer("c1", "b", q("work"), selector=parse_selector("color = 'red'"), browser=True)
    browsed = harness.region.browse(browser)
    assert [m.body for m in browsed.messages] == [b"red", b"red"]
    assert (browsed.container, browsed.paged_out) == ("queue://work", 0)


def test_no_local_is_keyed_by_the_connection_of_the_attached_consumer() -> None:
    """Queue consumers and topic subscriptions share one admission rule; a durable subscription
    with noLocal and no consumer attached collects its own client's messages too."""
    harness = Harness()
    harness.connect("c1", client_id="app")
    queue_consumer = harness.subscribe("c1", "q", q("work"), no_local=True)
    harness.send("c1", q("work"), b"own")
    assert harness.taken(queue_consumer) == []
    durable = harness.subscribe("c1", "d", t("news"), durable_name="mine", no_local=True)
    harness.send("c1", t("news"), b"own, online")
    assert harness.taken(durable) == []
    accepted(harness.region.unsubscribe("c1", "d"))
    harness.send("c1", t("news"), b"own, offline")
    again = harness.subscribe("c1", "d2", t("news"), durable_name="mine", no_local=True)
    assert harness.bodies(again) == [b"own, offline"]
