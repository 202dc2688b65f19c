"""A subscription: the broker pushes up to its prefetch, the application pulls from a queue.

Flow control is the broker's (``activemq.prefetchSize``): in the ``client`` modes it stops
sending once that many messages are unacknowledged, so the local queue stays bounded. In
``auto`` mode the broker counts a message as consumed once written, so nothing bounds the queue
but the application's pace, and what is still queued when the connection ends is lost (the
at-most-once of STOMP's auto mode in ActiveMQ).

Across a failover (ActiveMQ's consumer audit, reference §1.6-1.7), in the ``client`` modes:

* messages received but not yet taken by the application are dropped at the interruption: the
  broker released them and redelivers them;
* what the application acknowledged enters a bounded audit (``AUDIT_DEPTH`` per subscription,
  keyed by destination and producer message id, else message id); a redelivery of an audited
  message is not handed to the application. In ``client-individual`` mode it is acknowledged
  to the broker so the broker forgets it. In ``client`` mode an ACK is cumulative, so the
  duplicate is acknowledged only while every message delivered before it since the failover
  was a duplicate too; otherwise the application's next ACK covers it, and until then it holds
  one prefetch slot;
* acks inside a transaction enter the audit only once the commit succeeded.

In ``auto`` mode the broker counted a message as consumed once it wrote it, so queued
messages are kept and nothing is redelivered. A browse cannot resume: it ends with
``SubscriptionClosedError``.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict, deque
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final, Protocol, Self

from ferrymq.client.errors import ConnectionClosed, SubscriptionClosedError, UsageError
from ferrymq.client.message import Message
from ferrymq.stomp.constants import ACK_AUTO, ACK_CLIENT, BROWSER, FERRYMQ_PRODUCER_MESSAGE_ID
from ferrymq.stomp.events import MessageEvent

if TYPE_CHECKING:
    from ferrymq.client.requests import ConnectionView
    from ferrymq.client.transaction import Transaction

BROWSE_END: Final = "end"
"""ActiveMQ ends a browse with an empty MESSAGE carrying ``browser:end``."""
AUDIT_DEPTH: Final = 2048
"""Acknowledged messages remembered per subscription (ActiveMQ's ``auditDepth``)."""

AuditKey = tuple[str, str]


def audit_key(event: MessageEvent) -> AuditKey:
    """The same message whichever broker delivers it (``message_audit_key``)."""
    return message_audit_key(event.destination, event.message_id, event.headers)


def message_audit_key(destination: str, message_id: str, headers: Mapping[str, str]) -> AuditKey:
    """The identity of a message across redeliveries, failovers and brokers: its destination
    and the producer's id for it (a re-sent copy has the same), else the broker's message id."""
    return (destination, headers.get(FERRYMQ_PRODUCER_MESSAGE_ID) or message_id)


class SubscriptionOwner(Protocol):
    """What a subscription asks of its connection (the connection's ``Consumers``)."""

    async def unsubscribe(
        self, subscription: Subscription, *, durable: bool, receipt: bool
    ) -> None: ...

    async def settle(
        self,
        subscription: Subscription,
        message: Message,
        *,
        nack: bool,
        transaction: Transaction | str | None,
        receipt: bool,
    ) -> None:
        """ACK or NACK ``message``; once that is final, ``subscription._acknowledged``."""

    def drop_duplicate(self, event: MessageEvent, generation: int, *, acknowledge: bool) -> None:
        """Count a redelivery not handed to the application; with ``acknowledge``, ACK it."""


class _End:
    """Queued after the last message: why the subscription ended (None: it was closed)."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException | None) -> None:
        self.error = error


class Subscription:
    def __init__(
        self,
        connection: ConnectionView,
        owner: SubscriptionOwner,
        id: str,
        destination: str,
        *,
        ack: str,
        selector: str | None,
        durable_name: str | None,
        browser: bool,
    ) -> None:
        self.connection = connection
        self._owner = owner
        self.id = id
        self.destination = destination
        self.ack_mode = ack
        self.selector = selector
        self.durable_name = durable_name
        self.browser = browser
        self._browse_ended = False
        self._queue: asyncio.Queue[Message | _End] = asyncio.Queue()
        self._end: _End | None = None
        self._audit: OrderedDict[AuditKey, None] = OrderedDict()
        self._taken: deque[Message] = deque(maxlen=AUDIT_DEPTH)
        """``client`` mode: taken by the application and not yet acknowledged, in order."""
        self._fresh = False
        """A message that is not a duplicate was delivered since the last failover."""
        self.duplicates_dropped = 0
        self.audited = True
        """False: every delivery is handed over, none is dropped as a duplicate (a reader that
        deduplicates downstream, and whose messages may share ids: a broker connection's mirror
        forwarder). Set it before acknowledging anything."""

    @property
    def closed(self) -> bool:
        """True once unsubscribed, browsed to the end, or the connection is closed (messages
        already queued can still be taken)."""
        return self._end is not None

    # ---- what the connection's ``Consumers`` feed in ----

    def _deliver(self, event: MessageEvent, generation: int = 0) -> None:
        if self._end is not None:
            return
        if self.browser:
            if event.headers.get(BROWSER) == BROWSE_END:
                # The broker keeps a finished browser's id until UNSUBSCRIBE (ActiveMQ's
                # Stomp12Test testQueueBrowerSubscription): the reader at the end sends it.
                self._browse_ended = True
                self._finish(None)
                return
        elif self.ack_mode != ACK_AUTO and self.audited:
            if audit_key(event) in self._audit:
                self.duplicates_dropped += 1
                acknowledge = self.ack_mode != ACK_CLIENT or not self._fresh
                self._owner.drop_duplicate(event, generation, acknowledge=acknowledge)
                return
            self._fresh = True
        self._queue.put_nowait(Message(event, self._settle, generation))

    def _interrupted(self) -> None:
        """The connection's transport lost its broker (module docstring)."""
        if self._end is not None:
            return
        if self.browser:
            self._finish(SubscriptionClosedError("the browse was interrupted by a failover"))
            return
        self._fresh = False
        if self.ack_mode != ACK_AUTO:
            self._drain()

    def _acknowledged(self, message: Message) -> None:
        """The application settled ``message``: remember it (and, in ``client`` mode, every
        message it took before it)."""
        if not self.audited:
            return
        audit = self._audit
        if self.ack_mode == ACK_CLIENT and message in self._taken:
            while self._taken:
                taken = self._taken.popleft()
                audit[audit_key(taken.event)] = None
                if taken is message:
                    break
        else:
            audit[audit_key(message.event)] = None
        while len(audit) > AUDIT_DEPTH:
            audit.popitem(last=False)

    def _finish(self, error: BaseException | None) -> None:
        """End the stream: after what is queued, ``error`` is raised (None: iteration stops)."""
        if self._end is None:
            self._end = _End(error)
            self._queue.put_nowait(self._end)

    # ---- what the application calls ----

    async def get(self, timeout: float | None = None) -> Message:  # noqa: ASYNC109 - the API
        """The next message; ``TimeoutError`` if none came within ``timeout`` seconds.

        Once the subscription has ended and its queue is empty, raises why: the broker's error,
        ``ConnectionClosed``, or ``SubscriptionClosedError``.
        """
        if timeout is None:
            item = await self._queue.get()
        else:
            async with asyncio.timeout(timeout):
                item = await self._queue.get()
        if isinstance(item, Message):
            if self.ack_mode == ACK_CLIENT and self.audited:
                self._taken.append(item)
            return item
        self._queue.put_nowait(item)  # every later call sees the end too
        if self._browse_ended:
            self._browse_ended = False
            await self._owner.unsubscribe(self, durable=False, receipt=False)
        if item.error is not None:
            raise item.error
        reason = self.connection.close_reason
        if reason is not None:
            raise ConnectionClosed(reason.message, error=reason.error)
        raise SubscriptionClosedError(f"subscription {self.id} to {self.destination} ended")

    async def get_many(self, max_count: int, timeout: float | None = None) -> list[Message]:  # noqa: ASYNC109
        """Up to ``max_count`` messages: the next one (waiting up to ``timeout`` seconds for it)
        and those queued behind it, in order; an empty list if none came in time. One call
        for a batch, so a consumer on another thread pays one hop per batch, not per message.

        Once the subscription has ended and nothing is queued, raises as ``get`` does.
        """
        try:
            taken = [await self.get(timeout)]
        except TimeoutError:
            return []
        while len(taken) < max_count and not self._queue.empty():
            item = self._queue.get_nowait()
            if not isinstance(item, Message):
                self._queue.put_nowait(item)  # the end: the next call raises why
                break
            if self.ack_mode == ACK_CLIENT and self.audited:
                self._taken.append(item)
            taken.append(item)
        return taken

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Message:
        """Stops when the subscription is closed by the application (or a browse is complete);
        raises when the broker or the network ended it."""
        try:
            return await self.get()
        except (SubscriptionClosedError, ConnectionClosed) as exc:
            if self._end is not None and self._end.error is None:
                raise StopAsyncIteration from exc
            raise

    async def unsubscribe(self, *, durable: bool = False, receipt: bool = True) -> None:
        """Stop the subscription (UNSUBSCRIBE); with ``durable``, also destroy the durable
        subscription on the broker (``activemq.subscriptionName``), so it keeps nothing more.

        In the ``client`` modes the queued, unacknowledged messages are dropped: the broker gives
        them to other consumers. Idempotent, except that ``durable`` still reaches the broker.
        """
        if durable and self.durable_name is None:
            raise UsageError(f"subscription {self.id} is not durable")
        if self._end is not None and not durable:
            return
        if self.ack_mode != ACK_AUTO:
            self._drain()
        self._finish(None)
        await self._owner.unsubscribe(self, durable=durable, receipt=receipt)

    def _drain(self) -> None:
        """Drop the queued messages (never the end marker, which comes last)."""
        while not self._queue.empty():
            item = self._queue.get_nowait()
            if isinstance(item, _End):
                self._queue.put_nowait(item)
                return

    async def _settle(
        self,
        message: Message,
        *,
        nack: bool,
        transaction: Transaction | str | None,
        receipt: bool,
    ) -> None:
        if self.browser:
            raise UsageError("a browsed message cannot be acknowledged or refused")
        if self.ack_mode == ACK_AUTO:
            if nack:
                raise UsageError("cannot NACK a message of an auto-acknowledged subscription")
            return
        await self._owner.settle(self, message, nack=nack, transaction=transaction, receipt=receipt)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        if self.connection.closed:
            return
        # Leaving a cancelled task: no receipt to wait for (a failover connection with no broker
        # settles the UNSUBSCRIBE at once, ``StateTracker.settle_disconnected``).
        cancelled = exc_type is not None and issubclass(exc_type, asyncio.CancelledError)
        await self.unsubscribe(receipt=not cancelled)

    def __repr__(self) -> str:
        return (
            f"Subscription(id={self.id!r}, destination={self.destination!r}, ack={self.ack_mode!r})"
        )
