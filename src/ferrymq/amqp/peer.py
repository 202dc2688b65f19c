"""An AMQP 1.0 connection to another broker, sans-IO: links as a broker connection needs them.

``ClientEngine`` (``amqp.client``) is shaped for a STOMP-like client: one sender per address,
a subscription per receiver, messages decoded. A broker connection (Artemis's ``<mirror>``,
``<sender>``, ``<receiver>``, ``<peer>``, ``<federation>``) needs the links themselves: names
it chooses, capabilities (written into the attach frames by ``attach_frames``, as proton
cannot), link properties, source filters, dynamic nodes, settle modes, credit and drain under
its control, and messages as encoded bytes in and out, so delivery annotations pass untouched.

``PeerEngine`` gives that over ``engine.Engine`` in client mode: bytes in through
``receive_data``, out through ``data_to_send``, the clock through ``tick``, and what happened
as ``peer_events``, each naming the caller's link id. The open carries the properties and the
container id given (Artemis announces ``broker-connection-info`` there).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import proton
from proton import Delivery, Endpoint, Event, Link, Terminus

from ferrymq.amqp import codes
from ferrymq.amqp.attach_frames import AttachCapabilities
from ferrymq.amqp.client import MAX_FRAME_SIZE, condition_text
from ferrymq.amqp.engine import Engine, RawEvent
from ferrymq.amqp.peer_events import (
    Drained,
    LinkDown,
    LinkRefused,
    LinkUp,
    PeerClosed,
    PeerEvent,
    PeerOpened,
    Settled,
    Transfer,
)
from ferrymq.amqp.transfer import send_transfer

__all__ = ["LinkOptions", "PeerEngine"]

_OUTCOMES = {
    "accepted": Delivery.ACCEPTED,
    "rejected": Delivery.REJECTED,
    "released": Delivery.RELEASED,
    "modified": Delivery.MODIFIED,
}
_OUTCOME_NAMES: dict[int, str] = {int(code): name for name, code in _OUTCOMES.items()}


@dataclass(frozen=True, slots=True)
class LinkOptions:
    """How to attach a link: the attach frame's fields a caller sets (the broker connections'
    elements, through ``connections.api``, which re-exports this class)."""

    name: str
    source: str | None = None
    target: str | None = None
    desired_capabilities: tuple[str, ...] = ()
    source_capabilities: tuple[str, ...] = ()
    target_capabilities: tuple[str, ...] = ()
    properties: Mapping[str, object] = field(default_factory=dict)
    """Link properties (symbol keys), e.g. ``x-opt-amq-bkr-id``."""
    filters: Mapping[str, object] = field(default_factory=dict)
    """Source filters (receivers): name -> (descriptor, value), as in ``amqp.codes``."""
    dynamic: bool = False
    settle_first: bool = True
    """rcv-settle-mode first (Artemis's broker connections use UNSETTLED/FIRST)."""


@dataclass(slots=True)
class _Link:
    id: int
    spec: LinkOptions
    sender: bool
    link: Link
    up: bool = False
    draining: bool = False


def _put_symbols(data: proton.Data, names: tuple[str, ...]) -> None:
    if names:
        data.put_object(
            proton.Array(
                cast(Any, proton.UNDESCRIBED), proton.Data.SYMBOL, *map(proton.symbol, names)
            )
        )


def _filter_value(entry: object) -> object:
    """``(descriptor, value)`` as a described value; anything else is put as it is."""
    if isinstance(entry, tuple) and len(entry) == 2:
        descriptor, value = entry
        if isinstance(descriptor, str):
            return proton.Described(proton.symbol(descriptor), value)
        if isinstance(descriptor, int):
            return proton.Described(proton.ulong(descriptor), value)
    return entry


def _plain(value: object) -> object:
    """proton's values as plain Python (symbols, maps and arrays included)."""
    if isinstance(value, dict):
        return {str(k) if isinstance(k, str) else k: _plain(v) for k, v in value.items()}
    if isinstance(value, proton.Array):
        return [_plain(item) for item in value.elements]
    if isinstance(value, str):
        return str(value)
    return value


def _terminus_setup(terminus: Terminus, address: str | None, caps: tuple[str, ...]) -> None:
    if address is not None:
        terminus.address = address
    _put_symbols(terminus.capabilities, caps)


class PeerEngine:
    """One outgoing broker connection's AMQP state; see the module docstring."""

    def __init__(
        self,
        *,
        hostname: str,
        container_id: str,
        login: tuple[str, str] | None = None,
        idle_timeout_ms: int = 0,
        properties: Mapping[str, object] | None = None,
    ) -> None:
        self._engine = Engine(
            server=False,
            max_frame_size=MAX_FRAME_SIZE,
            idle_timeout_ms=idle_timeout_ms,
            container_id=container_id,
            hostname=hostname,
            login=login,
        )
        self._connection = self._engine.connection
        if properties:
            self._connection.properties = {
                proton.symbol(k): cast(Any, v) for k, v in properties.items()
            }
        self._transport = self._engine.transport
        self._session = self._connection.session()
        self._caps = AttachCapabilities()
        self._links: dict[str, _Link] = {}
        """Link name -> link (proton's wrappers differ per event; names do not)."""
        self._by_id: dict[int, _Link] = {}
        self._ids = itertools.count(1)
        self._delivery_ids = itertools.count(1)
        self._tags = itertools.count(1)
        self._sends: dict[str, tuple[int, int]] = {}
        """Tag -> (link id, key) of an unsettled send."""
        self._incoming: dict[int, tuple[int, Delivery]] = {}
        """Delivery id -> (link id, delivery) of a transfer not settled yet."""
        self._opened = False
        self.closed = False

    @property
    def container_id(self) -> str:
        return str(self._connection.container)

    def refusal(self) -> str | None:
        """Why the peer refused the login (its SASL outcome), None if it did not."""
        outcome = self._transport.sasl().outcome
        if outcome is None or outcome == proton.SASL.OK:
            return None
        return condition_text(self._transport) or f"authentication failed (SASL outcome {outcome})"

    def open(self) -> None:
        self._connection.open()
        self._session.open()

    def close(self, error: str | None = None) -> None:
        if error is not None:
            self._connection.condition = proton.Condition(codes.INTERNAL_ERROR, error)
        if self._connection.state & Endpoint.LOCAL_ACTIVE:
            self._connection.close()

    # ---- bytes and time ----

    def receive_data(self, data: bytes) -> list[PeerEvent]:
        self._caps.scan(data)
        self._engine.push(data)
        return self.events()

    def received_eof(self) -> list[PeerEvent]:
        self._engine.close_input()
        return self.events()

    def data_to_send(self) -> bytes:
        return self._caps.rewrite(self._engine.output())

    @property
    def finished(self) -> bool:
        return self._engine.finished

    def tick(self, now_s: float) -> float:
        """Heart-beats and the idle-timeout check; returns when to call again (0: never)."""
        return float(self._transport.tick(now_s))

    # ---- links ----

    def attach(self, spec: LinkOptions, *, sender: bool, credit: int = 0) -> int:
        """Attach a link; returns its id (``LinkUp`` or ``LinkRefused`` follows)."""
        if spec.name in self._links:
            raise ValueError(f"a link named {spec.name!r} is attached on this connection already")
        link: Link = (
            self._session.sender(spec.name) if sender else self._session.receiver(spec.name)
        )
        _terminus_setup(link.source, spec.source, spec.source_capabilities)
        _terminus_setup(link.target, spec.target, spec.target_capabilities)
        (link.target if sender else link.source).dynamic = spec.dynamic
        if spec.filters:
            link.source.filter.put_dict(
                {proton.symbol(k): _filter_value(v) for k, v in spec.filters.items()}
            )
        if spec.properties:
            link.properties = {proton.symbol(k): cast(Any, v) for k, v in spec.properties.items()}
        link.snd_settle_mode = Link.SND_UNSETTLED
        link.rcv_settle_mode = Link.RCV_FIRST if spec.settle_first else Link.RCV_SECOND
        self._caps.announce(spec.name, (), spec.desired_capabilities)
        link.open()
        if credit and not sender:
            link.flow(credit)
        entry = _Link(next(self._ids), spec, sender, link)
        self._links[spec.name] = self._by_id[entry.id] = entry
        return entry.id

    def _entry(self, link_id: int) -> _Link | None:
        return self._by_id.get(link_id)

    def send(self, link_id: int, encoded: bytes) -> int:
        """Transfer ``encoded`` on sender ``link_id`` unsettled; returns the key its
        ``Settled`` names. proton holds it until the peer gives credit."""
        entry = self._entry(link_id)
        if entry is None:
            raise ConnectionError("the link is closed")
        key = next(self._tags)
        tag = str(key)
        send_transfer(entry.link, tag, encoded)
        self._sends[tag] = (link_id, key)
        return key

    def flow(self, link_id: int, credit: int) -> None:
        entry = self._entry(link_id)
        if entry is not None and credit > 0:
            entry.link.flow(credit)

    def drain(self, link_id: int) -> bool:
        """Ask the peer to use or return the credit: True if none was left (drained now),
        else ``Drained`` follows."""
        entry = self._entry(link_id)
        if entry is None:
            raise ConnectionError("the link is closed")
        if entry.link.credit <= 0:
            return True
        entry.draining = True
        entry.link.drain(0)
        return False

    def settle(self, delivery: int, outcome: str = "accepted") -> None:
        held = self._incoming.pop(delivery, None)
        if held is None:
            return  # its link is gone: the peer released it
        state = _OUTCOMES[outcome]
        if outcome == "modified":
            held[1].local.failed = True
        held[1].update(state)
        held[1].settle()

    def detach(self, link_id: int, *, close: bool = True) -> None:
        entry = self._entry(link_id)
        if entry is None:
            return
        del self._links[entry.spec.name]
        self._forget(entry.id)
        if entry.link.state & Endpoint.LOCAL_ACTIVE:
            entry.link.close() if close else entry.link.detach()

    def _forget(self, link_id: int) -> None:
        self._by_id.pop(link_id, None)
        for delivery in [d for d, (lid, _) in self._incoming.items() if lid == link_id]:
            del self._incoming[delivery]
        for tag in [tag for tag, (lid, _key) in self._sends.items() if lid == link_id]:
            del self._sends[tag]

    # ---- events ----

    def events(self) -> list[PeerEvent]:
        out: list[PeerEvent] = []
        # Raw events: proton's ``Event`` wraps every endpoint of every event, which on a busy
        # link (a mirror's stream of settlements) costs more than handling the event.
        for event in self._engine.raw_events():
            out.extend(self._on(event))
        return out

    def _on(self, event: RawEvent) -> Iterator[PeerEvent]:
        kind = event.type
        if kind == Event.DELIVERY:
            yield from self._on_delivery(event.delivery)
        elif kind == Event.LINK_FLOW:
            yield from self._on_flow(event.link)
        elif kind == Event.LINK_REMOTE_OPEN:
            yield from self._on_link_open(event.link)
        elif kind in (Event.LINK_REMOTE_CLOSE, Event.LINK_REMOTE_DETACH):
            yield from self._on_link_closed(event.link)
        elif kind == Event.CONNECTION_REMOTE_OPEN and not self._opened:
            self._opened = True
            yield self._peer_opened()
        elif kind == Event.CONNECTION_REMOTE_CLOSE:
            error = condition_text(self._connection)
            self.close()
            yield from self._closing(error)
        elif kind == Event.TRANSPORT_CLOSED:
            yield from self._closing(condition_text(self._transport) or "connection lost")

    def _peer_opened(self) -> PeerOpened:
        connection = self._connection
        properties = _plain(dict(connection.remote_properties or {}))
        assert isinstance(properties, dict)
        offered = connection.remote_offered_capabilities or ()
        return PeerOpened(
            str(connection.remote_container or ""),
            {str(k): v for k, v in properties.items()},
            tuple(str(c) for c in offered),
        )

    def _closing(self, error: str | None) -> Iterator[PeerEvent]:
        if not self.closed:
            self.closed = True
            yield PeerClosed(error)

    def _on_link_open(self, link: Link) -> Iterator[PeerEvent]:
        entry = self._links.get(link.name)
        if entry is None:
            # Not ours: this end attaches every link of a broker connection itself.
            link.condition = proton.Condition(
                codes.NOT_IMPLEMENTED, "a broker connection accepts no links from its peer"
            )
            link.close()
            return
        remote = link.remote_target if entry.sender else link.remote_source
        if link.state & Endpoint.REMOTE_CLOSED or remote.type == Terminus.UNSPECIFIED:
            return  # a refusal: the detach that follows says why
        entry.up = True
        attach = self._caps.incoming.pop(link.name, None)
        properties = _plain(dict(link.remote_properties or {}))
        assert isinstance(properties, dict)
        yield LinkUp(
            entry.id,
            attach.offered if attach is not None else (),
            {str(k): v for k, v in properties.items()},
            remote.address,
        )

    def _on_link_closed(self, link: Link) -> Iterator[PeerEvent]:
        entry = self._links.pop(link.name, None)
        if link.state & Endpoint.LOCAL_ACTIVE:
            link.close()
        if entry is None:
            return
        error = condition_text(link)
        self._forget(entry.id)  # the caller fails what was in flight on ``LinkDown``
        if entry.up:
            yield LinkDown(entry.id, error)
        else:
            yield LinkRefused(entry.id, error or "the peer refused the link")

    def _on_flow(self, link: Link) -> Iterator[PeerEvent]:
        entry = self._links.get(link.name)
        if entry is None or not entry.draining or entry.sender:
            return
        if link.draining() or link.credit > 0:
            return
        entry.draining = False
        yield Drained(entry.id)

    def _on_delivery(self, delivery: Delivery) -> Iterator[PeerEvent]:
        link = delivery.link
        entry = self._links.get(link.name)
        if link.is_receiver:
            if entry is None or delivery.partial or not delivery.readable:
                return
            data = link.recv(delivery.pending)
            link.advance()
            delivery_id = 0
            if delivery.settled:
                delivery.settle()
            else:
                delivery_id = next(self._delivery_ids)
                self._incoming[delivery_id] = (entry.id, delivery)
            yield Transfer(entry.id, delivery_id, data or b"")
            return
        if not delivery.updated and not delivery.settled:
            return
        sent = self._sends.pop(delivery.tag, None)
        if sent is not None:
            yield _settled(sent, delivery)
        delivery.settle()


def _settled(sent: tuple[int, int], delivery: Delivery) -> Settled:
    state = delivery.remote_state
    link_id, key = sent
    if state == Delivery.ACCEPTED or state == 0:  # settled with no outcome: the default
        return Settled(link_id, key, "accepted")
    name = _OUTCOME_NAMES.get(int(state), f"outcome {state}")
    description = condition_text(delivery.remote) or ""
    return Settled(link_id, key, name, description)
