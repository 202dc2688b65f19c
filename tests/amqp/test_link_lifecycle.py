"""AMQP links through their life: what a refused, drained or closed link leaves behind, and the
messages from another protocol an AMQP consumer is handed (issue 17, review findings).

Each test is the reviewer's reproduction turned around: it asserts what a client must see (its
messages, its subscription, the connection still open), with python-qpid-proton's
``BlockingConnection`` as a user writes it, or frames written by hand (``wire``) where proton
would not send them (an aborted transfer, unfinished ones). The region is looked at only for the
dynamic nodes, whose lifetime a client cannot see otherwise.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from proton import Delivery, Described, Endpoint, Link, Message, Terminus, symbol, uint
from proton.reactor import AtMostOnce, DurableSubscription, Filter, LinkOption, Selector
from proton.utils import BlockingConnection, BlockingReceiver, LinkDetached

from ferrymq.core.region import RegionBroker
from ferrymq.testing import BrokerThread, broker_config, wait_until_blocking
from tests.amqp.proton_support import TIMEOUT_S, amqp_broker, blocking, close_link, region_of, url
from tests.amqp.wire import (
    ATTACH,
    DETACH,
    DISPOSITION,
    FLOW,
    TRANSFER,
    Frame,
    RawAmqp,
    attach_frame,
    message_bytes,
    performative,
)
from tests.fuzz.wire import RawConnection, frame

SELECTOR_DESCRIPTOR = symbol("apache.org:selector-filter:string")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[BrokerThread]:
    with amqp_broker(tmp_path) as broker:
        yield broker


def received(receiver: BlockingReceiver, count: int) -> list[object]:
    """``count`` message bodies, each accepted."""
    bodies: list[object] = []
    for _ in range(count):
        bodies.append(receiver.receive(timeout=TIMEOUT_S).body)
        receiver.accept()
    return bodies


# -- a STOMP message an AMQP consumer is handed -------------------------------------------------


@pytest.mark.parametrize("header", ["JMSXGroupSeq", "JMS_AMQP_ORIGINAL_ENCODING"])
def test_a_stomp_header_int_refuses_does_not_cost_the_amqp_consumer_its_connection(
    tmp_path: Path, header: str
) -> None:
    """'²' passes str.isdigit but not int(): rendering it for AMQP raised out of the dispatch,
    which ended the connection that dispatched (the producer's or the consumer's) and kept the
    message from everyone."""
    with (
        BrokerThread(broker_config(tmp_path / "data", amqp=True)) as served,
        RawConnection(served.port) as stomp,
        blocking(url(served)) as amqp,
    ):
        stomp.handshake("1.2")
        odd = amqp.create_receiver("queue://odd", credit=5)
        other = amqp.create_receiver("queue://plain", credit=5)
        send = ("destination", "/queue/odd"), (header, "\u00b2"), ("receipt", "r1")
        stomp.send(frame("SEND", *send, body=b"hello"))
        stomp.expect("RECEIPT")
        assert received(odd, 1) == ["hello"]
        stomp.send(frame("SEND", ("destination", "/queue/plain"), body=b"next"))
        stomp.send(frame("SEND", ("destination", "/queue/odd"), body=b"after"))
        assert received(other, 1) == ["next"]
        assert received(odd, 1) == ["after"]


# -- drain ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("presettled", [False, True], ids=["unsettled", "pre-settled"])
def test_a_drained_link_does_not_hoard_a_message_sent_after_the_drain(
    served: BrokerThread, presettled: bool
) -> None:
    """A drain that came back short leaves the link without credit: a message sent later goes
    to a consumer that has credit (pre-settled, the hoarded one was lost with the link)."""
    with blocking(url(served)) as drainer, blocking(url(served)) as other:
        options = AtMostOnce() if presettled else None
        drained = drainer.create_receiver("queue://hoard", credit=0, options=options).link
        drained.drain(5)
        drainer.wait(lambda: drained.credit == 0, timeout=TIMEOUT_S, msg="drain not answered")
        other.create_sender("queue://hoard").send(Message(body="m1"))
        consumer = other.create_receiver("queue://hoard", credit=10)
        assert received(consumer, 1) == ["m1"]
        assert drained.queued == 0


# -- refused links -------------------------------------------------------------------------------


def test_a_refused_link_with_a_live_link_s_name_leaves_the_live_one_delivering(
    served: BrokerThread,
) -> None:
    with blocking(url(served)) as consumer, blocking(url(served)) as producer:
        live = consumer.create_receiver(
            "queue://dupname", name="dup", credit=10, options=AtMostOnce()
        )
        assert consumer.conn is not None
        session = consumer.conn.session()
        session.open()
        second = session.receiver("dup")
        second.source.address = "queue://dupname"
        second.open()
        with pytest.raises(LinkDetached, match="amqp:not-allowed"):
            consumer.wait(lambda: bool(second.state & Endpoint.REMOTE_CLOSED), timeout=TIMEOUT_S)
        sender = producer.create_sender("queue://dupname")
        for n in range(3):
            sender.send(Message(body=f"m{n}"))
        assert [live.receive(timeout=TIMEOUT_S).body for _ in range(3)] == ["m0", "m1", "m2"]


def test_a_refused_reattach_keeps_the_durable_subscription_and_its_messages(
    served: BrokerThread,
) -> None:
    durable = DurableSubscription()
    with blocking(url(served), container_id="dc") as subscriber:
        subscriber.create_receiver("topic://t", name="sub1", options=durable)
    with blocking(url(served)) as producer:
        sender = producer.create_sender("topic://t")
        for n in range(2):
            sender.send(Message(body=f"m{n}", durable=True))
    with (
        blocking(url(served), container_id="dc") as subscriber,
        pytest.raises(LinkDetached, match="amqp:invalid-field"),
    ):
        subscriber.create_receiver("topic://t", name="sub1", options=[durable, Selector("a = ")])
    with blocking(url(served), container_id="dc") as subscriber:
        again = subscriber.create_receiver("topic://t", name="sub1", credit=10, options=durable)
        assert received(again, 2) == ["m0", "m1"]


# -- dynamic nodes -------------------------------------------------------------------------------


def temporary_queues(served: BrokerThread) -> int:
    region: RegionBroker = region_of(served)
    return served.call(lambda: sum(1 for d in region.queues if d.is_temporary))


def test_a_dynamic_source_s_queue_goes_when_its_link_closes(served: BrokerThread) -> None:
    with blocking(url(served)) as connection:
        for _ in range(3):
            receiver = connection.create_receiver(None, dynamic=True, credit=1)
            assert str(receiver.link.remote_source.address).startswith("temp-queue://")
            assert temporary_queues(served) == 1
            close_link(receiver)
            wait_until_blocking(
                lambda: temporary_queues(served) == 0, TIMEOUT_S, "the temporary queue deleted"
            )


class DynamicTarget(LinkOption):
    """What Qpid JMS's ``createTemporaryQueue`` attaches: a sender link with a dynamic target
    and the ``temporary-queue`` capability."""

    def apply(self, link: Link) -> None:
        target: Terminus = link.target
        target.dynamic = True
        capabilities = target.capabilities
        capabilities.put_array(False, capabilities.SYMBOL)
        capabilities.enter()
        capabilities.put_symbol(symbol("temporary-queue"))
        capabilities.exit()


def test_a_dynamic_target_is_a_temporary_queue_consumable_until_its_link_closes(
    served: BrokerThread,
) -> None:
    with blocking(url(served)) as connection:
        sender = connection.create_sender(None, options=DynamicTarget())
        address = str(sender.link.remote_target.address)
        assert address.startswith("temp-queue://")
        sender.send(Message(body="to the temporary queue"))
        receiver = connection.create_receiver(address, credit=1)
        assert received(receiver, 1) == ["to the temporary queue"]
        close_link(receiver)
        assert temporary_queues(served) == 1
        close_link(sender)
        wait_until_blocking(
            lambda: temporary_queues(served) == 0, TIMEOUT_S, "the temporary queue deleted"
        )


# -- filters -------------------------------------------------------------------------------------


def answered_filters(connection: BlockingConnection, filters: dict[symbol, Described]) -> object:
    receiver = connection.create_receiver("queue://filtered", credit=10, options=Filter(filters))
    answer = receiver.link.remote_source.filter
    answer.rewind()
    return answer.get_object() if answer.next() is not None else {}


def test_a_filter_the_broker_does_not_apply_is_left_out_of_its_attach(
    served: BrokerThread,
) -> None:
    """The filter set in the broker's attach says what it applies (AMQP 1.0 part 3.5.3): a
    client that needs a filter it left out can then refuse the link."""
    selector = Described(SELECTOR_DESCRIPTOR, "colour = 'red'")
    subject = Described(symbol("apache.org:legacy-amqp-direct-binding:string"), "only.this")
    with blocking(url(served)) as connection:
        answered = answered_filters(
            connection, {symbol("selector"): selector, symbol("subject-filter"): subject}
        )
        assert answered == {symbol("selector"): selector}


# -- transfers: store limits, binary tags, aborted and unfinished ones ---------------------------

STORE_LIMITS = """<broker xmlns="http://activemq.apache.org/schema/core" brokerName="limits">
  <systemUsage><systemUsage {policy}>
    <memoryUsage><memoryUsage limit="64 mb"/></memoryUsage>
    <storeUsage><storeUsage limit="50 kb"/></storeUsage>
    <tempUsage><tempUsage limit="1 gb"/></tempUsage>
  </systemUsage></systemUsage>
</broker>"""


def settled_send(connection: BlockingConnection, link: Link, tag: bytes, body: str) -> Delivery:
    """One durable message with this delivery tag, once the broker has settled it."""
    connection.wait(lambda: link.credit > 0, timeout=TIMEOUT_S, msg="no credit")
    delivery = link.delivery(tag)  # type: ignore[arg-type]  # typed str; a tag is binary
    link.send(Message(body=body, durable=True).encode())
    link.advance()
    connection.wait(lambda: delivery.remote_state != 0, timeout=TIMEOUT_S, msg="not settled")
    return delivery


@pytest.mark.parametrize(
    "policy", ['sendFailIfNoSpace="true"', 'sendFailIfNoSpaceAfterTimeout="300"']
)
def test_a_transfer_over_the_store_limit_is_rejected_and_the_connection_goes_on(
    tmp_path: Path, policy: str
) -> None:
    """As ActiveMQ fails the send (a ResourceAllocationException for a JMS producer): the
    transfer is rejected with the condition, not the connection closed."""
    config = broker_config(tmp_path / "data", xml=STORE_LIMITS.format(policy=policy), amqp=True)
    with BrokerThread(config) as served, blocking(url(served)) as connection:
        link = connection.create_sender("queue://full").link
        for n in range(20):  # 10 kB each: the 50 kB store is full after a few
            delivery = settled_send(connection, link, f"t{n}".encode(), "z" * 10_000)
            if delivery.remote_state != Delivery.ACCEPTED:
                break
        assert delivery.remote_state == Delivery.REJECTED
        condition = delivery.remote.condition
        assert condition is not None
        assert condition.name == "amqp:resource-limit-exceeded"
        assert received(connection.create_receiver("queue://full", credit=1), 1) == ["z" * 10_000]


def test_a_delivery_tag_that_is_not_utf8_is_accepted(served: BrokerThread) -> None:
    """Delivery tags are binary (AMQP 1.0 part 2.8.7): Qpid JMS's 129th tag is the byte 0x80."""
    with blocking(url(served)) as connection:
        link = connection.create_sender("queue://tags").link
        delivery = settled_send(connection, link, b"\x80", "tag 0x80")
        assert delivery.remote_state == Delivery.ACCEPTED
        assert received(connection.create_receiver("queue://tags", credit=1), 1) == ["tag 0x80"]


CHUNK = 16_000
LIMIT = 100_000


def transfer(
    handle: int, delivery_id: int, payload: bytes, *, more: bool = False, aborted: bool = False
) -> bytes:
    """A transfer frame (a part of one, with ``more``), or the abort of the delivery."""
    tag = f"t{delivery_id}".encode()
    fields = [uint(handle), uint(delivery_id), tag, uint(0), False, more, None, None, None]
    return performative(TRANSFER, [*fields, aborted], payload=payload)


def send_in_parts(
    raw: RawAmqp, handle: int, delivery_id: int, payload: bytes, *, last: bool
) -> None:
    """``payload`` in frames of ``CHUNK`` bytes; the last one ends the delivery when ``last``."""
    for offset in range(0, len(payload), CHUNK):
        more = not last or offset + CHUNK < len(payload)
        raw.send(transfer(handle, delivery_id, payload[offset : offset + CHUNK], more=more))


def attached(raw: RawAmqp, handle: int, address: str) -> object:
    """Attach a producer link; returns the broker's handle for it (its own numbering)."""
    raw.send(attach_frame(f"s{handle}", handle, sender=True, address=address))
    answered = raw.until(ATTACH)
    raw.until(FLOW)
    return answered.field(1)


def answer(raw: RawAmqp) -> Frame:
    """The broker's next frame that is not a credit top-up."""
    while (got := raw.read_frame()) is not None:
        if got.descriptor not in (FLOW, None):
            return got
    raise AssertionError(f"no answer from the broker (eof={raw.eof})")


def test_an_aborted_transfer_is_dropped_and_the_connection_goes_on(served: BrokerThread) -> None:
    """AMQP 1.0 part 2.7.5: an aborted delivery is discarded, nothing of it stored."""
    with RawAmqp(served.amqp_port) as raw:
        raw.handshake()
        attached(raw, 0, "queue://aborted")
        abandoned = message_bytes("should never be stored", durable=True)
        raw.send(transfer(0, 0, abandoned[:10], more=True))
        raw.send(transfer(0, 0, b"", aborted=True))
        raw.send(transfer(0, 1, message_bytes("the real one", durable=True)))
        disposition = answer(raw)
        assert (disposition.descriptor, disposition.field(1)) == (DISPOSITION, 1)
        assert disposition.refusal is None
    with blocking(url(served)) as connection:
        receiver = connection.create_receiver("queue://aborted", credit=1)
        assert received(receiver, 1) == ["the real one"]


def test_unfinished_transfers_of_detached_links_are_freed(tmp_path: Path) -> None:
    """A connection's unfinished transfers may hold twice the largest message: the one that
    passes that ends its link (amqp:resource-limit-exceeded). Links detached midway free
    theirs: abandoning them again and again does not use the budget up."""
    with (
        amqp_broker(tmp_path, f"wireFormat.maxFrameSize={LIMIT}") as served,
        RawAmqp(served.amqp_port) as raw,
    ):
        raw.handshake()
        for handle in range(4):  # 4 x 60 kB abandoned: more than the 200 kB budget
            attached(raw, handle, "queue://partial")
            send_in_parts(raw, handle, handle, b"x" * 60_000, last=False)
            raw.send(performative(DETACH, [uint(handle), True]))
            assert raw.until(DETACH).refusal is None
        attached(raw, 4, "queue://partial")
        send_in_parts(raw, 4, 4, message_bytes(b"y" * 60_000), last=True)
        whole = answer(raw)
        assert (whole.descriptor, whole.field(1), whole.refusal) == (DISPOSITION, 4, None)
        handles = {handle: attached(raw, handle, "queue://partial") for handle in (5, 6, 7)}
        for handle, size in ((5, 90_000), (6, 90_000), (7, 30_000)):
            send_in_parts(raw, handle, handle, b"z" * size, last=False)
        ended = answer(raw)
        assert (ended.descriptor, ended.field(0)) == (DETACH, handles[7])
        assert ended.refusal is not None
        assert ended.refusal.condition == "amqp:resource-limit-exceeded"
