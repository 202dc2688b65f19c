"""A client connection: what the application calls, over whichever transport the URL chose.

The connection owns the state the application sees, in two parts below it: ``Requests`` (open
or not, the receipts waited for) and ``Consumers`` (subscriptions, their acknowledgements,
transactions); the transport below owns sockets and tasks. Subscriptions, messages and
transactions hold those parts through small protocols, never the connection. Events come up
through ``on_event``/``on_closed`` and are dispatched synchronously: a receipt resolves its
waiter, a message goes to its subscription's queue, an ERROR goes to the call it answers or,
answering none, closes the connection and is raised in every pending call and consumer.

With a fault-tolerant transport (``failover:``, ``discovery:``, ``masterslave:``) the
connection survives the loss of a broker: the transport reports ``on_transport_interrupted`` and
``on_transport_resumed``, which the application can watch (``on_interrupted(callback)``,
``on_resumed(callback)``), and restores subscriptions, in-flight sends and transactions on the
next broker; the subscriptions drop stale deliveries and duplicates (``subscription``), and a
commit the failover made impossible raises ``TransactionRolledBack`` (``failover.tracker``).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Final, Self

from ferrymq.client.commands import ConnectionInfo, Disconnect, Send
from ferrymq.client.consumers import Consumers, transaction_id
from ferrymq.client.errors import BrokerErrorFrame, ClientError, ConnectionClosed, UsageError
from ferrymq.client.requests import ConnectionState as ConnectionState
from ferrymq.client.requests import Requests
from ferrymq.client.subscription import Subscription
from ferrymq.client.transaction import Transaction
from ferrymq.client.transport import BrokerEvent, Transport, TransportStatistics
from ferrymq.stomp import constants as h
from ferrymq.stomp.events import Connected, ErrorEvent, MessageEvent, ReceiptEvent

log = logging.getLogger(__name__)

DISCONNECT_TIMEOUT_S: Final = 10.0
"""How long ``disconnect`` waits for the broker's receipt before closing anyway."""

Callback = Callable[[], None]


@dataclass(frozen=True, slots=True)
class ConnectionStatistics:
    messages_sent: int
    messages_received: int
    subscriptions: int
    transport: TransportStatistics
    interruptions: int = 0
    """Times the transport lost its broker (each is followed by a resume or the close)."""
    duplicates_dropped: int = 0
    """Redeliveries of acknowledged messages not handed to the application."""


class Connection:
    def __init__(self, url: str, transport: Transport, info: ConnectionInfo) -> None:
        self.url = url
        self.info = info
        self._transport = transport
        self._requests = Requests(transport)
        self._consumers = Consumers(self, self._requests)
        self._connected: Connected | None = None
        self.producer_id = secrets.token_hex(8)
        """Prefix of every ``ferrymq.producer-message-id`` this connection sends; the broker
        drops a message whose producer message id it has already stored (issue 3's re-sends)."""
        self._send_seq = itertools.count(1)
        self._transaction_seq = itertools.count(1)
        self._last_error: BrokerErrorFrame | None = None
        self._closed_event = asyncio.Event()
        self._sent = self._interruptions = 0
        self._on_interrupted: list[Callback] = []
        self._on_resumed: list[Callback] = []

    async def _open(self) -> Self:
        self._connected = await self._transport.open(self)
        self._requests.state = ConnectionState.OPEN
        return self

    @property
    def state(self) -> ConnectionState:
        return self._requests.state

    # ---- what the broker said at CONNECTED ----

    @property
    def version(self) -> str:
        """The STOMP version the broker chose."""
        return self._connected.version if self._connected is not None else h.V1_0

    @property
    def session(self) -> str | None:
        """The broker's ``session`` header (FerryMQ and ActiveMQ: the connection id)."""
        return self._connected.session if self._connected is not None else None

    @property
    def connected_headers(self) -> Mapping[str, str]:
        """Every header of the broker's CONNECTED (extensions such as a broker's id)."""
        return self._connected.headers if self._connected is not None else {}

    @property
    def server(self) -> str | None:
        return self._connected.server if self._connected is not None else None

    @property
    def remote_url(self) -> str:
        """The broker the connection is on now (with failover, it changes)."""
        return self._transport.remote_url

    @property
    def generation(self) -> int:
        """How many times the transport lost its broker. A message whose ``generation`` is
        this one arrived on the broker the connection is on now, so its ACK reaches the
        broker; an older one's is not sent (the broker redelivers the message)."""
        return self._transport.generation

    @property
    def closed(self) -> bool:
        return self.state is ConnectionState.CLOSED

    @property
    def close_reason(self) -> ConnectionClosed | None:
        return self._requests.close_reason

    def statistics(self) -> ConnectionStatistics:
        return ConnectionStatistics(
            self._sent,
            self._consumers.received,
            len(self._consumers),
            self._transport.statistics(),
            self._interruptions,
            self._consumers.duplicates,
        )

    def on_interrupted(self, callback: Callback) -> Callback:
        """Call ``callback`` (on the event loop, must not block) each time the transport loses
        its broker; returns a function that unregisters it."""
        return _register(self._on_interrupted, callback)

    def on_resumed(self, callback: Callback) -> Callback:
        """Call ``callback`` each time the transport is on a broker again with the
        connection's state restored (``remote_url`` says which)."""
        return _register(self._on_resumed, callback)

    # ---- producing ----

    async def send(
        self,
        destination: str,
        body: bytes | str = b"",
        *,
        headers: Mapping[str, str] | None = None,
        persistent: bool = False,
        receipt: bool | str | None = None,
        priority: int | None = None,
        expires: int | None = None,
        transaction: Transaction | str | None = None,
    ) -> str:
        """Send one message; returns its producer message id.

        ``receipt``: True (or an explicit receipt id) waits until the broker has the message;
        None waits only for a persistent send outside a transaction (ActiveMQ's sync send: the
        broker receipts once the message is on disk). ``expires`` is absolute, in ms since the
        epoch (0: never), as STOMP in ActiveMQ has it; ``priority`` is 0-9.
        """
        data = body.encode() if isinstance(body, str) else body
        out = dict(headers) if headers else {}
        if persistent:
            out[h.PERSISTENT] = "true"
        if priority is not None:
            if not 0 <= priority <= 9:
                raise UsageError(f"priority must be 0-9, got {priority}")
            out[h.PRIORITY] = str(priority)
        if expires is not None:
            out[h.EXPIRES] = str(expires)
        producer_message_id = out.setdefault(
            h.FERRYMQ_PRODUCER_MESSAGE_ID, f"{self.producer_id}:{next(self._send_seq)}"
        )
        tx = transaction_id(transaction)
        if isinstance(receipt, str):
            receipt_id: str | None = receipt
        elif receipt or (receipt is None and persistent and tx is None):
            receipt_id = self._requests.next_receipt()
        else:
            receipt_id = None
        await self._requests.call(Send(destination, data, out, tx, receipt_id), receipt_id)
        self._sent += 1
        return producer_message_id

    # ---- consuming ----

    async def subscribe(
        self,
        destination: str,
        *,
        selector: str | None = None,
        ack: str = h.ACK_AUTO,
        prefetch: int | None = None,
        id: str | None = None,
        durable_name: str | None = None,
        no_local: bool = False,
        exclusive: bool = False,
        priority: int | None = None,
        browser: bool = False,
        headers: Mapping[str, str] | None = None,
        receipt: bool = True,
    ) -> Subscription:
        """Subscribe; with ``receipt`` (the default) return once the broker has the
        subscription in place, so nothing sent after it is missed.

        ``prefetch`` is ``activemq.prefetchSize`` (broker default: 1000 for a queue, 32767 for
        a topic, 100 for a durable one); ``durable_name`` is ``activemq.subscriptionName`` and
        needs the connection's ``client_id``; ``browser`` snapshots a queue without consuming,
        and the subscription ends after the last message.
        """
        if ack not in h.ACK_MODES:
            raise UsageError(f"unknown ack mode {ack!r} (auto, client, client-individual)")
        out = dict(headers) if headers else {}
        for name, value in (
            (h.ACTIVEMQ_PREFETCH_SIZE, prefetch),
            (h.ACTIVEMQ_SUBSCRIPTION_NAME, durable_name),
            (h.ACTIVEMQ_PRIORITY, priority),
            (h.ACTIVEMQ_NO_LOCAL, "true" if no_local else None),
            (h.ACTIVEMQ_EXCLUSIVE, "true" if exclusive else None),
            (h.BROWSER, "true" if browser else None),
        ):
            if value is not None:
                out[name] = str(value)
        return await self._consumers.subscribe(
            destination,
            id,
            ack=ack,
            selector=selector,
            headers=out,
            durable_name=durable_name,
            browser=browser,
            receipt=receipt,
        )

    # ---- transactions ----

    def transaction(self) -> Transaction:
        """A new transaction, begun by ``async with`` (or ``await tx.begin()``)."""
        return Transaction(self, self._consumers, f"tx-{next(self._transaction_seq)}")

    async def begin(self) -> Transaction:
        return await self.transaction().begin()

    # ---- closing ----

    async def disconnect(self, timeout: float = DISCONNECT_TIMEOUT_S) -> None:  # noqa: ASYNC109
        """DISCONNECT, wait (up to ``timeout`` s) for the broker's receipt, which comes after
        everything sent before it was handled, then close. Idempotent."""
        try:
            if self.state is ConnectionState.OPEN:
                self._requests.state = ConnectionState.DISCONNECTING
                receipt_id = self._requests.next_receipt()
                try:
                    async with asyncio.timeout(timeout):
                        await self._requests.request(Disconnect(receipt_id), receipt_id)
                except (ConnectionClosed, BrokerErrorFrame, TimeoutError):
                    pass  # closing anyway; the broker drops what it had for us
        finally:
            self._shutdown(ConnectionClosed("disconnected by the application"), None)
            await self._transport.close()

    async def close(self) -> None:
        """Close at once, without DISCONNECT (what is unsent is dropped). Idempotent."""
        self._shutdown(ConnectionClosed("closed by the application"), None)
        await self._transport.close()

    async def wait_closed(self) -> ConnectionClosed:
        """Wait until the connection is closed, for whatever reason, and return why."""
        await self._closed_event.wait()
        assert self.close_reason is not None
        return self.close_reason

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc_type is not None and issubclass(exc_type, asyncio.CancelledError):
            await self.close()
        else:
            await self.disconnect()

    # ---- the transport's listener ----

    def on_event(self, event: BrokerEvent) -> None:
        match event:
            case MessageEvent():
                self._consumers.deliver(event)
            case ReceiptEvent():
                self._requests.answer(event.receipt_id)
            case ErrorEvent():
                self._on_error(event)

    def _on_error(self, event: ErrorEvent) -> None:
        error = BrokerErrorFrame.from_event(event)
        self._last_error = error
        if event.receipt_id and self._requests.answer(event.receipt_id, error):
            return
        reason = ConnectionClosed(f"the broker sent ERROR: {error.message}", error=error)
        self._shutdown(reason, error)
        self._transport.abort()

    def on_transport_interrupted(self) -> None:
        self._interruptions += 1
        self._consumers.interrupted()
        _notify(self._on_interrupted, "interrupted")

    def on_transport_resumed(self, connected: Connected) -> None:
        self._connected = connected
        _notify(self._on_resumed, "resumed")

    def on_request_failed(self, receipt_id: str, error: ClientError) -> None:
        self._requests.answer(receipt_id, error)

    def on_closed(self, error: ConnectionClosed) -> None:
        if self.state is ConnectionState.DISCONNECTING:
            self._shutdown(ConnectionClosed("disconnected by the application"), None)
            return
        if error.error is None and self._last_error is not None:
            error = ConnectionClosed(error.message, error=self._last_error)
        self._shutdown(error, error)

    # ---- internals ----

    def _shutdown(self, reason: ConnectionClosed, raised: BaseException | None) -> None:
        """Closed: pending calls fail, subscriptions end (raising ``raised``, or stopping)."""
        if self._requests.close(reason, raised):
            self._consumers.close(raised)
            self._closed_event.set()


def _register(callbacks: list[Callback], callback: Callback) -> Callback:
    callbacks.append(callback)

    def unregister() -> None:
        if callback in callbacks:
            callbacks.remove(callback)

    return unregister


def _notify(callbacks: list[Callback], what: str) -> None:
    for callback in list(callbacks):
        try:
            callback()
        except (Exception, asyncio.CancelledError):
            # A callback runs inside the transport's bookkeeping, not in a task of its own: a
            # CancelledError from it (a cancelled future's result) is its bug, not a
            # cancellation of whoever called, and must not cut that bookkeeping short.
            log.exception("an on_%s callback failed", what)
