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

from ferrymq.adapters.amqp.dynamic import DynamicNodes
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
BROKER_CONNECTION_INFO = "broker-connection-info"

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
        self.dynamic = DynamicNodes(self.region, self.connection_id, self.names)
        self.senders = Senders(self)
        self.receivers = Receivers(self)
        self.client_id: str | None = None
        self.broker_connection = False
        """The client is another broker's broker connection (its open says
        ``broker-connection-info``, as Artemis's and FerryMQ's do)."""
        self._handshake: SaslHandshake | None = SaslHandshake(
            service, connection, self._sasl_finished
        )
        self._rest = b""
        self._opened = False
        self.subject: Subject | None = None
        """Who logged in (None without authentication), known once SASL is over."""

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
        self.receivers.mirrors.scanner.scan(data)  # link capabilities: proton reads none
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
        self.receivers.accept_durable()
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
        try:
            return self._carry_out(work)
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

    def _carry_out(self, work: object) -> bool:
        """One request; True when flow control (or a login being checked) holds it back."""
        if type(work) is Transfer:
            return self.receivers.transfer(work)
        self.receivers.accept_durable()  # what the client sent before this is answered first
        match work:
            case Settled(delivery=delivery):
                self.senders.settled(delivery)
            case Credit(link=link):
                self.senders.credit(link)
            case LinkOpen(link=link):
                self.receivers.mirrors.opening(link)
                (self.senders if link.is_sender else self.receivers).attach(link)
            case LinkClose(link=link, closed=closed):
                (self.senders if link.is_sender else self.receivers).detach(link, closed=closed)
            case _:
                return self._connection_request(work)
        return False

    def _connection_request(self, work: object) -> bool:
        match work:
            case SessionOpen() | SessionClose():
                self._on_session(work)
            case RemoteOpen():
                self._on_open()
            case RemoteClose():
                self.engine.connection.close()
                self.flush()
            case SaslStart():
                self._sasl_step().on_start(work)
            case SaslLogin():
                return self._sasl_step().on_login(work)
        return False

    def refusal(self, error: BrokerError, work: object | None) -> bytes:
        """A refusal the connection asks for (a fatal one, or a held transfer that
        ``sendFailIfNoSpaceAfterTimeout`` gave up on): said on the transfer or the link it
        concerns where there is one, else by closing the connection with the condition."""
        if self._handshake is not None:
            return self._handshake.refusal(work)
        if not error.fatal and isinstance(work, Transfer):
            self.receivers.reject(work, error)
            return self.engine.output()
        link = getattr(work, "link", None)
        if not error.fatal and isinstance(link, proton.Link):
            self._close_link(link, error)
            return self.engine.output()
        connection = self.engine.connection
        if not connection.state & proton.Endpoint.LOCAL_ACTIVE and not self._opened:
            connection.open()
        connection.condition = condition_for(error)
        connection.close()
        return self.engine.output()

    def flush(self, *, needs_commit: bool = False) -> None:
        """Queue what proton has to write (after this read's group commit if it must wait)."""
        output = self.receivers.mirrors.capabilities.rewrite(self.engine.output())
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
        self._close_link(link, error)
        self.flush()

    def _close_link(self, link: proton.Link, error: BrokerError) -> None:
        """Close a link with the condition; one the broker never attached is attached first
        (with the client's null source for a consumer: nothing was attached)."""
        if link.is_sender:
            self.senders.forget(link)
        else:
            self.receivers.forget(link)
        if not link.state & proton.Endpoint.LOCAL_ACTIVE:
            if link.is_sender:
                link.source.copy(link.remote_source)
            link.open()
            if link.is_sender:
                link.source.address = None  # type: ignore[assignment]  # proton takes None
        link.condition = condition_for(error)
        link.close()

    # -- the connection and its sessions ------------------------------------------------------

    def _on_open(self) -> None:
        """The client's open: its container-id is its client id (refused when in use)."""
        connection = self.connection
        endpoint = self.engine.connection
        if not self.service.accepting_clients:
            raise BrokerError("this broker is waiting for its slave to attach (waitForSlave)")
        container = endpoint.remote_container or None
        self.broker_connection = BROKER_CONNECTION_INFO in (endpoint.remote_properties or {})
        if container is not None and self.broker_connection:
            self._replace_stale(container)
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
        endpoint.offered_capabilities = proton.SymbolList(
            [proton.symbol(codes.ANONYMOUS_RELAY), proton.symbol(codes.DELAYED_DELIVERY)]
        )
        endpoint.properties = {  # the prefixes Qpid JMS puts on its addresses (ActiveMQ 5's)
            proton.symbol("queue-prefix"): "queue://",
            proton.symbol("topic-prefix"): "topic://",
            proton.symbol("product"): "FerryMQ",
            proton.symbol("version"): self.service.server_name.partition("/")[2],
        }
        endpoint.open()
        self._opened = True
        remote_idle_s = self.engine.transport.remote_idle_timeout
        connection.open(
            read_timeout_ms=self._idle_timeout_ms,
            write_interval_ms=max(1, int(remote_idle_s * 1000) // 2) if remote_idle_s else 0,
        )
        self.flush()

    def _replace_stale(self, container: str) -> None:
        """Another broker's broker connection opens again while its previous connection still
        holds the container id here (a crash or a network cut this side has not seen yet). A
        broker connection has one connection at a time, so the older one is dead: the newer
        one takes its place, as ActiveMQ's ``allowLinkStealing`` does for any client."""
        holder = self.region.client_ids.get(container)
        older = self.service.connections.get(holder) if holder is not None else None
        if older is None or older is self.connection:
            return
        if getattr(older.converter, "broker_connection", False):
            older.close(f"broker connection {container} opened again from elsewhere")

    def _refuse_client_id(self, message: str) -> None:
        """Another connection has this container-id: open, then close with the condition Qpid
        JMS turns into an InvalidClientIDException (as ActiveMQ 5 answers)."""
        endpoint = self.engine.connection
        endpoint.properties = {proton.symbol(codes.CONNECTION_ESTABLISHMENT_FAILED): True}
        endpoint.open()
        endpoint.condition = proton.Condition(
            codes.INVALID_FIELD,
            message,
            {proton.symbol("invalid-field"): proton.symbol("container-id")},
        )
        endpoint.close()
        self.log_refusal(BrokerError(message))
        self.connection.fail(self.engine.output(), message, fatal=True)

    def _on_session(self, work: SessionOpen | SessionClose) -> None:
        """A session begins, or ends: its links end with it (their consumers go, what they
        had unacknowledged comes back; a durable subscription stays)."""
        session = work.session
        if isinstance(work, SessionOpen):
            session.open()
        else:
            for state in list(self.senders.by_subscription.values()):
                if state.link.session == session:
                    self.senders.detach(state.link, closed=False)
            for receiver in list(self.receivers.links.values()):
                if receiver.link.session == session:
                    self.receivers.forget(receiver.link)
            session.close()
        self.flush()

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
        for state in self.senders.by_subscription.values():
            self.senders.keep(state)
        self.senders.by_subscription.clear()
        self.receivers.links.clear()
