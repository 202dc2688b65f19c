"""Advisory topics: consumer, connection and destination advisories, with replay."""

from __future__ import annotations

import json

from tests.core.harness import Harness, accepted, q, t


def test_consumer_advisory_on_subscribe_and_unsubscribe(harness: Harness) -> None:
    harness.connect("c1")
    watcher = harness.subscribe("c1", "w", t("ActiveMQ.Advisory.Consumer.Queue.orders"))
    harness.connect("c2")
    harness.subscribe("c2", "s", q("orders"), selector="a = 1")
    (added,) = harness.taken(watcher)
    info = json.loads(added.entry.message.body)["ConsumerInfo"]
    assert info["destination"] == "queue://orders"
    assert info["selector"] == "a = 1"
    assert added.entry.message.properties["consumerCount"] == "1"
    assert added.entry.message.properties["originBrokerName"] == "localhost"
    accepted(harness.region.unsubscribe("c2", "s"))
    harness.collect()
    (removed,) = harness.taken(watcher)
    assert "RemoveInfo" in json.loads(removed.entry.message.body)
    assert removed.entry.message.properties["consumerCount"] == "0"


def test_existing_consumers_are_replayed_to_a_new_advisory_subscriber(harness: Harness) -> None:
    harness.connect("c1")
    harness.subscribe("c1", "a", q("one"))
    harness.subscribe("c1", "b", t("two"))
    watcher = harness.subscribe("c1", "w", t("ActiveMQ.Advisory.Consumer.>"))
    destinations = sorted(
        json.loads(d.entry.message.body)["ConsumerInfo"]["destination"]
        for d in harness.taken(watcher)
    )
    assert destinations == ["queue://one", "topic://two"]


def test_connection_and_destination_advisories(harness: Harness) -> None:
    harness.connect("watch")
    connections = harness.subscribe("watch", "c", t("ActiveMQ.Advisory.Connection"))
    queues = harness.subscribe("watch", "q", t("ActiveMQ.Advisory.Queue"))
    assert len(harness.taken(connections)) == 1  # replay of "watch" itself
    harness.connect("other")
    harness.send("other", q("fresh"), b"x")
    assert "ConnectionInfo" in json.loads(harness.taken(connections)[0].entry.message.body)
    created = [json.loads(d.entry.message.body) for d in harness.taken(queues)]
    assert {"destination": "queue://fresh", "operationType": 0} in [
        c["DestinationInfo"] for c in created
    ]


def test_no_advisories_when_disabled() -> None:
    harness = Harness(advisories=False)
    harness.connect("c1")
    watcher = harness.subscribe("c1", "w", t("ActiveMQ.Advisory.Consumer.>"))
    harness.subscribe("c1", "s", q("orders"))
    assert harness.taken(watcher) == []
