"""Topics in the core: fan-out, noLocal, wildcards, durable subscriptions."""

from __future__ import annotations

import pytest

from ferrymq.core.errors import BrokerError
from ferrymq.store.base import AddDurableSubscription, AddMessage, RemoveDurableSubscription
from tests.core.harness import Harness, accepted, q, t


def test_every_subscriber_gets_a_copy(harness: Harness) -> None:
    harness.connect("c1")
    subs = [harness.subscribe("c1", str(i), t("news")) for i in range(3)]
    harness.send("c1", t("news"), b"hello")
    assert [harness.bodies(s) for s in subs] == [[b"hello"]] * 3


def test_no_local_skips_own_messages(harness: Harness) -> None:
    harness.connect("c1")
    harness.connect("c2")
    own = harness.subscribe("c1", "s", t("chat"), no_local=True)
    other = harness.subscribe("c2", "s", t("chat"), no_local=True)
    harness.send("c1", t("chat"), b"from c1")
    assert harness.bodies(own) == []
    assert harness.bodies(other) == [b"from c1"]


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("prices.*", [b"prices.gold"]),
        ("prices.>", [b"prices.gold", b"prices.stock.ibm"]),
        ("*.stock.*", [b"prices.stock.ibm"]),
        ("prices.stock.ibm", [b"prices.stock.ibm"]),
    ],
)
def test_wildcard_topic_subscriptions(
    harness: Harness, pattern: str, expected: list[bytes]
) -> None:
    harness.connect("c1")
    sub = harness.subscribe("c1", "s", t(pattern))
    for name in ("prices.gold", "prices.stock.ibm", "other.stock"):
        harness.send("c1", t(name), name.encode())
    assert harness.bodies(sub) == expected


def test_topic_selector(harness: Harness) -> None:
    harness.connect("c1")
    sub = harness.subscribe("c1", "s", t("events"), selector="kind IN ('a', 'b')")
    for kind in "abc":
        harness.send("c1", t("events"), kind.encode(), properties={"kind": kind})
    assert harness.bodies(sub) == [b"a", b"b"]


def test_durable_subscription_keeps_messages_while_offline(harness: Harness) -> None:
    harness.connect("c1", client_id="app")
    harness.subscribe("c1", "s", t("news"), durable_name="mine")
    assert harness.ops(AddDurableSubscription)
    accepted(harness.region.remove_connection("c1"))
    harness.collect()
    harness.connect("p")
    harness.send("p", t("news"), b"while away", persistent=True)
    stored = [op for op in harness.ops(AddMessage) if op.container.startswith("durable:")]
    assert len(stored) == 1
    harness.connect("c2", client_id="app")
    back = harness.subscribe("c2", "s2", t("news"), durable_name="mine")
    assert harness.bodies(back) == [b"while away"]


def test_durable_needs_client_id(harness: Harness) -> None:
    harness.connect("c1")
    with pytest.raises(BrokerError, match="client id"):
        harness.subscribe("c1", "s", t("news"), durable_name="mine")


def test_durable_on_queue_is_refused(harness: Harness) -> None:
    harness.connect("c1", client_id="app")
    with pytest.raises(BrokerError, match="cannot durably subscribe to a Queue"):
        harness.subscribe("c1", "s", q("news"), durable_name="mine")


def test_durable_in_use_is_refused(harness: Harness) -> None:
    harness.connect("c1", client_id="app")
    harness.subscribe("c1", "s", t("news"), durable_name="mine")
    with pytest.raises(BrokerError, match="in use"):
        harness.subscribe("c1", "s2", t("news"), durable_name="mine")


def test_unsubscribe_with_name_destroys_durable(harness: Harness) -> None:
    harness.connect("c1", client_id="app")
    harness.subscribe("c1", "s", t("news"), durable_name="mine")
    accepted(harness.region.destroy_durable("c1", "mine"))
    harness.collect()
    assert harness.ops(RemoveDurableSubscription)
    assert harness.region.subscriptions.durable("app", "mine") is None
    harness.send("c1", t("news"), b"nobody listens", persistent=True)
    assert not [op for op in harness.ops(AddMessage) if op.container.startswith("durable:")]


def test_durable_resubscribe_with_new_selector_starts_empty(harness: Harness) -> None:
    harness.connect("c1", client_id="app")
    harness.subscribe("c1", "s", t("news"), durable_name="mine")
    accepted(harness.region.unsubscribe("c1", "s"))
    harness.collect()
    harness.send("c1", t("news"), b"old")
    again = harness.subscribe("c1", "s", t("news"), durable_name="mine", selector="x = 1")
    assert harness.bodies(again) == []


def test_non_persistent_topic_message_is_not_stored(harness: Harness) -> None:
    harness.connect("c1")
    harness.subscribe("c1", "s", t("news"))
    harness.send("c1", t("news"), b"x", persistent=True)
    assert harness.ops(AddMessage) == []
