"""One STOMP connection: frames to core commands and back (ActiveMQ's StompProtocolConverter).

The sans-IO ``ServerSession`` turns bytes into validated events; the converter hands them to the
``BrokerConnection`` (which keeps their order, stalls them under flow control and reports
refusals) and carries out each through the request handler chosen at CONNECT: an application
client's (``requests.ClientRequests``), a network bridge's (``network.BridgeRequests``: the same,
plus demand subscriptions and forwarded message ids) or a pure master/slave slave's
(``replication.ReplicationRequests``: it only acknowledges batches).  The CONNECT itself, the
handshake every handler shares, is here.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, cast

from ferrymq.adapters.stomp import dialect
from ferrymq.adapters.stomp.base import RequestHandler, StompLink
from ferrymq.adapters.stomp.handshake import choose_requests
from ferrymq.adapters.stomp.render import MessageRenderer
from ferrymq.core.consumer import Consumer
from ferrymq.core.effects import Delivery
from ferrymq.core.errors import BrokerError
from ferrymq.core.message import Message
from ferrymq.security.api import Subject
from ferrymq.service.connection import BrokerConnection
from ferrymq.stomp import constants as h
from ferrymq.stomp.errors import RemoteProtocolError
from ferrymq.stomp.events import Connect, Disconnect, ServerEvent
from ferrymq.stomp.limits import Limits
from ferrymq.stomp.session import ServerSession

if TYPE_CHECKING:
    from ferrymq.service.broker import BrokerService

log = logging.getLogger(__name__)


class _AwaitingConnect:
    """Before CONNECT the session accepts nothing but CONNECT (and a stray DISCONNECT)."""

    def __init__(self, link: StompLink) -> None:
        self.link = link

    def handle(self, event: object) -> bool:
        match event:
            case Connect():
                return self.link.on_connect(event)
            case Disconnect():
                self.link.on_disconnect(event)
        return False

    def ended(self) -> None:
        pass


class StompConverter:
    """The STOMP side of one ``BrokerConnection``."""

    def __init__(
        self,
        service: BrokerService,
        connection: BrokerConnection,
        *,
        connector: str,
        limits: Limits,
        grace: float,
    ) -> None:
        self.service = service
        self.connection = connection
        self.connector = connector
        self.session = ServerSession(limits=limits)
        self.names = dialect.TemporaryNames(connection.connection_id)
        self.renderer = MessageRenderer(self.session, self.names)
        self.render: Callable[[Delivery], bytes] = self.renderer.delivery
        """A delivery as a MESSAGE frame (the renderer's method itself: the hot path)."""
        self._grace = grace
        self._cluster_updates = 0
        self._login: asyncio.Future[Subject | None] | None = None
        self.requests: RequestHandler = _AwaitingConnect(self)
        self.handle: Callable[[object], bool] = self.requests.handle
        """Carry out one decoded frame: the current request handler's method itself."""

    protocol = "STOMP"

    @property
    def version(self) -> str:
        return self.renderer.version

    def links(self) -> list[dict[str, object]]:
        return []  # STOMP has no links; its subscriptions are listed as consumers

    # -- bytes in -----------------------------------------------------------------------------

    def receive(self, data: bytes) -> None:
        connection = self.connection
        while True:
            try:
                events = self.session.receive_data(data)
            except RemoteProtocolError as exc:
                # Frames decoded before the fault come first (STOMP keeps frame order).
                connection.run(cast(list[ServerEvent], list(exc.events)))
                if not connection.handling:
                    return
                self.service.process()
                frame = self.session.error(exc.message, receipt_id=exc.receipt_id)
                connection.fail(frame, exc.message, fatal=exc.fatal)
                if exc.fatal:
                    return
                data = b""
                continue
            connection.run(events)
            return

    def refusal(self, error: BrokerError, work: object | None) -> bytes:
        return self.session.error(error.message, receipt_id=getattr(work, "receipt", None))

    # -- CONNECT and DISCONNECT ---------------------------------------------------------------

    def on_connect(self, event: Connect) -> bool:
        """Answer CONNECT once its login is known: True (hold everything) while it is checked
        off the loop; the connection hands this CONNECT back when the answer is in."""
        connection = self.connection
        login, self._login = self._login, None
        if login is None:
            login = self.service.security.begin_login(
                connection.transport, event.login, event.passcode
            )
            if not login.done():
                self._login = login
                connection.hold(login)
                return True
        subject = login.result()  # a refused login raises its fatal BrokerError here
        self.requests, extra = choose_requests(self, self, self.connector, event, subject)
        self.handle = self.requests.handle
        self.renderer.version = event.version
        client_sends, client_wants = event.heart_beat
        # ActiveMQ adopts the client's values: it sends every cy and expects data every cx.
        connection.open(
            read_timeout_ms=int(client_sends * self._grace) if client_sends else 0,
            write_interval_ms=max(1, client_wants // 2) if client_wants else 0,
        )
        connection.write_frame(
            self.session.connected(
                session=connection.connection_id,
                server=self.service.server_name,
                heart_beat=(client_wants, client_sends),
                headers=extra,
            ),
            None,
        )
        return False

    def on_disconnect(self, event: Disconnect) -> None:
        connection = self.connection
        connection.end()
        if event.receipt is not None:
            connection.confirm_after_all(self.session.receipt(event.receipt))
        connection.close_when_flushed()

    def receipt(self, receipt: str | None, *, needs_commit: bool = False) -> None:
        """Queue a RECEIPT (after the commit this read's requests wait on, if any)."""
        if receipt is not None:
            self.connection.confirm(self.session.receipt(receipt), needs_commit=needs_commit)

    # -- frames out ---------------------------------------------------------------------------

    def render_browsed(self, consumer: Consumer, message: Message) -> bytes:
        return self.renderer.message(consumer, message, None, message.redelivery_count)

    def render_browse_end(self, consumer: Consumer) -> bytes:
        return self.renderer.browse_end(consumer)

    def keepalive(self) -> bytes:
        return b"\n"

    def send_cluster_update(self, brokers: Sequence[str], *, rebalance: bool) -> None:
        """A new broker list for a failover client (``service.cluster``)."""
        connection = self.connection
        if not connection.connected:
            return
        self._cluster_updates += 1
        frame = [
            (h.DESTINATION, "/topic/" + h.CLUSTER_UPDATES_SUBSCRIPTION),
            (h.MESSAGE_ID, f"{connection.connection_id}:cluster:{self._cluster_updates}"),
            (h.SUBSCRIPTION, h.CLUSTER_UPDATES_SUBSCRIPTION),
            (h.FERRYMQ_CLUSTER_BROKERS, ",".join(brokers)),
        ]
        if rebalance:
            frame.append((h.FERRYMQ_REBALANCE, "true"))
        connection.send(self.session.assembled_message((self.renderer.block(frame),), b""))

    def session_ended(self) -> None:
        self.requests.ended()
        cluster = self.service.cluster
        cluster.detach(self)
        cluster.peer_left(self.connection.connection_id)
