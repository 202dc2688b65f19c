"""A local queue consumed in process: the broker's own consumer, without a client or frames.

A mirror's forwarder (``ferrymq.connections.mirror``) drains its store-and-forward queue for as
long as the broker runs, one event per message it mirrors. As a ``vm://`` client every event
cost a MESSAGE frame rendered and parsed and an ACK frame back; here the reader hands over the
core's delivery as it is (``connections.api.LocalMessage``, met structurally: this layer does
not import ``connections``), and an acknowledgement is the core's settle, so the store removal
and a sync mirror's bookkeeping (``core.mirror``) happen exactly as for a client's ACK.

The reader is an internal connection registered with the service like any other (the admin API
lists it; a broker stopping closes it), acting as the broker itself (its privileged group, as
``BrokerSecurity.in_process_login`` gives the elements). Its consumer acknowledges cumulatively
(``client``) within a prefetch window. A delivery that waits for the store commit of its batch
is handed over only once that commit is durable, as a client's outbox holds it back, and in
order. On close the messages not acknowledged go back to the queue uncounted (released, not
redelivered) and in order, then the connection goes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable

from ferrymq.core.consumer import AckMode, Consumer
from ferrymq.core.destination import Destination
from ferrymq.core.effects import Delivery
from ferrymq.core.errors import BrokerError
from ferrymq.core.ledger import AckRef
from ferrymq.core.message import Message
from ferrymq.core.transaction import Settlement
from ferrymq.security.api import Subject
from ferrymq.service.broker import BrokerService
from ferrymq.service.connection import BrokerConnection

__all__ = ["QueueReader", "TakenMessage", "in_process_readers"]

CONNECTOR = "in-process"
"""The connector name (and protocol) the admin API shows for a reader's connection."""

_Pending = tuple["asyncio.Future[None] | None", Delivery]


def in_process_readers(service: BrokerService) -> Callable[[str, int, str | None], QueueReader]:
    """What ``connections.local.BrokerLocalSide`` opens its readers with: ``(queue, window,
    user)`` -> a reader of that local queue (``ConnectionError`` while the broker is not
    serving)."""

    def open_reader(queue: str, window: int, user: str | None) -> QueueReader:
        if not service.started or service.store_failed:
            raise ConnectionError(f"broker {service.config.broker_name} is not serving")
        return QueueReader(service, queue, window, user or "broker")

    return open_reader


class TakenMessage:
    """One delivery as the reader hands it over (``connections.api.LocalMessage``)."""

    __slots__ = (
        "body",
        "broker_path",
        "handle",
        "message_id",
        "original_destination",
        "producer_message_id",
        "properties",
        "redeliveries",
        "timestamp",
    )

    def __init__(self, message: Message, handle: str, redeliveries: int) -> None:
        self.message_id: str = message.message_id
        self.properties = message.properties
        body = message.body  # a bytearray when the AMQP adapter assembled it from frames
        self.body = body if type(body) is bytes else bytes(body)
        self.timestamp = message.timestamp
        self.handle = handle
        self.redeliveries = redeliveries
        original = message.original_destination
        self.original_destination = original.qualified if original is not None else None
        self.broker_path = message.broker_path
        self.producer_message_id = message.producer_message_id


class QueueReader:
    """One local queue, consumed in process (``connections.api.LocalQueueReader``)."""

    def __init__(self, service: BrokerService, queue: str, window: int, user: str) -> None:
        self._service = service
        self._region = service.region
        self._pending: deque[_Pending] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._armed: asyncio.Future[None] | None = None
        self._delivered: str | None = None
        """The newest ack id the core delivered (what a close releases through)."""
        self._acked: str | None = None
        self.ended: str | None = None
        """Why the reader stopped (None: it serves)."""
        self._subscription = f"{CONNECTOR}:{queue}"
        self._connection = _ReaderConnection(service, self)
        self.connection_id = self._connection.connection_id
        self._subscribe(queue, window, user)

    def _subscribe(self, queue: str, window: int, user: str) -> None:
        service, region, connection_id = self._service, self._region, self.connection_id
        service.tick_clock()
        subject = Subject(user, frozenset({service.security.privileged_group}))
        refusal = region.add_connection(connection_id, user=user, subject=subject).refused
        consumer = Consumer(
            connection_id,
            self._subscription,
            Destination.queue(queue),
            ack_mode=AckMode.CLIENT,
            prefetch=window,
            acks_by_message_id=False,
        )
        if refusal is None:
            refusal = region.subscribe(consumer).refused
        if refusal is not None:
            self._connection.end()
            raise ConnectionError(f"cannot consume {queue} in process: {refusal}")
        service.process()

    # -- LocalQueueReader -----------------------------------------------------------------------

    async def take(self) -> list[TakenMessage]:
        while True:
            taken = self._ready()
            if taken:
                return taken
            if self.ended is not None:
                raise ConnectionError(f"in-process reader {self.connection_id}: {self.ended}")
            waiter = asyncio.get_running_loop().create_future()
            self._waiter = waiter
            self._arm()
            try:
                await waiter
            finally:
                self._waiter = None

    def ack(self, handle: str) -> None:
        if self.ended is not None:
            raise ConnectionError(f"in-process reader {self.connection_id}: {self.ended}")
        self._settle(handle, Settlement.ACCEPT)
        self._acked = handle

    def close(self) -> None:
        if self.ended is not None:
            return
        self.ended = "closed"
        self._pending.clear()
        last = self._delivered
        if last is not None and last != self._acked:
            # No more for this consumer, then the rest back in order, uncounted (with room
            # left, the queue would hand them straight back to it).
            self._region.control_consumer(self.connection_id, self._subscription, 0)
            with contextlib.suppress(ConnectionError):  # nothing left to give back
                self._settle(last, Settlement.RELEASE)
        self._connection.end()

    # -- from the service -----------------------------------------------------------------------

    def delivered(self, delivery: Delivery, wait: asyncio.Future[None] | None) -> None:
        self._delivered = delivery.ack_id
        self._pending.append((wait, delivery))
        if len(self._pending) == 1:
            self._wake()

    def lost(self, reason: str) -> None:
        """The service ended the connection (the broker stops): the core released the rest."""
        if self.ended is None:
            self.ended = reason
        self._pending.clear()
        self._wake()

    # -- inside ---------------------------------------------------------------------------------

    def _settle(self, handle: str, settlement: Settlement) -> None:
        service = self._service
        service.tick_clock()
        outcome = self._region.settle(self.connection_id, AckRef(ack_id=handle), None, settlement)
        service.process()
        if outcome.refused is not None:
            raise ConnectionError(f"in-process reader {self.connection_id}: {outcome.refused}")

    def _ready(self) -> list[TakenMessage]:
        """The deliveries at the head whose commit is durable, in order."""
        taken: list[TakenMessage] = []
        pending = self._pending
        while pending:
            wait, delivery = pending[0]
            if wait is not None:
                if not wait.done():
                    break
                if wait.cancelled() or wait.exception() is not None:
                    self.lost("the broker's store failed")
                    break
            pending.popleft()
            entry = delivery.entry
            taken.append(TakenMessage(entry.message, delivery.ack_id, entry.redelivery_count))
        return taken

    def _arm(self) -> None:
        """Wake ``take`` when the commit the head of the queue waits for is done."""
        if not self._pending:
            return
        wait = self._pending[0][0]
        if wait is not None and not wait.done() and self._armed is not wait:
            self._armed = wait
            wait.add_done_callback(self._committed)

    def _committed(self, _: asyncio.Future[None]) -> None:
        self._armed = None
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class _ReaderConnection(BrokerConnection):
    """The reader's connection: registered with the service, which hands it the consumer's
    deliveries; nothing is rendered or written."""

    def __init__(self, service: BrokerService, reader: QueueReader) -> None:
        super().__init__(service, CONNECTOR, service.new_connection_id())
        self._reader = reader
        self.attach(_Converter())
        service.registry.register(self)
        self.open(read_timeout_ms=0, write_interval_ms=0)

    def deliver(self, delivery: Delivery, wait: asyncio.Future[None] | None) -> None:
        if self.handling:
            self._reader.delivered(delivery, wait)

    def end(self) -> None:
        handling = self.handling
        super().end()
        if handling:
            self._reader.lost("the broker closed the connection")


class _Converter:
    """The ``ProtocolConverter`` of a reader's connection: nothing comes in, nothing is
    rendered (the reader takes the deliveries themselves)."""

    protocol = CONNECTOR
    version: str | None = None

    def links(self) -> list[dict[str, object]]:
        return []

    def receive(self, data: bytes) -> None:
        pass

    def handle(self, work: object) -> bool:
        return False

    def refusal(self, error: BrokerError, work: object | None) -> bytes:
        return b""

    def render(self, delivery: Delivery) -> bytes:
        return b""

    def render_browsed(self, consumer: Consumer, message: Message) -> bytes:
        return b""

    def render_browse_end(self, consumer: Consumer) -> bytes:
        return b""

    def keepalive(self) -> bytes:
        return b""

    def session_ended(self) -> None:
        pass
