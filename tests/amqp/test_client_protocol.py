"""The client's AMQP 1.0 engine (``ferrymq.amqp.client``) and its STOMP translation
(``ferrymq.client.amqp_session``), driven against proton's own server-side engine in memory:
bytes passed back and forth by hand, no sockets, so every performative the client sends is
checked by an independent AMQP implementation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, cast

import pytest
from proton import (
    Collector,
    Condition,
    Connection,
    Delivery,
    Endpoint,
    Event,
    Link,
    Message,
    Terminus,
    Transport,
)

from ferrymq.amqp.client import (
    Arrived,
    BrowseEnded,
    ClientEngine,
    Closed,
    EngineEvent,
    LinkClosed,
    LinkOpened,
    Opened,
    Outcome,
    SubscriptionSpec,
)
from ferrymq.amqp.client_mapping import address_for, message_for_send, message_headers
from ferrymq.client.amqp_session import AmqpSession
from ferrymq.client.commands import (
    Abort,
    Acknowledge,
    Begin,
    Commit,
    Disconnect,
    Send,
    Subscribe,
    Unsubscribe,
)
from ferrymq.stomp.events import ErrorEvent, MessageEvent, ReceiptEvent

COORDINATOR = 3  # Terminus.COORDINATOR's type code


class Peer:
    """A minimal AMQP server: proton's engine in server mode, queues as lists."""

    def __init__(self) -> None:
        self.connection = Connection()
        self.collector = Collector()
        self.connection.collect(self.collector)
        self.transport = Transport(Transport.SERVER)
        self.transport.sasl().allowed_mechs("ANONYMOUS")
        self.transport.bind(self.connection)
        self.received: list[tuple[Any, Any, Any, Any]] = []
        """(target address, message, remote state, transactional data) per transfer."""
        self.queues: dict[str, list[Message]] = {}
        self.links: dict[str, Link] = {}
        self.attached: list[Link] = []
        self.settled: list[tuple[Any, Any]] = []
        """(state, transactional data) of each delivery the client settled."""
        self.refuse: set[str] = set()
        self.reject: set[str] = set()
        self.discharged: list[tuple[bytes, bool]] = []
        self.closes: list[tuple[str, bool]] = []
        """(link name, closed) per detach from the client."""

    def feed(self, data: bytes) -> bytes:
        if data:
            self.transport.push(data)
        while (event := self.collector.peek()) is not None:
            self._on(event)
            self.collector.pop()
        for link in list(self.links.values()):
            if link.is_sender:
                self._dispatch(link)
        pending = self.transport.pending()
        if pending <= 0:
            return b""
        out = bytes(cast(bytes, self.transport.peek(pending)))
        self.transport.pop(len(out))
        return out

    def _on(self, event: Any) -> None:
        kind = event.type
        if kind == Event.CONNECTION_REMOTE_OPEN:
            self.connection.open()
        elif kind == Event.SESSION_REMOTE_OPEN:
            event.session.open()
        elif kind == Event.LINK_REMOTE_OPEN:
            self._attach(event.link)
        elif kind in (Event.LINK_REMOTE_CLOSE, Event.LINK_REMOTE_DETACH):
            link = event.link
            self.closes.append((link.name, kind == Event.LINK_REMOTE_CLOSE))
            self.links.pop(link.name, None)
            if link.state & Endpoint.LOCAL_ACTIVE:
                link.close()
        elif kind == Event.CONNECTION_REMOTE_CLOSE:
            self.connection.close()
        elif kind == Event.DELIVERY:
            self._delivery(event.delivery)

    def _attach(self, link: Any) -> None:
        terminus = link.remote_source if link.is_sender else link.remote_target
        address = terminus.address
        self.attached.append(link)
        if address in self.refuse:
            link.open()
            link.condition = Condition("amqp:unauthorized-access", f"no access to {address}")
            link.close()
            return
        if link.is_sender:
            link.source.address = address
        else:
            link.target.copy(link.remote_target)
            link.flow(100)
        link.open()
        self.links[link.name] = link

    def _delivery(self, delivery: Any) -> None:
        link = delivery.link
        if link.is_sender:
            if delivery.updated:
                data = delivery.remote.data if delivery.remote_state == 0x34 else None
                self.settled.append((delivery.remote_state, data))
                delivery.settle()
            return
        if not delivery.readable or delivery.partial:
            return
        message = Message()
        message.decode(link.recv(delivery.pending))
        link.advance()
        if link.remote_target.type == COORDINATOR:
            self._control(delivery, message)
        else:
            address = link.remote_target.address
            data = delivery.remote.data if delivery.remote_state == 0x34 else None
            self.received.append((address, message, delivery.remote_state, data))
            if address in self.reject:
                delivery.local.condition = Condition("amqp:not-allowed", "refused by the test")
                delivery.update(Delivery.REJECTED)
            else:
                delivery.update(Delivery.ACCEPTED)
        delivery.settle()
        link.flow(1)

    def _control(self, delivery: Any, message: Any) -> None:
        body = message.body
        if body.descriptor == 0x31:  # declare
            delivery.local.data = [b"txn-1"]
            delivery.update(0x33)
        else:
            txn_id, failed = body.value
            self.discharged.append((bytes(txn_id), bool(failed)))
            delivery.update(Delivery.ACCEPTED)

    def _dispatch(self, link: Any) -> None:
        queue = self.queues.get(link.remote_source.address or "", [])
        while queue and link.credit > 0:
            message = queue.pop(0)
            delivery = link.delivery(str(id(message)))
            link.send(message.encode())
            link.advance()
            if link.remote_snd_settle_mode == Link.SND_SETTLED:
                delivery.settle()
        if link.drain_mode and not queue:
            link.drained()

    def link(self, name_part: str) -> Link:
        return next(link for link in self.attached if name_part in link.name)


def data_object(data: Any) -> Any:
    data.rewind()
    data.next()
    return data.get_object()


def shuttle(engine: ClientEngine, peer: Peer, rounds: int = 20) -> list[EngineEvent]:
    """Pass bytes both ways until both sides are quiet; the client's events in order."""
    events: list[EngineEvent] = []
    for _ in range(rounds):
        out = engine.data_to_send()
        back = peer.feed(out)
        events += engine.receive_data(back) if back else engine.events()
        if not out and not back:
            return events
    raise AssertionError("the two engines never went quiet")


@pytest.fixture
def pair() -> tuple[ClientEngine, Peer]:
    engine = ClientEngine(hostname="localhost", container_id="client-1")
    peer = Peer()
    engine.open()
    events = shuttle(engine, peer)
    assert any(isinstance(event, Opened) for event in events)
    return engine, peer


def test_open_names_the_client_id_as_container_id(pair: tuple[ClientEngine, Peer]) -> None:
    _, peer = pair
    assert peer.connection.remote_container == "client-1"
    assert peer.connection.remote_hostname == "localhost"


def test_a_send_maps_stomp_headers_to_amqp_fields(pair: tuple[ClientEngine, Peer]) -> None:
    engine, peer = pair
    headers = {
        "persistent": "true",
        "priority": "7",
        "expires": "4102444800000",
        "correlation-id": "c-1",
        "reply-to": "/topic/replies",
        "type": "order",
        "content-type": "text/plain",
        "ferrymq.producer-message-id": "p:1",
        "custom": "x y",
    }
    message = message_for_send("/queue/orders", b"\x00body\xff", headers)
    engine.send("k1", message.address or "", message.encode())
    events = shuttle(engine, peer)
    assert events == [Outcome("k1", accepted=True)]
    address, got, _, _ = peer.received[0]
    assert address == "queue://orders"
    assert bytes(got.body) == b"\x00body\xff"
    assert got.durable
    assert got.priority == 7
    assert got.expiry_time == 4102444800.0
    assert (got.correlation_id, got.reply_to, got.subject) == ("c-1", "topic://replies", "order")
    assert str(got.content_type) == "text/plain"
    assert got.properties == {"ferrymq.producer-message-id": "p:1", "custom": "x y"}


def test_a_rejected_send_reports_the_brokers_reason(pair: tuple[ClientEngine, Peer]) -> None:
    engine, peer = pair
    peer.reject.add("queue://bad")
    engine.send("k1", "queue://bad", message_for_send("/queue/bad", b"", {}).encode())
    [outcome] = shuttle(engine, peer)
    assert outcome == Outcome("k1", False, "amqp:not-allowed: refused by the test")


def test_a_refused_link_closes_with_the_condition(pair: tuple[ClientEngine, Peer]) -> None:
    engine, peer = pair
    peer.refuse.add("queue://secret")
    engine.subscribe(SubscriptionSpec("s1", "queue://secret"))
    events = shuttle(engine, peer)
    assert events == [LinkClosed("s1", "amqp:unauthorized-access: no access to queue://secret")]


def test_client_acknowledgement_settles_unsettled_deliveries(
    pair: tuple[ClientEngine, Peer],
) -> None:
    engine, peer = pair
    peer.queues["queue://q"] = [Message(body=f"m{n}", durable=True) for n in range(3)]
    engine.subscribe(SubscriptionSpec("s1", "queue://q", prefetch=3, settle_first=False))
    events = shuttle(engine, peer)
    arrived = [event for event in events if isinstance(event, Arrived)]
    assert events[0] == LinkOpened("s1")
    assert [event.delivery for event in arrived] == [1, 2, 3]
    sender = peer.link("receiver-")
    assert sender.credit == 0  # the prefetch is used up until something is settled
    engine.settle_up_to("s1", 2)  # STOMP's cumulative client ack
    engine.settle(3, "rejected")  # STOMP's NACK
    shuttle(engine, peer)
    assert sorted(state for state, _ in peer.settled) == [
        Delivery.ACCEPTED,
        Delivery.ACCEPTED,
        Delivery.REJECTED,
    ]
    assert sender.credit == 3


def test_auto_acknowledgement_asks_for_settled_deliveries(
    pair: tuple[ClientEngine, Peer],
) -> None:
    engine, peer = pair
    peer.queues["queue://q"] = [Message(body=b"a"), Message(body=b"b")]
    engine.subscribe(SubscriptionSpec("s1", "queue://q", prefetch=4))
    events = shuttle(engine, peer)
    assert peer.link("receiver-").remote_snd_settle_mode == Link.SND_SETTLED
    assert [e.delivery for e in events if isinstance(e, Arrived)] == [0, 0]
    assert peer.settled == []  # nothing to settle: the broker sent them settled


def test_selector_no_local_and_capability_are_on_the_source(
    pair: tuple[ClientEngine, Peer],
) -> None:
    engine, peer = pair
    spec = SubscriptionSpec("s1", "topic://t", selector="a > 1", no_local=True, capability="topic")
    engine.subscribe(spec)
    shuttle(engine, peer)
    source = peer.link("receiver-").remote_source
    filters = data_object(source.filter)
    selector = filters["jms-selector"]
    assert (str(selector.descriptor), selector.value) == (
        "apache.org:selector-filter:string",
        "a > 1",
    )
    assert str(filters["no-local"].descriptor) == "apache.org:no-local-filter:list"
    assert str(data_object(source.capabilities)) == "topic"


def test_a_durable_subscription_is_made_as_qpid_jms_makes_it(
    pair: tuple[ClientEngine, Peer],
) -> None:
    engine, peer = pair
    engine.subscribe(SubscriptionSpec("s1", "topic://t", durable_name="sub-a"))
    shuttle(engine, peer)
    link = peer.link("sub-a")
    assert link.name == "sub-a"
    assert link.remote_source.durability == Terminus.DELIVERIES
    assert link.remote_source.expiry_policy == Terminus.EXPIRE_NEVER
    engine.unsubscribe("s1", remove=False)
    assert shuttle(engine, peer) == [LinkClosed("s1", None)]
    assert peer.closes == [("sub-a", False)]  # detached: the subscription stays
    # Removing it when it is not attached: attach by name, then close (Qpid JMS's unsubscribe).
    assert engine.unsubscribe("s1", remove=True, durable_name="sub-a")
    assert shuttle(engine, peer) == [LinkClosed("s1", None)]
    assert peer.closes[-1] == ("sub-a", True)


def test_a_browser_copies_and_ends_when_a_drain_comes_back_short(
    pair: tuple[ClientEngine, Peer],
) -> None:
    engine, peer = pair
    peer.queues["queue://q"] = [Message(body=b"1"), Message(body=b"2")]
    engine.subscribe(SubscriptionSpec("s1", "queue://q", prefetch=10, browser=True))
    events = shuttle(engine, peer)
    assert peer.link("receiver-").remote_source.distribution_mode == Terminus.DIST_MODE_COPY
    assert [type(event) for event in events] == [LinkOpened, Arrived, Arrived, BrowseEnded]


def test_transactions_declare_and_discharge_on_the_coordinator(
    pair: tuple[ClientEngine, Peer],
) -> None:
    engine, peer = pair
    engine.declare("d")
    [declared] = shuttle(engine, peer)
    assert declared == Outcome("d", accepted=True, txn_id=b"txn-1")
    engine.send("k", "queue://q", message_for_send("/queue/q", b"x", {}).encode(), b"txn-1")
    assert shuttle(engine, peer) == [Outcome("k", accepted=True)]
    _, _, state, data = peer.received[0]
    assert state == 0x34
    assert bytes(data[0]) == b"txn-1"
    engine.discharge("c", b"txn-1", fail=True)
    assert shuttle(engine, peer) == [Outcome("c", accepted=True)]
    assert peer.discharged == [(b"txn-1", True)]


def test_a_silent_broker_is_detected_by_the_idle_timeout() -> None:
    engine = ClientEngine(hostname="localhost", container_id="c", idle_timeout_s=2.0)
    peer = Peer()
    engine.open()
    shuttle(engine, peer)
    assert peer.transport.remote_idle_timeout == 1.0  # proton advertises half its timeout
    engine.tick(100.0)
    engine.tick(102.5)  # nothing from the broker for more than the idle timeout
    assert engine.data_to_send()  # the close, with the reason, for the broker
    assert engine.events() == [Closed("amqp:resource-limit-exceeded: local-idle-timeout expired")]


def test_a_received_message_becomes_stomp_headers() -> None:
    message = Message(
        id="ID:b-1",
        address="queue://q",
        body="text",
        durable=True,
        priority=8,
        correlation_id=12,
        reply_to="temp-queue://r",
        subject="kind",
        properties={"flag": True, "n": 3, "ferrymq.producer-message-id": "p:9"},
        delivery_count=2,
        expiry_time=4102444800.0,
    )
    destination, message_id, headers, body = message_headers(message)
    assert (destination, message_id, body) == ("/queue/q", "ID:b-1", b"text")
    assert headers["flag"] == "true"
    assert headers["n"] == "3"
    assert headers["ferrymq.producer-message-id"] == "p:9"
    assert headers["persistent"] == "true"
    assert headers["priority"] == "8"
    assert headers["correlation-id"] == "ID:AMQP_ULONG:12"
    assert headers["reply-to"] == "/temp-queue/r"
    assert headers["type"] == "kind"
    assert headers["redelivered"] == "true"
    assert headers["expires"] == "4102444800000"
    assert "content-type" not in headers


@pytest.mark.parametrize(
    ("stomp", "amqp"),
    [("/queue/a.b", "queue://a.b"), ("/topic/t", "topic://t"), ("plain", "plain")],
)
def test_addresses(stomp: str, amqp: str) -> None:
    assert address_for(stomp) == amqp


# ---- the STOMP translation ----


def session_pair() -> tuple[AmqpSession, Peer, Callable[[], list[Any]]]:
    engine = ClientEngine(hostname="localhost", container_id="c")
    peer = Peer()
    engine.open()
    shuttle(engine, peer)
    session = AmqpSession(engine)
    return session, peer, lambda: session.events(shuttle(engine, peer))


async def test_stomp_commands_get_their_receipts_from_amqp_outcomes() -> None:
    session, peer, run = session_pair()
    session.command(Send("/queue/q", b"a", {"persistent": "true"}, receipt="r-1"))
    assert run() == [ReceiptEvent("r-1")]
    peer.reject.add("queue://no")
    session.command(Send("/queue/no", b"a", {}, receipt="r-2"))
    [error] = run()
    assert isinstance(error, ErrorEvent)
    assert error.receipt_id == "r-2"
    assert "refused by the test" in error.message
    session.command(Subscribe("s1", "/queue/q", "client-individual", None, {}, receipt="r-3"))
    assert run() == [ReceiptEvent("r-3")]


async def test_a_stomp_transaction_over_the_coordinator() -> None:
    session, peer, run = session_pair()
    declared: asyncio.Future[bytes | None] = asyncio.get_running_loop().create_future()
    session.begin(Begin("tx-1", receipt="r-1"), declared)
    assert run() == [ReceiptEvent("r-1")]
    txn_id = declared.result()
    assert txn_id is not None
    session.declared("tx-1", txn_id)
    session.command(Send("/queue/q", b"a", {}, transaction="tx-1"))
    session.command(Commit("tx-1", receipt="r-2"))
    assert run() == [ReceiptEvent("r-2")]
    assert peer.discharged == [(b"txn-1", False)]
    with pytest.raises(Exception, match="was not begun"):
        session.command(Abort("tx-1"))


async def test_messages_acks_browse_end_and_disconnect() -> None:
    session, peer, run = session_pair()
    peer.queues["queue://q"] = [Message(id="ID:1", body=b"x", address="queue://q")]
    session.command(Subscribe("s1", "/queue/q", "client", None, {}, receipt=None))
    [message] = run()
    assert isinstance(message, MessageEvent)
    assert (message.destination, message.message_id, message.subscription) == (
        "/queue/q",
        "ID:1",
        "s1",
    )
    assert message.ack == "1"
    assert message.headers["ack"] == "1"
    assert session.command(Acknowledge(message, receipt="r-1")) == [ReceiptEvent("r-1")]
    run()
    assert [state for state, _ in peer.settled] == [Delivery.ACCEPTED]
    peer.queues["queue://b"] = [Message(body=b"y")]
    headers = {"browser": "true", "activemq.prefetchSize": "5"}
    session.command(Subscribe("s2", "/queue/b", "auto", None, headers))
    _browsed, end = run()
    assert isinstance(end, MessageEvent)
    assert end.headers["browser"] == "end"
    session.command(Unsubscribe("s1", receipt="r-2"))
    assert run() == [ReceiptEvent("r-2")]
    session.command(Disconnect(receipt="r-3"))
    assert run() == [ReceiptEvent("r-3")]
