"""One AMQP 1.0 connection: SASL, proton's events as core commands, deliveries as transfers.

The bytes go first through FerryMQ's SASL layer (``amqp.sasl``): the client's login is checked by
the broker's authentication exactly as a STOMP CONNECT's (``BrokerSecurity.begin_login``, off the
loop, while the connection reads nothing more), and only after ``sasl-outcome`` does proton's
engine see the AMQP frames. Then every proton event that needs the broker becomes a work item
(``work``) handed to the ``BrokerConnection``, which keeps their order, holds them under flow
control and carries each out here: the connection's open (its container-id is the client id),
sessions, links (``senders``: consumers; ``receivers``: producers and the transaction
coordinator), credit and outcomes. What proton writes in answer is queued on the connection's
outbox at once, so frames leave in proton's order; an answer that must wait for the store (the
``accepted`` of a durable message, a commit) waits there for the group commit.

A refusal is said on the smallest endpoint that carries it: a rejected transfer, a link opened
and closed with its error, and only a connection-level fault closes the connection.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import proton

from ferrymq.adapters.amqp.errors import NOT_ASCII, AmqpError, condition_for
from ferrymq.adapters.amqp.links import link_records
from ferrymq.adapters.amqp.login import SaslHandshake
from ferrymq.adapters.amqp.receivers import Receivers
from ferrymq.adapters.amqp.senders import Senders
from ferrymq.adapters.amqp.work import (
    Credit,
    LinkClose,
    LinkOpen,
    RemoteClose,
    RemoteOpen,
    SaslLogin,
    SaslStart,
    SessionClose,
    SessionOpen,
    Settled,
    Transfer,
)
from ferrymq.adapters.stomp.dialect import TemporaryNames
from ferrymq.amqp import codes
from ferrymq.amqp.engine import Engine, RawEvent
from ferrymq.config.model import AmqpOptionsConfig
from ferrymq.core.consumer import Consumer
from ferrymq.core.effects import Delivery
from ferrymq.core.errors import BrokerError
from ferrymq.core.message import Message
from ferrymq.security.api import Subject
from ferrymq.service.connection import BrokerConnection

if TYPE_CHECKING:
    from ferrymq.service.broker import BrokerService

log = logging.getLogger(__name__)

VERSION = "1.0"

_E = proton.Event
_DELIVERY = _E.DELIVERY
_LINK_FLOW = _E.LINK_FLOW
_ENDPOINT_EVENTS: dict[object, Callable[[RawEvent], object]] = {
    _E.CONNECTION_REMOTE_OPEN: lambda e: RemoteOpen(),
    _E.CONNECTION_REMOTE_CLOSE: lambda e: RemoteClose(),
    _E.SESSION_REMOTE_OPEN: lambda e: SessionOpen(e.session),
    _E.SESSION_REMOTE_CLOSE: lambda e: SessionClose(e.session),
    _E.LINK_REMOTE_OPEN: lambda e: LinkOpen(e.link),
    _E.LINK_REMOTE_DETACH: lambda e: LinkClose(e.link, closed=False),
    _E.LINK_REMOTE_CLOSE: lambda e: LinkClose(e.link, closed=True),
}


class AmqpConverter:
    """The AMQP side of one ``BrokerConnection``."""

    def __init__(
        self,
        service: BrokerService,
        connection: BrokerConnection,
        *,
        connector: str,
        options: AmqpOptionsConfig,
        max_message_size: int,
    ) -> None:
        self.service = service
        self.connection = connection
        self.region = connection.region
        self.connection_id = connection.connection_id
        self.connector = connector
        self.engine = Engine(
            server=True,
            max_frame_size=options.max_amqp_frame_size,
            idle_timeout_ms=options.idle_timeout_ms,
            container_id=service.region.broker_name,
        )
        self.options = options
        self.max_message_size = max_message_size
        self._idle_timeout_ms = options.idle_timeout_ms
        self.names = TemporaryNames(connection.connection_id)
        self.senders = Senders(self)
        self.receivers = Receivers(self)
        self.client_id: str | None = None
        self._handshake: SaslHandshake | None = SaslHandshake(
            service, connection, self._sasl_finished
        )
        self._rest = b""
        self._opened = False
        self._handlers: dict[type, Callable[[object], bool | None]] = {
            SaslStart: lambda w: self._sasl_step().on_start(w),  # type: ignore[arg-type]
            SaslLogin: lambda w: self._sasl_step().on_login(w),  # type: ignore[arg-type]
            RemoteOpen: self._on_open,  # type: ignore[dict-item]
            RemoteClose: self._on_close,  # type: ignore[dict-item]
            SessionOpen: self._on_session_open,  # type: ignore[dict-item]
            SessionClose: self._on_session_close,  # type: ignore[dict-item]
            LinkOpen: self._on_link_open,  # type: ignore[dict-item]
            LinkClose: self._on_link_close,  # type: ignore[dict-item]
            Credit: lambda w: self.senders.credit(w.link),  # type: ignore[attr-defined]
            Settled: lambda w: self.senders.settled(w.delivery),  # type: ignore[attr-defined]
            Transfer: self.receivers.transfer,  # type: ignore[dict-item]
        }

    protocol = "AMQP"
    links = link_records  # the admin API's records of this connection's links

    @property
    def version(self) -> str | None:
        return VERSION if self._opened else None

    # -- bytes in -----------------------------------------------------------------------------

    def receive(self, data: bytes) -> None:
        if self._handshake is not None:
            self._handshake.receive(data)
            return
        if self._rest:
            data, self._rest = self._rest + data, b""
        self._feed(data)

    def _sasl_step(self) -> SaslHandshake:
        handshake = self._handshake
        assert handshake is not None, "a SASL request after the handshake"
        return handshake

    def _sasl_finished(self, rest: bytes, subject: Subject | None) -> None:
        """SASL is over: what followed it is proton's to read (now, or at the next read)."""
        self._handshake = None
        self.subject = subject
        self._rest = rest
        asyncio.get_running_loop().call_soon(self._read_rest)

    def _read_rest(self) -> None:
        if self._rest and self.connection.handling:
            rest, self._rest = self._rest, b""
            self._feed(rest)

    def _feed(self, data: bytes) -> None:
        engine = self.engine
        readable = engine.push(data)
        work: list[object] = []
        for event in engine.raw_events():
            kind = event.type
            if kind is _DELIVERY:
                item = self._delivery(event)
                if item is not None:
                    work.append(item)
            elif kind is _LINK_FLOW:
                link = event.link
                if link.is_sender:
                    work.append(Credit(link))
            else:
                make = _ENDPOINT_EVENTS.get(kind)
                if make is not None:
                    work.append(make(event))
        connection = self.connection
        connection.run(work)
        self.senders.finish_drains()
        unreadable = engine.close_if_unreadable()
        self.flush()
        if unreadable or not readable or engine.finished:
            self._finished()

    def _delivery(self, event: RawEvent) -> object | None:
        incoming = event.incoming()
        if incoming is not None:
            return self.receivers.read(incoming.link, incoming)
        outgoing = event.settled_outgoing()
        return Settled(outgoing) if outgoing is not None else None

    def _finished(self) -> None:
        """proton closed the connection (the client closed it, or a protocol fault)."""
        connection = self.connection
        condition = self.engine.transport.condition
        if condition is not None:
            log.info("connection %s: AMQP error %s", self.connection_id, condition)
        connection.end()
        connection.close_when_flushed()

    # -- what the connection calls ------------------------------------------------------------

    def handle(self, work: object) -> bool:
        handler = self._handlers.get(type(work))
        if handler is None:
            return False
        try:
            return bool(handler(work))
        except AmqpError as exc:
            if exc.fatal:
                raise
            self._refuse(work, exc)
        except BrokerError as exc:
            if isinstance(work, RemoteOpen | SaslLogin | SaslStart):
                raise
            self._refuse(work, exc)
        except UnicodeDecodeError:  # proton reads every symbol as ASCII
            error = AmqpError(codes.DECODE_ERROR, NOT_ASCII, fatal=not hasattr(work, "link"))
            if error.fatal:
                raise error from None
            self._refuse(work, error)
        return False

    def refusal(self, error: BrokerError, work: object | None) -> bytes:
        """A fatal refusal closes the connection with the condition."""
        if self._handshake is not None:
            return self._handshake.refusal(work)
        connection = self.engine.connection
        if not connection.state & proton.Endpoint.LOCAL_ACTIVE and not self._opened:
            connection.open()
        connection.condition = condition_for(error)
        connection.close()
        return self.engine.output()

    def flush(self, *, needs_commit: bool = False) -> None:
        """Queue what proton has to write (after this read's group commit if it must wait)."""
        output = self.engine.output()
        if output:
            if needs_commit:
                self.connection.confirm(output, needs_commit=True)
            else:
                self.connection.send(output)

    def log_refusal(self, error: BrokerError) -> None:
        log.info("connection %s: refused: %s", self.connection_id, error.message)

    def _refuse(self, work: object, error: BrokerError) -> None:
        """Say no on the endpoint the request concerns: its link, else its connection."""
        self.log_refusal(error)
        link = getattr(work, "link", None)
        if link is None and isinstance(work, Settled):
            link = work.delivery.link
        if link is None:
            self.connection.refuse(error, work)
            return
        self.senders.forget(link)
        self.receivers.links.pop(link.name, None)
        if not link.state & proton.Endpoint.LOCAL_ACTIVE:
            link.source.copy(link.remote_source) if link.is_sender else None
            link.open()
            if link.is_sender:
                link.source.address = None  # nothing was attached: the client's null source
        link.condition = condition_for(error)
        link.close()
        self.flush()

    subject: Subject | None = None

    # -- the connection and its sessions ------------------------------------------------------

    def _on_open(self, work: RemoteOpen) -> None:
        connection = self.connection
        engine = self.engine
        remote = engine.connection
        if not self.service.accepting_clients:
            raise BrokerError("this broker is waiting for its slave to attach (waitForSlave)")
        container = remote.remote_container or None
        transport = connection.transport
        added = self.region.add_connection(
            self.connection_id,
            container,
            user=self.subject.user if self.subject is not None else None,
            remote_address=transport.remote_address if transport else None,
            subject=self.subject,
        )
        if added.refused is not None:
            self._refuse_client_id(added.refused.message)
            return
        self.client_id = container
        remote.offered_capabilities = proton.SymbolList(
            [proton.symbol(codes.ANONYMOUS_RELAY), proton.symbol(codes.DELAYED_DELIVERY)]
        )
        remote.properties = {  # the prefixes Qpid JMS puts on its addresses (ActiveMQ 5's)
            proton.symbol("queue-prefix"): "queue://",
            proton.symbol("topic-prefix"): "topic://",
            proton.symbol("product"): "FerryMQ",
            proton.symbol("version"): self.service.server_name.partition("/")[2],
        }
        remote.open()
        self._opened = True
        remote_idle_s = engine.transport.remote_idle_timeout
        connection.open(
            read_timeout_ms=self._idle_timeout_ms,
            write_interval_ms=max(1, int(remote_idle_s * 1000) // 2) if remote_idle_s else 0,
        )
        self.flush()

    def _refuse_client_id(self, message: str) -> None:
        """Another connection has this container-id: open, then close with the condition Qpid
        JMS turns into an InvalidClientIDException (as ActiveMQ 5 answers)."""
        remote = self.engine.connection
        remote.properties = {proton.symbol(codes.CONNECTION_ESTABLISHMENT_FAILED): True}
        remote.open()
        remote.condition = proton.Condition(
            codes.INVALID_FIELD,
            message,
            {proton.symbol("invalid-field"): proton.symbol("container-id")},
        )
        remote.close()
        self.log_refusal(BrokerError(message))
        self.connection.fail(self.engine.output(), message, fatal=True)

    def _on_close(self, work: RemoteClose) -> None:
        self.engine.connection.close()
        self.flush()

    def _on_session_open(self, work: SessionOpen) -> None:
        work.session.open()
        self.flush()

    def _on_session_close(self, work: SessionClose) -> None:
        session = work.session
        for link in list(self.senders.by_subscription.values()):
            if link.link.session == session:
                self.senders.detach(link.link, closed=False)
        for name, state in list(self.receivers.links.items()):
            if state.link.session == session:
                self.receivers.links.pop(name, None)
        session.close()
        self.flush()

    def _on_link_open(self, work: LinkOpen) -> None:
        link = work.link
        if link.is_sender:
            self.senders.attach(link)
        else:
            self.receivers.attach(link)

    def _on_link_close(self, work: LinkClose) -> None:
        link = work.link
        if link.is_sender:
            self.senders.detach(link, closed=work.closed)
        else:
            self.receivers.detach(link, closed=work.closed)

    # -- frames out ---------------------------------------------------------------------------

    def render(self, delivery: Delivery) -> bytes:
        return self.senders.render(delivery)

    def render_browsed(self, consumer: Consumer, message: Message) -> bytes:
        return self.senders.render_browsed(consumer, message)

    def render_browse_end(self, consumer: Consumer) -> bytes:
        return self.senders.browse_ended(consumer)

    def keepalive(self) -> bytes:
        return codes.EMPTY_FRAME

    def session_ended(self) -> None:
        self.senders.by_subscription.clear()
        self.receivers.links.clear()
