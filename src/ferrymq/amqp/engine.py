"""proton's engine as bytes in, events out: one AMQP 1.0 connection's protocol state.

``Engine`` binds a proton ``Connection`` to a ``Transport`` (server or client mode) and a
``Collector``; the caller pushes what the socket read, takes the events the bytes caused, acts on
them through proton's endpoint objects (open, attach, flow, send, settle, close) and takes the
bytes to write. proton checks the framing and the performatives: a malformed frame or an
unknown performative closes the connection with ``amqp:decode-error`` or
``amqp:connection:framing-error``, and ``output`` then ends in that close.

proton's Python objects are wrappers made afresh on each access: compare them with ``==``,
never ``is`` (the same endpoint comes back as another wrapper).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import cproton  # type: ignore[import-untyped]  # proton's own cffi binding
import proton
from proton import EventType

from ferrymq.amqp import codes

EOS = -1


class Engine:
    """One connection's proton state machine."""

    __slots__ = ("collector", "connection", "transport")

    def __init__(
        self,
        *,
        server: bool,
        max_frame_size: int,
        idle_timeout_ms: int,
        container_id: str,
        hostname: str | None = None,
        login: tuple[str, str] | None = None,
    ) -> None:
        """``hostname`` and ``login`` are a client's: its open's hostname, and SASL PLAIN's
        user and password (None: ANONYMOUS). A server does its own SASL (``amqp.sasl``)."""
        self.connection = proton.Connection()
        self.connection.container = container_id
        self.collector = proton.Collector()
        self.connection.collect(self.collector)
        self.transport = proton.Transport(proton.Transport.SERVER if server else None)
        self.transport.max_frame_size = max_frame_size
        if idle_timeout_ms:
            self.transport.idle_timeout = idle_timeout_ms / 1000
        if not server:
            self._client_sasl(hostname, login)
        self.transport.bind(self.connection)  # proton reads the credentials here

    def _client_sasl(self, hostname: str | None, login: tuple[str, str] | None) -> None:
        if hostname is not None:
            self.connection.hostname = hostname
        sasl = self.transport.sasl()
        if login is None:
            sasl.allowed_mechs("ANONYMOUS")
            return
        sasl.allowed_mechs("PLAIN")
        # proton keeps PLAIN for encrypted connections unless told otherwise; TLS here is
        # asyncio's, below proton, and STOMP's CONNECT carries its passcode the same way.
        sasl.allow_insecure_mechs = True
        self.connection.user, self.connection.password = login

    def push(self, data: bytes) -> bool:
        """Hand proton what the socket read; False once proton reads no more (it closed)."""
        transport = self.transport
        view = memoryview(data)
        while view:
            capacity = transport.capacity()
            if capacity < 0:
                return False
            if capacity == 0:
                # proton's input buffer is full only if nobody took its events; it never is
                # when events are drained after every push, so this is a closed transport.
                return False
            transport.push(bytes(view[:capacity]))
            view = view[capacity:]
        return True

    def events(self) -> Iterator[proton.Event]:
        collector = self.collector
        while True:
            event = collector.peek()
            if event is None:
                return
            yield event
            collector.pop()

    def raw_events(self) -> Iterator[RawEvent]:
        """The events, each wrapping only what is asked of it: proton's ``Event`` makes a
        Python wrapper for the delivery, link, session, connection and transport of every
        event, which on a busy link costs more than the broker's own work. A ``RawEvent`` is
        valid only until the iteration moves on."""
        collector = self.collector._impl
        peek, pop, isnull = cproton.pn_collector_peek, cproton.pn_collector_pop, cproton.isnull
        types = EventType.TYPES
        kind_of = cproton.pn_event_type
        while True:
            impl = peek(collector)
            if isnull(impl):
                return
            yield RawEvent(types[kind_of(impl)], impl)
            pop(collector)

    def output(self) -> bytes:
        """What proton has to send, all of it (ends at a frame boundary). proton hands its
        output over a buffer at a time and writes the next frames of a large message only once
        the buffer was taken, so this takes buffers until nothing is left."""
        transport = self.transport
        pending = transport.pending()
        if pending <= 0:
            return b""
        chunks: list[bytes] = []
        while pending > 0:
            data = transport.peek(pending) or b""
            transport.pop(len(data))
            chunks.append(bytes(data))
            pending = transport.pending()
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    @property
    def finished(self) -> bool:
        """proton will write nothing more: the socket may close once ``output`` was sent."""
        return self.transport.pending() == EOS

    def close_if_unreadable(self) -> bool:
        """Close the connection with ``amqp:decode-error`` if proton stopped reading silently.

        On a frame it cannot dispatch (an unknown performative, a body that is no performative)
        proton closes its input but neither sets a condition nor closes the connection, so the
        peer would wait for ever; AMQP 1.0 (part 2.8.15) names the error ``decode-error``.
        True when it closed (the caller sends ``output`` and ends the connection).
        """
        transport = self.transport
        if transport.capacity() >= 0 or transport.condition is not None:
            return False
        connection = self.connection
        if connection.state & proton.Endpoint.REMOTE_CLOSED:
            return False  # the peer closed: the input ended as it should
        if not connection.state & proton.Endpoint.LOCAL_ACTIVE:
            connection.open()
        connection.condition = proton.Condition(
            codes.DECODE_ERROR, "a frame could not be decoded (malformed or unknown performative)"
        )
        connection.close()
        return True

    def close_input(self) -> None:
        """The socket is gone: proton reads nothing more."""
        self.transport.close_tail()


_delivery_of: Callable[[object], proton.Delivery] = proton.Delivery.wrap
_link_of: Callable[[object], proton.Link] = proton.Link.wrap
_session_of: Callable[[object], proton.Session] = proton.Session.wrap


class RawEvent:
    """One proton event, its endpoints wrapped on demand (``Engine.raw_events``)."""

    __slots__ = ("_impl", "type")

    def __init__(self, kind: EventType, impl: object) -> None:
        self.type = kind
        self._impl = impl

    @property
    def delivery(self) -> proton.Delivery:
        return _delivery_of(cproton.pn_event_delivery(self._impl))

    @property
    def link(self) -> proton.Link:
        return _link_of(cproton.pn_event_link(self._impl))

    def incoming(self) -> IncomingDelivery | None:
        """A DELIVERY event's delivery when the peer sent it and data is there to read."""
        impl = cproton.pn_event_delivery(self._impl)
        link = cproton.pn_delivery_link(impl)
        if not cproton.pn_link_is_receiver(link) or not cproton.pn_delivery_readable(impl):
            return None
        return IncomingDelivery(impl, _link_of(link))

    def settled_outgoing(self) -> proton.Delivery | None:
        """A DELIVERY event's delivery when the broker sent it and the peer updated it."""
        impl = cproton.pn_event_delivery(self._impl)
        if cproton.pn_link_is_receiver(cproton.pn_delivery_link(impl)):
            return None
        return _delivery_of(impl) if cproton.pn_delivery_updated(impl) else None

    @property
    def session(self) -> proton.Session:
        return _session_of(cproton.pn_event_session(self._impl))


class IncomingDelivery:
    """A delivery the peer sent, through proton's C functions: proton's ``Delivery`` wrapper
    builds two disposition objects each time it is made, which on a busy producer link costs
    more than storing the message. It keeps the delivery alive as proton's wrappers do
    (``pn_incref``); ``full`` gives proton's wrapper for the rare states (transactional,
    rejected with a condition)."""

    __slots__ = ("_impl", "link")

    def __init__(self, impl: object, link: proton.Link) -> None:
        cproton.pn_incref(impl)
        self._impl = impl
        self.link = link

    def __del__(self) -> None:
        cproton.pn_decref(self._impl)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IncomingDelivery) and other._impl == self._impl

    def __hash__(self) -> int:
        return hash(self._impl)

    @property
    def tag(self) -> bytes:
        """The tag as the peer sent it: binary (proton's wrapper decodes it as UTF-8, which
        fails for a client numbering its deliveries in bytes)."""
        tag = cproton.lib.pn_delivery_tag(self._impl)
        return bytes(cproton.ffi.unpack(tag.start, tag.size))

    @property
    def aborted(self) -> bool:
        """The peer abandoned this transfer midway (AMQP 1.0 part 2.7.5)."""
        return bool(cproton.pn_delivery_aborted(self._impl))

    @property
    def pending(self) -> int:
        return int(cproton.pn_delivery_pending(self._impl))

    @property
    def partial(self) -> bool:
        return bool(cproton.pn_delivery_partial(self._impl))

    @property
    def settled(self) -> bool:
        """Settled by the peer (a pre-settled transfer)."""
        return bool(cproton.pn_delivery_settled(self._impl))

    @property
    def remote_state(self) -> int:
        return int(cproton.pn_delivery_remote_state(self._impl))

    def update(self, state: int) -> None:
        cproton.pn_delivery_update(self._impl, state)

    def settle(self) -> None:
        cproton.pn_delivery_settle(self._impl)

    def full(self) -> proton.Delivery:
        return _delivery_of(self._impl)
