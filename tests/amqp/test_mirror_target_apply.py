"""A mirror target applying what a scripted Artemis mirror source sends: mirrored sends
(routed, deduplicated per origin), acks (``postAck``, with their reasons, whatever state the
message is in) and the create/delete events. Each test names the reference scenario it
reproduces and the Artemis test behind it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from proton import Delivery, Message, symbol

from ferrymq.adapters.amqp import mirror_acks
from ferrymq.adapters.amqp.mirror_acks import ATTEMPTS, RETRY_DELAY_S
from ferrymq.core import codec
from ferrymq.core.destination import Destination
from ferrymq.core.mirror import MirrorSpec
from ferrymq.core.mirror_statistics import statistics_for
from ferrymq.testing import BrokerThread, broker_config, wait_until_blocking
from tests.amqp.mirror_source import (
    MirrorSource,
    add_address,
    create_queue,
    create_subscription,
    delete_address,
    delete_queue,
    mirrored_send,
    post_ack,
)
from tests.amqp.proton_support import blocking, close_link, region_of, url

ACCEPTED = Delivery.ACCEPTED
PRODUCER_ID = "ferrymq.producer-message-id"
Q = Destination.queue("Q")


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    with BrokerThread(broker_config(tmp_path, amqp=True)) as thread:
        yield thread


@pytest.fixture
def source(broker: BrokerThread) -> Iterator[MirrorSource]:
    with MirrorSource(broker.amqp_port) as scripted:
        yield scripted


def depth(broker: BrokerThread, destination: Destination = Q) -> int:
    region = region_of(broker)

    def read() -> int:
        queue = region.queues.get(destination)
        return -1 if queue is None else queue.depth

    return broker.call(read)


def subscription_depth(broker: BrokerThread, client_id: str, name: str) -> int:
    region = region_of(broker)

    def read() -> int:
        subscription = region.subscriptions.durable(client_id, name)
        return -1 if subscription is None else subscription.depth

    return broker.call(read)


def mirror_statistics(broker: BrokerThread) -> dict[str, int]:
    region = region_of(broker)
    return broker.call(lambda: statistics_for(region).as_dict())


def send_all(source: MirrorSource, *messages: object) -> list[int]:
    return source.settled([source.send(m) for m in messages])  # type: ignore[arg-type]


# -- mirrored sends --------------------------------------------------------------------------


def test_sends_keep_their_id_and_lose_the_clients_delivery_annotations(
    broker: BrokerThread, source: MirrorSource
) -> None:
    """Reference scenario 1 (basic replicate, AMQPReplicaTest.testReplica) and 8 (client
    delivery annotations are not mirrored, testNoAddressWithAnnotations)."""
    messages = [mirrored_send(f"m{i}", f"ID:src-1:{i}") for i in range(5)]
    messages[0].instructions[symbol("gone")] = "test"  # type: ignore[index]
    assert send_all(source, *messages) == [ACCEPTED] * 5
    assert depth(broker) == 5
    with blocking(url(broker)) as connection:
        receiver = connection.create_receiver("queue://Q", credit=5)
        received = [receiver.receive(timeout=10) for _ in range(5)]
        receiver.accept()
    assert [m.body for m in received] == [f"m{i}" for i in range(5)]
    assert [str(m.id) for m in received] == [f"ID:src-1:{i}" for i in range(5)]
    for message in received:
        assert not message.instructions, "a mirror's delivery annotations reach no consumer"
        annotations = {str(k) for k in (message.annotations or {})}
        properties: set[str] = set(message.properties or {})
        assert not any("amq-bkr" in name or "origin" in name for name in annotations | properties)


def test_a_send_sent_twice_is_stored_once(broker: BrokerThread, source: MirrorSource) -> None:
    """Reference scenario 9 (restart without duplicates, testRouteSurviving): the same transfer
    again, on the same link and after a reconnect, is accepted and not stored again."""
    assert send_all(source, mirrored_send("once", "ID:src-1:1")) == [ACCEPTED]
    assert send_all(source, mirrored_send("once", "ID:src-1:1")) == [ACCEPTED]
    source.drop()
    with MirrorSource(broker.amqp_port) as again:
        assert send_all(again, mirrored_send("once", "ID:src-1:1")) == [ACCEPTED]
    assert depth(broker) == 1
    assert mirror_statistics(broker)["duplicates"] == 2


def test_dedup_is_per_origin(broker: BrokerThread, source: MirrorSource) -> None:
    """The duplicate check is keyed by origin node and id (Artemis's cache per origin): the
    same id from another origin is another message; the same origin through another link (a
    chained mirror naming it in ``x-opt-amq-bkr-id``) is the same message."""
    send_all(source, mirrored_send("a", "ID:same:1"))
    send_all(source, mirrored_send("b", "ID:same:1", origin="other-node"))
    with MirrorSource(broker.amqp_port, node_id="relay-node") as relay:
        send_all(relay, mirrored_send("a", "ID:same:1", origin="source-node"))
    assert depth(broker) == 2


def test_sends_are_routed_to_the_mirrored_destination(
    broker: BrokerThread, source: MirrorSource
) -> None:
    """``x-opt-amq-mr-dst`` decides; without it, ``to`` does."""
    no_destination = mirrored_send("to", "ID:src-1:2", destination="queue://Other")
    no_destination.instructions.pop(symbol("x-opt-amq-mr-dst"))  # type: ignore[union-attr]
    send_all(source, mirrored_send("dst", "ID:src-1:1", destination="queue://Routed"))
    send_all(source, no_destination)
    assert depth(broker, Destination.queue("Routed")) == 1
    assert depth(broker, Destination.queue("Other")) == 1


# -- acks ------------------------------------------------------------------------------------


def test_post_ack_removes_the_message(broker: BrokerThread, source: MirrorSource) -> None:
    """Reference scenario 1, second half: consuming on the source removes on the target."""
    send_all(source, *(mirrored_send(f"m{i}", f"ID:src-1:{i}") for i in range(4)))
    assert (
        send_all(source, post_ack("Q", "ID:src-1:1"), post_ack("Q", "ID:src-1:2")) == [ACCEPTED] * 2
    )
    assert depth(broker) == 2
    with blocking(url(broker)) as connection:
        receiver = connection.create_receiver("queue://Q", credit=2)
        left = [str(receiver.receive(timeout=10).id) for _ in range(2)]
        receiver.accept()
    assert left == ["ID:src-1:0", "ID:src-1:3"]


def test_an_ack_for_an_unknown_message_is_given_up_quietly(
    broker: BrokerThread, source: MirrorSource, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reference scenario 21, "ack for an unknown message" (AMQPReplicaTest.
    testNotFoundRetries): NORMAL and EXPIRED acks for ids that never come stay unsettled while
    they are retried, then are accepted (no error), counted as given up."""
    monkeypatch.setattr(mirror_acks, "ATTEMPTS", 15)  # 1.5 s: room for a busy machine
    normal = source.send(post_ack("Q", "ID:nobody:1"))
    expired = source.send(post_ack("Q", "ID:nobody:2", reason=2))
    assert source.unsettled_after(normal, RETRY_DELAY_S * 3)
    assert source.settled([normal, expired], 15 * RETRY_DELAY_S + 10) == [ACCEPTED] * 2
    statistics = mirror_statistics(broker)
    assert statistics["acks_given_up"] == 2
    assert source.attached, "the link goes on"


def test_an_ack_that_overtakes_its_send_waits_for_it(
    broker: BrokerThread, source: MirrorSource, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reference scenario 22, "ack overtakes the send" (IT/AMQPMirrorFastACKTest): the ack is
    retried, unsettled, until the send arrives; then the queue ends with count 0 and
    messagesAdded 1."""
    monkeypatch.setattr(mirror_acks, "ATTEMPTS", 100)  # the send comes well within 10 s
    ack = source.send(post_ack("Q", "ID:src-1:1"))
    assert source.unsettled_after(ack, RETRY_DELAY_S * 1.5)
    assert send_all(source, mirrored_send("late", "ID:src-1:1")) == [ACCEPTED]
    assert source.settled([ack]) == [ACCEPTED]
    region = region_of(broker)
    assert broker.call(lambda: (region.queues[Q].depth, region.queues[Q].stats.enqueued)) == (
        0,
        1,
    )
    assert mirror_statistics(broker)["acks_given_up"] == 0


def test_an_ack_for_a_message_a_consumer_holds_is_not_lost(
    broker: BrokerThread, source: MirrorSource
) -> None:
    """The DOC's warning case ("if the message is in delivery to a consumer on the target"): the
    ack is accepted at once; when the consumer gives the message back it is dropped, not
    delivered again; when another consumer acks its message, that counts as the ack."""
    send_all(source, mirrored_send("held", "ID:src-1:1"), mirrored_send("kept", "ID:src-1:2"))
    with blocking(url(broker)) as connection:
        receiver = connection.create_receiver("queue://Q", credit=2)
        held = [receiver.receive(timeout=10) for _ in range(2)]
        assert [m.body for m in held] == ["held", "kept"]
        assert send_all(source, post_ack("Q", "ID:src-1:1")) == [ACCEPTED]
        close_link(receiver)  # both come back: the acked one is dropped
    wait_until_blocking(lambda: depth(broker) == 1, 10, "the released message back")
    with blocking(url(broker)) as connection:
        receiver = connection.create_receiver("queue://Q", credit=5)
        message = receiver.receive(timeout=10)
        assert message.body == "kept"
        assert send_all(source, post_ack("Q", "ID:src-1:2")) == [ACCEPTED]
        receiver.accept()
    wait_until_blocking(lambda: depth(broker) == 0, 10, "the queue empty")
    region = region_of(broker)
    assert broker.call(lambda: region.queues[Q].stats.dequeued) == 2


def test_expired_and_killed_acks_follow_the_local_policy(
    broker: BrokerThread, source: MirrorSource
) -> None:
    """Reference scenarios 17 and 18: an ack with reason EXPIRED (2) expires the target's copy
    and KILLED (1) dead-letters it, into the dead-letter queue the target's own policy names
    (ActiveMQ.DLQ by default): once each, not twice."""
    send_all(source, *(mirrored_send(f"m{i}", f"ID:src-1:{i}") for i in range(3)))
    send_all(
        source,
        post_ack("Q", "ID:src-1:0", reason=2),
        post_ack("Q", "ID:src-1:1", reason=1),
        post_ack("Q", "ID:src-1:2", reason=3),
    )
    assert depth(broker) == 0
    dlq = Destination.queue("ActiveMQ.DLQ")
    assert depth(broker, dlq) == 2
    region = region_of(broker)
    assert broker.call(lambda: region.queues[Q].stats.expired) == 1
    with blocking(url(broker)) as connection:
        receiver = connection.create_receiver("queue://ActiveMQ.DLQ", credit=2)
        dead = sorted(str(receiver.receive(timeout=10).id) for _ in range(2))
        receiver.accept()
    assert dead == ["ID:src-1:0", "ID:src-1:1"]


def test_an_ack_for_a_queue_the_target_lacks_is_given_up(
    broker: BrokerThread, source: MirrorSource
) -> None:
    """Artemis forgets an ack whose queue does not exist; here it is waited for as a message
    is (its create event may come next), then given up the same way."""
    ack = source.send(post_ack("Missing", "ID:src-1:1"))
    assert source.settled([ack], ATTEMPTS * RETRY_DELAY_S + 10) == [ACCEPTED]
    assert mirror_statistics(broker)["acks_given_up"] == 1


# -- create and delete -----------------------------------------------------------------------


def test_queue_and_address_events(broker: BrokerThread, source: MirrorSource) -> None:
    """Reference scenarios 5 and 6 (catch-up on creates, testSendCreateQueue, removal): create
    and delete events make and remove the queue, the topic (address)."""
    region = region_of(broker)
    send_all(source, create_queue("sometest"), add_address("news"))
    assert broker.call(lambda: Destination.queue("sometest") in region.queues)
    assert broker.call(lambda: Destination.topic("news") in region.topics)
    send_all(source, delete_queue("sometest"), delete_address("news"))
    assert broker.call(lambda: Destination.queue("sometest") not in region.queues)
    assert broker.call(lambda: Destination.topic("news") not in region.topics)
    assert send_all(source, delete_queue("sometest")) == [ACCEPTED], "deleting again is fine"


def test_durable_subscriptions_are_created_fed_acked_and_removed(
    broker: BrokerThread, source: MirrorSource
) -> None:
    """Reference scenario 11 (multicast durable subscriptions, testMulticast*): the
    subscription ``<clientId>.<subscriptionName>`` appears, gets the mirrored sends to its
    topic, and loses those acked on the source; deleting it removes it."""
    send_all(
        source,
        create_subscription("prices", "c1", "s1"),
        create_subscription("prices", "c2", "s2"),
    )
    sends = [
        mirrored_send(f"p{i}", f"ID:src-1:{i}", destination="topic://prices") for i in range(3)
    ]
    send_all(source, *sends)
    assert subscription_depth(broker, "c1", "s1") == 3
    assert subscription_depth(broker, "c2", "s2") == 3
    send_all(
        source,
        post_ack("c1.s1", "ID:src-1:0", address="topic://prices"),
        post_ack("c1.s1", "ID:src-1:1", address="topic://prices"),
    )
    assert subscription_depth(broker, "c1", "s1") == 1
    assert subscription_depth(broker, "c2", "s2") == 3
    send_all(source, delete_queue("c1.s1", address="topic://prices"))
    assert subscription_depth(broker, "c1", "s1") == -1
    assert subscription_depth(broker, "c2", "s2") == 3


# -- origin tagging --------------------------------------------------------------------------


def test_the_origin_is_stored_with_the_message_and_hidden_from_consumers(
    broker: BrokerThread, source: MirrorSource
) -> None:
    """Artemis stores ``x-opt-amq-bkr-id`` on the routed message (its broker property): the
    origin node is kept in the store's encoding, so onward mirrors and later acks can name it;
    a send that names no origin came from the link's node."""
    send_all(source, mirrored_send("a", "ID:src-1:1"), mirrored_send("b", "ID:x:1", origin="far"))
    region = region_of(broker)
    messages = broker.call(lambda: [e.message for e in region.queues[Q].pending])
    assert [m.origin_node for m in messages] == ["source-node", "far"]
    assert [codec.decode(codec.encode(m)).origin_node for m in messages] == ["source-node", "far"]


def test_applied_events_go_onward_but_never_back_to_the_peer(
    broker: BrokerThread, source: MirrorSource
) -> None:
    """Reference scenarios 12 and 13 (ring of three, AMQPChainedReplicaTest.testChained; dual
    mirror, BrokerInSyncTest.testSyncOnCreateQueues): no loop, no reflection. This target also
    mirrors to the peer whose link brings the events ("back"), to the node the message was first
    sent to ("origin", which is not the peer: a ring) and to a third node ("onward"). What it
    applies is never queued back to the peer (Artemis's "controller in use"); the send is not
    queued to its origin either, but the ack is: the origin holds the message."""
    region = region_of(broker)

    def configure() -> None:
        region.mirror.configure([MirrorSpec("back"), MirrorSpec("origin"), MirrorSpec("onward")])
        region.mirror.learn_peer("back", source.node_id)
        region.mirror.learn_peer("origin", "node-1")
        region.mirror.learn_peer("onward", "third-node")

    broker.call(configure)
    send_all(
        source,
        create_queue("Q"),
        mirrored_send("m", "ID:n1:1", origin="node-1"),
        post_ack("Q", "ID:n1:1", origin="node-1"),
    )
    assert depth(broker) == 0
    queued = broker.call(region.mirror.statistics)
    assert queued == {"back": 0, "origin": 2, "onward": 3}


def test_a_client_failing_over_to_the_target_is_deduplicated(
    broker: BrokerThread, source: MirrorSource
) -> None:
    """Better than Artemis: the producer's id of a mirrored message joins the target's duplicate
    window, so a client that fails over to the target (disaster recovery) and re-sends what it
    was unsure of does not store it twice."""
    mirrored = mirrored_send("once", "ID:src-1:1", properties={PRODUCER_ID: "client-7:1"})
    send_all(source, mirrored)
    with blocking(url(broker)) as connection:
        sender = connection.create_sender("queue://Q")
        sender.send(Message(body="once", durable=True, properties={PRODUCER_ID: "client-7:1"}))
        sender.send(Message(body="new", durable=True, properties={PRODUCER_ID: "client-7:2"}))
    assert depth(broker) == 2


def test_a_send_that_comes_back_to_its_origin_is_dropped(
    broker: BrokerThread, source: MirrorSource
) -> None:
    """A send whose origin is this very broker came back round a ring (a source that did not
    know its peer's id yet, Artemis's ARTEMIS-5067 case): accepted, not stored again."""
    region = region_of(broker)
    node_id = broker.call(lambda: region.node_id)
    assert send_all(source, mirrored_send("mine", "ID:here:1", origin=node_id)) == [ACCEPTED]
    assert depth(broker) == -1, "nothing was routed (not even the queue made)"
    assert mirror_statistics(broker)["duplicates"] == 1
