"""python-qpid-proton's BlockingConnection, as a user writes it, against FerryMQ's AMQP
listener: settlement modes, durability, selectors, no-local, durable subscriptions across a
client restart, temporary queues, browsing, drain, large messages, outcomes and the DLQ, and a
client id (container-id) in use. The Container API, transactions, heart-beats and security are
in the other ``test_proton_*`` files."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from proton import Condition, ConnectionException, Delivery, Described, Message, Timeout, symbol
from proton.handlers import MessagingHandler
from proton.reactor import (
    AtLeastOnce,
    AtMostOnce,
    Copy,
    DurableSubscription,
    Filter,
    ReceiverOption,
    Selector,
)
from proton.utils import BlockingReceiver, LinkDetached

from ferrymq.testing import BrokerThread
from tests.amqp.proton_support import (
    ExactlyOnce,
    amqp_broker,
    attach,
    blocking,
    close_link,
    message_from,
    region_of,
    run_container,
    url,
)

NO_LOCAL = Filter({symbol("no-local"): Described(symbol("apache.org:no-local-filter:list"), [])})


@pytest.fixture
def served(tmp_path: Path) -> Iterator[BrokerThread]:
    with amqp_broker(tmp_path) as thread:
        yield thread


@pytest.mark.parametrize("durable", [True, False])
@pytest.mark.parametrize("mode", ["at-most-once", "at-least-once"])
def test_send_and_receive_in_each_settlement_mode(
    served: BrokerThread, mode: str, durable: bool
) -> None:
    option = AtMostOnce() if mode == "at-most-once" else AtLeastOnce()
    queue = f"queue://settle.{mode}.{durable}"
    with blocking(url(served)) as connection:
        sender = connection.create_sender(queue, options=option)
        for n in range(20):
            sender.send(Message(body=f"m{n}", durable=durable, properties={"n": n}))
        receiver = connection.create_receiver(queue, credit=5, options=option)
        received = []
        for _ in range(20):
            received.append(receiver.receive(timeout=10))
            if mode == "at-least-once":
                receiver.accept()  # proton accepts the oldest unsettled delivery
        close_link(receiver)
        assert [m.body for m in received] == [f"m{n}" for n in range(20)]
        assert {m.durable for m in received} == {durable}
        # Settled (pre-settled or accepted): nothing is left for the next consumer.
        again = connection.create_receiver(queue, credit=5)
        with pytest.raises(Timeout):
            again.receive(timeout=0.5)


def test_an_unsettled_delivery_goes_back_when_its_consumer_closes(served: BrokerThread) -> None:
    with blocking(url(served)) as connection:
        connection.create_sender("queue://unsettled").send(Message(body="keep me"))
        first = connection.create_receiver("queue://unsettled", credit=1)
        assert first.receive(timeout=10).body == "keep me"
        close_link(first)  # never accepted
        second = connection.create_receiver("queue://unsettled", credit=1)
        again = second.receive(timeout=10)
        second.accept()
        assert again.body == "keep me"


@pytest.mark.parametrize("side", ["receiver", "sender"])
def test_exactly_once_is_refused_cleanly_and_the_connection_goes_on(
    served: BrokerThread, side: str
) -> None:
    with blocking(url(served)) as connection:
        with pytest.raises(LinkDetached) as refused:
            attach(connection, side, "queue://exact", ExactlyOnce())
        assert "amqp:not-implemented" in str(refused.value)
        assert "exactly-once" in str(refused.value)
        connection.create_sender("queue://exact-after").send(Message(body="still here"))
        assert message_from(connection, "queue://exact-after").body == "still here"


def test_a_selector_picks_the_messages_that_match(served: BrokerThread) -> None:
    with blocking(url(served)) as connection:
        sender = connection.create_sender("queue://colours")
        for n, colour in enumerate(["red", "blue", "red", "green", "red"]):
            sender.send(Message(body=f"{colour}-{n}", properties={"colour": colour, "n": n}))
        reds = connection.create_receiver(
            "queue://colours", credit=10, options=Selector("colour = 'red' AND n > 0")
        )
        got = [reds.receive(timeout=10).body for _ in range(2)]
        reds.accept()
        with pytest.raises(Timeout):
            reds.receive(timeout=0.5)
        close_link(reds)
        rest = connection.create_receiver("queue://colours", credit=10)
        others = [rest.receive(timeout=10).body for _ in range(3)]
        rest.accept()
    assert got == ["red-2", "red-4"]
    assert others == ["red-0", "blue-1", "green-3"]


def test_a_bad_selector_is_refused_on_the_link(served: BrokerThread) -> None:
    with blocking(url(served)) as connection:
        with pytest.raises(LinkDetached, match="amqp:invalid-field"):
            connection.create_receiver("queue://q", options=Selector("colour = = 'red'"))
        connection.create_sender("queue://q").send(Message(body="fine"))


def test_no_local_hides_the_connections_own_messages(served: BrokerThread) -> None:
    with blocking(url(served)) as mine, blocking(url(served)) as theirs:
        receiver = mine.create_receiver("topic://news", credit=10, options=NO_LOCAL)
        mine.create_sender("topic://news").send(Message(body="own"))
        theirs.create_sender("topic://news").send(Message(body="other"))
        assert receiver.receive(timeout=10).body == "other"
        receiver.accept()
        with pytest.raises(Timeout):
            receiver.receive(timeout=0.5)


def _modify(receiver: BlockingReceiver, *, undeliverable: bool = False) -> None:
    """modified(delivery-failed) on the oldest unsettled delivery: proton's ``release()`` says
    modified without delivery-failed, which ActiveMQ takes as a release."""
    assert receiver.fetcher is not None
    delivery = receiver.fetcher.unsettled.popleft()
    delivery.local.failed = True
    delivery.local.undeliverable = undeliverable
    delivery.update(Delivery.MODIFIED)
    delivery.settle()


def _durable(served: BrokerThread, client_id: str, name: str) -> object:
    region = region_of(served)
    return served.call(lambda: region.subscriptions.durable(client_id, name))


def test_a_durable_subscription_survives_a_client_restart_and_closing_it_unsubscribes(
    served: BrokerThread,
) -> None:
    options: list[ReceiverOption] = [DurableSubscription()]
    with blocking(url(served), container_id="durable-client") as first:
        receiver = first.create_receiver("topic://prices", name="sub1", options=options)
        first.create_sender("topic://prices").send(Message(body="while online", durable=True))
        assert receiver.receive(timeout=10).body == "while online"
        receiver.accept()
        # The client goes away without closing its link: the subscription stays.
    assert _durable(served, "durable-client", "sub1") is not None
    with blocking(url(served)) as publisher:
        sender = publisher.create_sender("topic://prices")
        for n in range(3):
            sender.send(Message(body=f"offline {n}", durable=True))
    with blocking(url(served), container_id="durable-client") as second:
        receiver = second.create_receiver("topic://prices", name="sub1", options=options)
        missed = [receiver.receive(timeout=10).body for _ in range(3)]
        receiver.accept()
        close_link(receiver)  # detach with closed=true: unsubscribe
        assert missed == ["offline 0", "offline 1", "offline 2"]
        assert _durable(served, "durable-client", "sub1") is None


def test_a_temporary_queue_carries_the_reply_to_a_request(served: BrokerThread) -> None:
    with blocking(url(served)) as service, blocking(url(served)) as client:
        requests = service.create_receiver("queue://requests", credit=1)
        replies = client.create_receiver(None, dynamic=True, credit=1)
        reply_to = replies.link.remote_source.address
        assert reply_to is not None
        assert reply_to.startswith("temp-queue://")
        client.create_sender("queue://requests").send(
            Message(body="what time is it?", reply_to=reply_to, correlation_id="c-1")
        )
        request = requests.receive(timeout=10)
        requests.accept()
        assert request.reply_to == reply_to
        relay = service.create_sender(None)  # anonymous relay: ``to`` names the destination
        relay.send(
            Message(address=request.reply_to, body="noon", correlation_id=request.correlation_id)
        )
        reply = replies.receive(timeout=10)
        replies.accept()
    assert (reply.body, reply.correlation_id) == ("noon", "c-1")


def test_a_copy_receiver_browses_without_consuming(served: BrokerThread) -> None:
    with blocking(url(served)) as connection:
        sender = connection.create_sender("queue://browsed")
        for n in range(3):
            sender.send(Message(body=f"b{n}"))
        browser = connection.create_receiver("queue://browsed", credit=10, options=Copy())
        seen = [browser.receive(timeout=10).body for _ in range(3)]
        close_link(browser)
        consumer = connection.create_receiver("queue://browsed", credit=10)
        taken = [consumer.receive(timeout=10).body for _ in range(3)]
        consumer.accept()
    assert seen == taken == ["b0", "b1", "b2"]


def test_drain_uses_up_the_credit_when_the_queue_runs_dry(served: BrokerThread) -> None:
    with blocking(url(served)) as connection:
        sender = connection.create_sender("queue://drained")
        for n in range(2):
            sender.send(Message(body=f"d{n}"))
        receiver = connection.create_receiver("queue://drained", credit=0)
        link = receiver.link
        link.drain(10)
        connection.wait(lambda: link.credit == 0, timeout=10, msg="drain not answered")
        assert [receiver.receive(timeout=1).body for _ in range(2)] == ["d0", "d1"]
        receiver.accept()


def test_a_10_mb_message_crosses_in_many_frames(served: BrokerThread) -> None:
    body = bytes(range(256)) * (10 * 1024 * 1024 // 256)
    with blocking(url(served)) as connection:
        connection.create_sender("queue://large").send(Message(body=body, durable=True))
        receiver = connection.create_receiver("queue://large", credit=1)
        received = receiver.receive(timeout=60)
        receiver.accept()
        transport = connection.conn.transport if connection.conn is not None else None
        assert transport is not None
        max_frame = transport.remote_max_frame_size
    assert 0 < max_frame < len(body)
    assert received.body == body


def test_released_modified_and_rejected_outcomes(served: BrokerThread) -> None:
    with blocking(url(served)) as connection:
        sender = connection.create_sender("queue://outcomes")
        sender.send(Message(body="o1", durable=True))  # ActiveMQ dead-letters persistent ones
        receiver = connection.create_receiver("queue://outcomes", credit=1)
        first = receiver.receive(timeout=10)
        receiver.release(delivered=False)  # released: back, not counted
        second = receiver.receive(timeout=10)
        receiver.release(delivered=True)  # modified, not delivery-failed: not counted either
        third = receiver.receive(timeout=10)
        _modify(receiver)  # modified(delivery-failed): counted
        fourth = receiver.receive(timeout=10)
        receiver.reject()  # rejected: dead letter at once
        sender.send(Message(body="o2", durable=True))
        fifth = receiver.receive(timeout=10)
        _modify(receiver, undeliverable=True)  # undeliverable-here: dead letter too
        dlq = connection.create_receiver("queue://ActiveMQ.DLQ", credit=2)
        dead = [dlq.receive(timeout=10) for _ in range(2)]
        dlq.accept()
        dlq.accept()
    assert [m.body for m in (first, second, third, fourth, fifth)] == ["o1"] * 4 + ["o2"]
    assert [m.delivery_count for m in (first, second, third, fourth)] == [0, 0, 0, 1]
    assert [m.body for m in dead] == ["o1", "o2"]


def test_a_message_failing_more_than_maximum_redeliveries_goes_to_the_dlq(
    served: BrokerThread,
) -> None:
    with blocking(url(served)) as connection:
        connection.create_sender("queue://poison").send(Message(body="poison", durable=True))
        receiver = connection.create_receiver("queue://poison", credit=1)
        counts = []
        for _ in range(10):  # ActiveMQ's default maximumRedeliveries is 6
            try:
                message = receiver.receive(timeout=2)
            except Timeout:  # dead-lettered
                break
            counts.append(message.delivery_count)
            _modify(receiver)
        dlq = connection.create_receiver("queue://ActiveMQ.DLQ", credit=1)
        dead = dlq.receive(timeout=10)
        dlq.accept()
    assert counts == [0, 1, 2, 3, 4, 5, 6]
    assert dead.body == "poison"


class RefusedOpen(MessagingHandler):
    """Opens a connection with ``container_id`` and records how the broker closed it."""

    def __init__(self, address: str, container_id: str) -> None:
        super().__init__()
        self.address, self.container_id = address, container_id
        self.condition: Condition | None = None
        self.properties: object = None

    def on_start(self, event: Any) -> None:
        event.container.container_id = self.container_id
        event.container.connect(self.address, reconnect=False)

    def on_connection_remote_close(self, event: Any) -> None:
        connection = event.connection
        self.condition = connection.remote_condition
        self.properties = connection.remote_properties
        connection.close()

    def on_connection_error(self, event: Any) -> None:
        self.on_connection_remote_close(event)

    def on_transport_error(self, event: Any) -> None:
        event.connection.close()


def test_a_second_connection_with_the_same_container_id_is_refused(
    served: BrokerThread,
) -> None:
    with blocking(url(served), container_id="only-once") as first:
        second = RefusedOpen(url(served), "only-once")
        run_container(second)
        # As Qpid JMS reads ActiveMQ's refusal (an InvalidClientIDException).
        condition = second.condition
        assert condition is not None
        assert condition.name == "amqp:invalid-field"
        assert condition.info == {symbol("invalid-field"): symbol("container-id")}
        assert "only-once" in str(condition.description)
        assert second.properties == {symbol("amqp:connection-establishment-failed"): True}
        first.create_sender("queue://still-open").send(Message(body="ok"))
    # Once the first has gone, the id is free again.
    deadline = time.monotonic() + 10
    while True:
        try:
            with blocking(url(served), container_id="only-once") as again:
                again.create_sender("queue://x").send(Message(body="now"))
            break
        except ConnectionException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
