"""What the parts of the core share, instead of holding the whole ``RegionBroker``.

``CoreContext`` is the state every part reads (the batch's time, resource usage, policies, whether
the message trace is on) and the few things they all produce (sequence numbers, message ids, and
the effects accumulator that ``RegionBroker.drain`` hands to the service). ``Dispatch`` is what a
queue calls back when a message is handed out, expires or dies: ``core.dispatch.Dispatcher``.
Everything else a part needs is passed to it as a plain callable by the broker that builds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from ferrymq.core.consumer import Consumer
from ferrymq.core.destination import Destination
from ferrymq.core.effects import Effects, TraceEvent, TraceKind
from ferrymq.core.entry import Entry
from ferrymq.core.message import Message, MessageId
from ferrymq.core.policy import PolicyLookup
from ferrymq.core.usage import SystemUsage
from ferrymq.store.base import DurableSubscriptionRecord

ACK_NORMAL = 0
"""Why a message left its queue, as a mirror tells its target (Artemis's ``AckReason``):
acknowledged by a consumer."""
ACK_KILLED = 1
"""Dead-lettered (redelivered too often, poison-acked, rejected)."""
ACK_EXPIRED = 2


class MirrorHooks(Protocol):
    """What the parts tell the mirror tap (``core.mirror.MirrorTap``), once a mirror is
    configured: ``CoreContext.mirror`` is None otherwise, so the send path pays one test."""

    def routed(self, message: Message, container: object) -> None:
        """``message`` is about to enter ``container`` (its queue, or its topic)."""

    def removed(self, entry: Entry, reason: int) -> None:
        """``entry`` left its container for good (acked, dead-lettered, expired)."""

    def created(self, destination: Destination) -> None: ...

    def deleted(self, destination: Destination) -> None: ...

    def purged(self, destination: Destination, entries: Sequence[Entry]) -> None:
        """The operator purged (or removed) ``destination``, taking its waiting ``entries``."""

    def subscription_created(self, record: DurableSubscriptionRecord) -> None: ...

    def subscription_removed(self, record: DurableSubscriptionRecord) -> None: ...

    def unmirrored(self) -> AbstractContextManager[None]:
        """Routing in this block is not mirrored (a dead-letter or expiry copy: the target
        makes its own from the ack's reason)."""


class Dispatch(Protocol):
    """What a queue (or topic subscription) asks of the broker about one of its entries."""

    def deliver(self, consumer: Consumer, entry: Entry) -> None:
        """Hand ``entry`` to ``consumer`` and ledger it (the queue counts it as in flight)."""

    def expire(self, entry: Entry) -> None:
        """``entry`` expired (already out of the queue's waiting list): dead-letter or drop."""

    def dead_letter(self, entry: Entry, cause: str) -> None:
        """``entry`` dies (redelivered too often, poison-acked): settle it, copy it to its DLQ."""


class CoreContext:
    __slots__ = (
        "_now_ms",
        "broker_id",
        "effects",
        "incarnation",
        "mirror",
        "policies",
        "seq",
        "tracing",
        "usage",
    )

    def __init__(
        self,
        broker_id: str,
        incarnation: str,
        policies: PolicyLookup,
        usage: SystemUsage,
    ) -> None:
        self.broker_id = broker_id
        self.incarnation = incarnation
        self.policies = policies
        self.usage = usage
        self.effects = Effects()
        """What has been decided since the last ``RegionBroker.drain`` (which replaces it)."""
        self.tracing = False
        """Collect ``TraceEvent``s in ``effects.trace`` for the message trace."""
        self.seq = 0
        """The last sequence number handed out (store keys, message ids)."""
        self.mirror: MirrorHooks | None = None
        """The mirror tap while a mirror is configured (``core.mirror``)."""
        self._now_ms = 0

    @property
    def now_ms(self) -> int:
        """The current batch's time, epoch milliseconds: the parts read it, never set it."""
        return self._now_ms

    def begin_batch(self, now_ms: int) -> None:
        """For ``RegionBroker.begin_batch`` alone: time enters the core there."""
        self._now_ms = now_ms

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def new_message_id(self) -> MessageId:
        self.seq += 1
        return MessageId(f"ID:{self.broker_id}-{self.incarnation}:{self.seq}")

    # -- the message trace --------------------------------------------------------------------

    def trace_entry(
        self,
        kind: TraceKind,
        entry: Entry,
        consumer: Consumer | None = None,
        *,
        cause: str | None = None,
        target: Destination | None = None,
    ) -> None:
        message = entry.message
        if message.destination.is_advisory:
            return
        self.effects.trace.append(
            TraceEvent(
                kind,
                message,
                message.destination,
                entry.container.key,
                consumer,
                entry.redelivery_count,
                cause,
                target,
            )
        )

    def trace_consumer(self, kind: TraceKind, consumer: Consumer) -> None:
        if not consumer.destination.is_advisory:
            self.effects.trace.append(TraceEvent(kind, None, consumer.destination, None, consumer))
