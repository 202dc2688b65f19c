"""An AMQP 1.0 client connection, sans-IO: python-qpid-proton's engine without its reactor.

``ClientEngine`` owns proton's ``Connection``, ``Transport`` and ``Collector`` (the engine does
no I/O; reference: the proton C engine's "Connection engine" model). Bytes come in through
``receive_data``, go out through ``data_to_send``, and the clock through ``tick``; what happened
comes back as the events below, named by the caller's own keys (a send key, a subscription key,
a control key), never as proton objects, whose Python wrappers are not even identical from one
event to the next (compare them with ``==``; here they are looked up by link name).

The operations are the ones a STOMP-shaped client needs: a transfer on a sender link per
address (links cached), a receiver link per subscription (credit = prefetch; settle-first,
browsing with distribution-mode copy and drain, selectors, durable subscriptions as Qpid JMS
makes them), dispositions, and local transactions through the coordinator (declare, discharge,
transactional state on transfers and dispositions). Turning STOMP commands into these calls and
these events into STOMP events is the asyncio transport's job (``ferrymq.client.amqp_transport``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any, cast

import cproton  # type: ignore[import-untyped]  # proton's own cffi binding
from proton import (
    SASL,
    Delivery,
    Described,
    Endpoint,
    Event,
    Link,
    Message,
    Sender,
    Terminus,
    symbol,
    ulong,
)

from ferrymq.amqp.client_events import (
    Arrived,
    BrowseEnded,
    Closed,
    EngineEvent,
    LinkClosed,
    LinkOpened,
    Opened,
    Outcome,
)
from ferrymq.amqp.client_links import Subscriptions, SubscriptionSpec
from ferrymq.amqp.engine import Engine
from ferrymq.amqp.transfer import send_transfer

__all__ = [
    "Arrived",
    "BrowseEnded",
    "ClientEngine",
    "Closed",
    "EngineEvent",
    "LinkClosed",
    "LinkOpened",
    "Opened",
    "Outcome",
    "SubscriptionSpec",
]

TRANSACTIONAL_STATE = 0x34
DECLARE = ulong(0x31)
DISCHARGE = ulong(0x32)
"""Numeric descriptors, as Qpid JMS sends them (AMQP 1.0 part 4, "Coordination")."""
DECLARED = 0x33
ACCEPTED_DESCRIPTOR = ulong(0x24)
REJECTED_DESCRIPTOR = ulong(0x25)
_COORDINATOR = "ferrymq-txn-ctrl"
MAX_FRAME_SIZE = 1024 * 1024
"""The largest frame we accept; bigger messages come in several transfers."""


def condition_text(endpoint: object) -> str | None:
    """``name: description`` of an error condition (remote, else local), or None."""
    condition = getattr(endpoint, "remote_condition", None) or getattr(endpoint, "condition", None)
    if condition is None:
        return None
    return f"{condition.name}: {condition.description}" if condition.description else condition.name


class ClientEngine:
    """One AMQP connection in client mode; see the module docstring."""

    def __init__(
        self,
        *,
        hostname: str,
        container_id: str,
        user: str | None = None,
        password: str | None = None,
        idle_timeout_s: float = 0.0,
    ) -> None:
        self._engine = Engine(
            server=False,
            max_frame_size=MAX_FRAME_SIZE,
            idle_timeout_ms=round(idle_timeout_s * 1000),
            container_id=container_id,
            hostname=hostname,
            login=(user, password or "") if user is not None else None,
        )
        self._connection = self._engine.connection
        self._transport = self._engine.transport
        self._session = self._connection.session()
        self._senders: dict[str, Sender] = {}
        """Address -> its sender link."""
        self._sends: dict[str, tuple[str, str]] = {}
        """Delivery tag of an unsettled transfer -> the caller's key and the link's address
        (``_COORDINATOR`` for a control)."""
        self._tags = itertools.count(1)
        self._subscriptions = Subscriptions(self._session)
        self._coordinator: Sender | None = None
        self._opened = False
        self._closed = False

    @property
    def container_id(self) -> str:
        return str(self._connection.container)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def remote_idle_timeout_s(self) -> float:
        """What the broker advertised: it wants a frame at least this often."""
        return float(self._transport.remote_idle_timeout)

    def refusal(self) -> str | None:
        """Why the broker refused the login (its SASL outcome), None if it did not."""
        outcome = self._transport.sasl().outcome
        if outcome is None or outcome == SASL.OK:
            return None
        return condition_text(self._transport) or f"authentication failed (SASL outcome {outcome})"

    def open(self) -> None:
        self._connection.open()
        self._session.open()

    # ---- bytes and time ----

    def receive_data(self, data: bytes) -> list[EngineEvent]:
        """Feed bytes from the broker; returns what they caused."""
        self._engine.push(data)
        return self.events()

    def received_eof(self) -> list[EngineEvent]:
        self._engine.close_input()
        return self.events()

    def data_to_send(self) -> bytes:
        """Everything the engine has to write now (b"" if nothing)."""
        return self._engine.output()

    @property
    def finished(self) -> bool:
        """Nothing more will be written: the socket may close."""
        return self._engine.finished

    def tick(self, now_s: float) -> float:
        """Heart-beats and the idle-timeout check; returns when to call again (0: never)."""
        return float(self._transport.tick(now_s))

    # ---- operations ----

    def send(self, key: str, address: str, encoded: bytes, txn_id: bytes | None = None) -> None:
        """A transfer of the encoded ``message`` to ``address``, unsettled: its ``Outcome``
        carries ``key``."""
        sender = self._sender(address)
        tag = str(next(self._tags))
        if txn_id is None:
            send_transfer(sender, tag, encoded)
        else:
            delivery = sender.delivery(tag)
            delivery.local.data = cast(Any, [txn_id])
            delivery.update(TRANSACTIONAL_STATE)
            sender.send(encoded)
            sender.advance()
        self._sends[tag] = (key, address)

    def _sender(self, address: str) -> Sender:
        sender = self._senders.get(address)
        if sender is None:
            sender = self._session.sender(f"sender-{len(self._senders) + 1}-{address}")
            sender.target.address = address
            sender.source.address = address
            sender.open()
            self._senders[address] = sender
        return sender

    def subscribe(self, spec: SubscriptionSpec) -> None:
        self._subscriptions.open(spec)

    def unsubscribe(self, key: str, *, remove: bool, durable_name: str | None = None) -> bool:
        """Detach the subscription's link (closing it, which ends a durable subscription, with
        ``remove``). False if no such subscription is attached here and none was to be removed."""
        return self._subscriptions.close(key, remove=remove, durable_name=durable_name)

    def settle(self, delivery: int, outcome: str, txn_id: bytes | None = None) -> None:
        """``accepted``, ``rejected``, ``released`` or ``modified`` (delivery-failed)."""
        self._subscriptions.settle(delivery, outcome, txn_id)

    def settle_up_to(self, key: str, delivery: int, txn_id: bytes | None = None) -> None:
        """Accept every unsettled delivery of ``key`` up to ``delivery`` (STOMP's cumulative
        ``client`` acknowledgement)."""
        self._subscriptions.settle_up_to(key, delivery, txn_id)

    def declare(self, key: str) -> None:
        self._control(key, Described(DECLARE, [None]))

    def discharge(self, key: str, txn_id: bytes, *, fail: bool) -> None:
        self._control(key, Described(DISCHARGE, [txn_id, fail]))

    def _control(self, key: str, body: Described) -> None:
        if self._coordinator is None:
            coordinator = self._session.sender(_COORDINATOR)
            coordinator.target.type = Terminus.COORDINATOR
            coordinator.target.capabilities.put_object(symbol("amqp:local-transactions"))
            coordinator.open()
            self._coordinator = coordinator
        tag = str(next(self._tags))
        self._coordinator.delivery(tag)
        self._coordinator.send(Message(body=body).encode())
        self._coordinator.advance()
        self._sends[tag] = (key, _COORDINATOR)

    def close(self) -> None:
        self._connection.close()

    # ---- events ----

    def events(self) -> list[EngineEvent]:
        """What the engine's events mean. The outcome of a send, the busiest event, is read
        through proton's C calls; the others through its wrappers (``Event`` wraps every
        endpoint of an event, which on a busy producer costs more than the transfer)."""
        out: list[EngineEvent] = []
        collector = self._engine.collector._impl
        peek, pop, kind_of = cproton.pn_collector_peek, cproton.pn_collector_pop, _KIND_OF
        while True:
            impl = peek(collector)
            if cproton.isnull(impl):
                return out
            if kind_of(impl) != _DELIVERY or not self._on_outcome(impl, out):
                out.extend(self._on(_event_of(impl)))
            pop(collector)

    def _on_outcome(self, event: object, out: list[EngineEvent]) -> bool:
        """A sent delivery's plain ``accepted`` (or nothing new): False for anything else."""
        impl = cproton.pn_event_delivery(event)
        if cproton.pn_link_is_receiver(cproton.pn_delivery_link(impl)):
            return False
        if not cproton.pn_delivery_updated(impl) and not cproton.pn_delivery_settled(impl):
            return True
        if cproton.pn_delivery_remote_state(impl) != Delivery.ACCEPTED:
            return False
        sent = self._sends.pop(cproton.pn_delivery_tag(impl), None)
        if sent is not None:
            out.append(Outcome(sent[0], accepted=True))
        cproton.pn_delivery_settle(impl)
        return True

    def _on(self, event: Event) -> Iterator[EngineEvent]:
        kind = event.type
        if kind == Event.DELIVERY:
            yield from self._on_delivery(cast(Delivery, event.delivery))
        elif kind == Event.LINK_FLOW:
            yield from self._subscriptions.on_flow(cast(Link, event.link))
        elif kind == Event.LINK_REMOTE_OPEN:
            yield from self._subscriptions.on_remote_open(cast(Link, event.link))
        elif kind in (Event.LINK_REMOTE_CLOSE, Event.LINK_REMOTE_DETACH):
            yield from self._on_link_closed(cast(Link, event.link))
        elif kind == Event.CONNECTION_REMOTE_OPEN and not self._opened:
            self._opened = True
            remote = self._connection.remote_properties or {}
            properties = {str(name): str(value) for name, value in remote.items()}
            yield Opened(str(self._connection.remote_container or ""), properties)
        elif kind == Event.CONNECTION_REMOTE_CLOSE:
            error = condition_text(self._connection)
            if self._connection.state & Endpoint.LOCAL_ACTIVE:
                self._connection.close()
            yield from self._closing(error)
        elif kind == Event.TRANSPORT_CLOSED:
            yield from self._closing(condition_text(self._transport) or "connection lost")

    def _closing(self, error: str | None) -> Iterator[EngineEvent]:
        if not self._closed:
            self._closed = True
            yield Closed(error)

    def _on_delivery(self, delivery: Delivery) -> Iterator[EngineEvent]:
        link = delivery.link
        if link.is_receiver:
            yield from self._subscriptions.on_delivery(link, delivery)
            return
        if not delivery.updated and not delivery.settled:
            return
        sent = self._sends.pop(delivery.tag, None)
        if sent is not None:
            yield _outcome(sent[0], delivery)
        delivery.settle()

    def _on_link_closed(self, link: Link) -> Iterator[EngineEvent]:
        error = condition_text(link)
        if link.is_sender:
            for address, sender in list(self._senders.items()):
                if sender == link:
                    del self._senders[address]
                    yield from self._fail_sends(address, error or "the broker detached the link")
                    yield LinkClosed(f"sender:{address}", error)
            if self._coordinator is not None and link == self._coordinator:
                self._coordinator = None
                yield from self._fail_sends(_COORDINATOR, error or "the coordinator link closed")
            if link.state & Endpoint.LOCAL_ACTIVE:
                link.close()
            return
        yield from self._subscriptions.on_remote_close(link, error)

    def _fail_sends(self, address: str, error: str) -> Iterator[EngineEvent]:
        failed = [tag for tag, (_, to) in self._sends.items() if to == address]
        for tag in failed:
            key, _ = self._sends.pop(tag)
            yield Outcome(key, accepted=False, description=error)


_KIND_OF = cproton.pn_event_type
_event_of: Callable[[object], Event] = Event.wrap
_DELIVERY: int = Event.DELIVERY.number


def _outcome(key: str, delivery: Delivery) -> Outcome:
    state = delivery.remote_state
    data = delivery.remote.data
    if state == DECLARED and data:
        return Outcome(key, accepted=True, txn_id=bytes(data[0]))
    if state == Delivery.ACCEPTED:
        return Outcome(key, accepted=True)
    if state == TRANSACTIONAL_STATE:
        inner = data[1] if data and len(data) > 1 else None
        if inner is None or getattr(inner, "descriptor", None) == ACCEPTED_DESCRIPTOR:
            return Outcome(key, accepted=True)
        return Outcome(key, accepted=False, description="the transactional send was refused")
    description = condition_text(delivery.remote) or f"not accepted (outcome {state})"
    return Outcome(key, accepted=False, description=description)
