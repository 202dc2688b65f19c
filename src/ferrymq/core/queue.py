"""Where messages wait for consumers: ActiveMQ's ``Queue``, and the pending list of a topic
subscription (ActiveMQ's ``DurableTopicSubscription`` and ``TopicSubscription``).

All three dispatch the same way, so they share this class (``core.topic.TopicSubscription``
extends it with its admission rule): messages in priority-then-arrival order go to consumers that
have prefetch room and whose selector matches; among equally ranked consumers the one served last
moves to the back (round robin); higher ``activemq.priority`` consumers are served first; an
exclusive consumer takes everything while it lives; a message group (``JMSXGroupID``) sticks to
the consumer that got its first message.

Memory is bounded by paging: once broker memory passes the high-water mark, new messages are
written to the store only (non-persistent ones as spooled rows) and the container pages them back
in, oldest first, as its in-memory backlog drains.  While anything is paged out, every newer
message is paged out too, so the order is kept.
"""

from __future__ import annotations

from ferrymq.core import codec
from ferrymq.core.consumer import Consumer
from ferrymq.core.context import ACK_NORMAL, CoreContext, Dispatch
from ferrymq.core.destination import Destination
from ferrymq.core.effects import PageIn, TraceEvent, TraceKind
from ferrymq.core.entry import ENTRY_OVERHEAD_BYTES, Entry
from ferrymq.core.message import Message
from ferrymq.core.pending import PendingList
from ferrymq.core.selector import Lookup
from ferrymq.core.selector.jms_fields import lookup_for
from ferrymq.store.base import AddMessage, PurgeContainer, RemoveMessage, StoredMessage

PAGE_SIZE = 200
"""Messages paged in per store read (ActiveMQ's ``maxPageSize`` default)."""
PAGE_IN_LOW_WATER = 100
"""Ask for the next page when fewer than this many messages wait in memory."""


class ContainerStatistics:
    __slots__ = ("dequeued", "dispatched", "enqueued", "expired")

    def __init__(self) -> None:
        self.enqueued = 0
        self.dequeued = 0
        self.dispatched = 0
        self.expired = 0


class Queue:
    """A queue, or the pending list of one topic subscription (durable or not)."""

    def __init__(
        self,
        context: CoreContext,
        dispatch: Dispatch,
        key: str,
        destination: Destination,
        *,
        storable: bool,
    ) -> None:
        self._context = context
        self._usage = context.usage
        self._dispatch = dispatch
        self._deliver = dispatch.deliver
        self.key = key
        """Name of this container in the store."""
        self.destination = destination
        self.policy = context.policies(destination)
        self.storable = storable
        """Persistent messages are written to the store (queues, durable subscriptions)."""
        self.consumers: list[Consumer] = []
        self.pending = PendingList()
        self.in_flight = 0
        self.stats = ContainerStatistics()
        self.paged_out = 0
        """Messages that exist only in the store, all with ``seq >= cursor``."""
        self.cursor = 0
        self._page_in_requested = False
        self._paged_out_since_request = 0
        self._groups: dict[str, Consumer] = {}
        self._exclusive_owner: Consumer | None = None

    # -- what it holds ------------------------------------------------------------------------

    @property
    def depth(self) -> int:
        """Messages not yet acknowledged: waiting, paged out, or in flight."""
        return len(self.pending) + self.paged_out + self.in_flight

    def enqueue(self, message: Message, seq: int) -> None:
        """Take a new message: wait in memory, or only in the store when memory is short."""
        entry = self._admit(message, seq)
        if entry is not None:
            self.pending.append(entry)

    def offer(self, message: Message, seq: int) -> None:
        """``enqueue`` then ``dispatch``, handing the message straight to a consumer when
        nothing else waits (the common case of a consumer keeping up)."""
        if self.pending or self.paged_out or not self.consumers:
            self.enqueue(message, seq)
            self.dispatch()
            return
        entry = self._admit(message, seq)
        if entry is None:
            self.dispatch()
            return
        if message.expires and message.expires <= self._context.now_ms:
            self._expire(entry)
            return
        candidates = self._candidates()
        consumer = (
            self._select(entry, candidates, self.policy.use_message_groups) if candidates else None
        )
        if consumer is None:
            self.pending.append(entry)
            return
        self._deliver(consumer, entry)
        self.in_flight += 1
        self.stats.dispatched += 1
        if len(self.consumers) > 1:
            _rotate(self.consumers, consumer)

    def _admit(self, message: Message, seq: int) -> Entry | None:
        """Count the message in and decide where it lives; None when it is paged out."""
        usage = self._usage
        write = message.persistent and self.storable
        self.stats.enqueued += 1
        charge = ENTRY_OVERHEAD_BYTES if message.holders else ENTRY_OVERHEAD_BYTES + message.size
        if self.paged_out or usage.should_page_out(charge):
            self._store(message, seq, persistent=write)
            if not write:
                usage.temp_used += message.size
            self.paged_out += 1
            self._paged_out_since_request += 1
            if self.paged_out == 1:
                self.cursor = seq
            return None
        entry = Entry(seq, message, self, stored=write)
        if write:
            self._store(message, seq, persistent=True)
        self._charge(message)
        return entry

    def _charge(self, message: Message) -> None:
        usage = self._usage
        if not message.holders:
            usage.memory_used += message.size
        message.holders += 1
        usage.memory_used += ENTRY_OVERHEAD_BYTES

    def _discharge(self, message: Message) -> None:
        usage = self._usage
        message.holders -= 1
        if not message.holders:
            usage.memory_used -= message.size
        usage.memory_used -= ENTRY_OVERHEAD_BYTES

    def _store(self, message: Message, seq: int, *, persistent: bool) -> None:
        blob = codec.encode(message)
        effects = self._context.effects
        if persistent:
            self._usage.store_used += len(blob)
            if self._context.tracing:
                effects.trace.append(
                    TraceEvent(TraceKind.STORED, message, message.destination, self.key)
                )
        effects.store_ops.append(
            AddMessage(
                self.key,
                seq,
                blob,
                message.priority,
                message.expires,
                persistent,
                message.producer_message_id if persistent else None,
            )
        )

    def recovered(self, count: int, first_seq: int) -> None:
        """The store holds ``count`` messages from ``first_seq`` on: all paged out for now."""
        self.paged_out = count
        self.cursor = first_seq
        self.stats.enqueued += count

    # -- consumers ----------------------------------------------------------------------------

    def add_consumer(self, consumer: Consumer) -> None:
        consumers = self.consumers
        index = len(consumers)
        for i, other in enumerate(consumers):
            if other.priority < consumer.priority:
                index = i
                break
        consumers.insert(index, consumer)
        consumer.containers.append(self)
        if consumer.exclusive and (
            self._exclusive_owner is None or consumer.priority > self._exclusive_owner.priority
        ):
            self._exclusive_owner = consumer

    def remove_consumer(self, consumer: Consumer) -> None:
        if consumer in self.consumers:
            self.consumers.remove(consumer)
        if self in consumer.containers:
            consumer.containers.remove(self)
        if self._exclusive_owner is consumer:
            self._exclusive_owner = next((c for c in self.consumers if c.exclusive), None)
        for group, owner in list(self._groups.items()):
            if owner is consumer:
                del self._groups[group]

    # -- dispatch -----------------------------------------------------------------------------

    def _candidates(self) -> list[Consumer]:
        owner = self._exclusive_owner
        if owner is not None:
            return [owner] if owner.has_capacity else []
        return [c for c in self.consumers if c.has_capacity]

    def dispatch(self) -> None:
        consumers = self.consumers
        # A lone consumer with a full prefetch window is the usual state of a backlog.
        if consumers and self.pending and (len(consumers) > 1 or consumers[0].has_capacity):
            self._dispatch_pending()
        if (
            self.paged_out
            and self.consumers
            and not self._page_in_requested
            and len(self.pending) < PAGE_IN_LOW_WATER
        ):
            self._request_page_in()

    def _dispatch_pending(self) -> None:
        candidates = self._candidates()
        if not candidates:
            return
        taken, expired = self._hand_out(candidates)
        pending = self.pending
        for entry in taken:
            pending.remove(entry)
        self.in_flight += len(taken)
        self.stats.dispatched += len(taken)
        for entry in expired:
            pending.remove(entry)
            self._expire(entry)

    def _hand_out(self, candidates: list[Consumer]) -> tuple[list[Entry], list[Entry]]:
        """Deliver waiting entries, in order, while ``candidates`` have room; returns those
        delivered and those found expired, both still to be taken out of the waiting list."""
        deliver = self._deliver
        now = self._context.now_ms
        use_groups = self.policy.use_message_groups
        rotate = len(self.consumers) > 1
        taken: list[Entry] = []
        expired: list[Entry] = []
        for entry in self.pending:
            message = entry.message
            if message.expires and message.expires <= now:
                expired.append(entry)
                continue
            consumer = self._select(entry, candidates, use_groups)
            if consumer is None:
                continue
            taken.append(entry)
            deliver(consumer, entry)
            if not consumer.has_capacity:
                candidates.remove(consumer)
                if not candidates:
                    break
            elif rotate:
                _rotate(candidates, consumer)
            if rotate:
                _rotate(self.consumers, consumer)
        return taken, expired

    def sweep_expired(self, now_ms: int) -> None:
        """Take every waiting message that has expired by ``now_ms`` out (the periodic sweep)."""
        expired = [e for e in self.pending if e.message.is_expired(now_ms)]
        for entry in expired:
            self.pending.remove(entry)
            self._expire(entry)

    def _expire(self, entry: Entry) -> None:
        self.stats.expired += 1
        self._dispatch.expire(entry)

    def _select(
        self, entry: Entry, candidates: list[Consumer], use_groups: bool
    ) -> Consumer | None:
        message = entry.message
        lookup: Lookup | None = None
        group = message.group_id if use_groups else None
        if group is not None:
            owner = self._groups.get(group)
            if owner is not None:
                if owner in self.consumers:
                    return owner if owner in candidates else None
                del self._groups[group]
        for consumer in candidates:
            if consumer.filters:
                if lookup is None:
                    lookup = lookup_for(message, entry.redelivery_count)
                if not consumer.matches(message, lookup):
                    continue
            if group is not None:
                self._groups[group] = consumer
            return consumer
        return None

    # -- outcomes of a delivery -----------------------------------------------------------------

    def settle(self, entry: Entry, reason: int = ACK_NORMAL) -> None:
        """The entry is done with (acked, dead-lettered, expired, discarded): forget it.
        ``reason`` is why, for a mirror (``core.context.ACK_*``)."""
        mirror = self._context.mirror
        if mirror is not None:
            mirror.removed(entry, reason)
        self.stats.dequeued += 1
        self._discharge(entry.message)
        if entry.stored:
            if entry.message.persistent and self.storable:
                self._usage.store_used -= len(codec.encode(entry.message))
            self._context.effects.store_ops.append(RemoveMessage(self.key, entry.seq))

    def acknowledge(self, entry: Entry) -> None:
        self.in_flight -= 1
        self.settle(entry)

    def release(self, entry: Entry, *, counted: bool = True) -> None:
        """Back to the waiting list after its consumer went away or rolled back (redelivery);
        not ``counted`` when the consumer handed it back untouched (AMQP released)."""
        self.in_flight -= 1
        if entry.dropped:
            self.settle(entry)
            return
        if not counted:
            self.pending.restore(entry)
            return
        entry.redelivery_count += 1
        if self.policy.redelivery.exceeded(entry.redelivery_count) and not (
            self.policy.dead_letter.is_dead_letter_destination(self.destination)
        ):
            self._dispatch.dead_letter(
                entry,
                f"Delivery[{entry.redelivery_count}] exceeds redelivery policy limit: "
                f"maximumRedeliveries={self.policy.redelivery.maximum_redeliveries}",
            )
            return
        self.pending.restore(entry)

    def remove_in_flight(self, entry: Entry) -> None:
        """The entry leaves while in flight without an ack (NACKed to the dead-letter queue)."""
        self.in_flight -= 1

    # -- paging -------------------------------------------------------------------------------

    def _request_page_in(self) -> None:
        self._page_in_requested = True
        self._paged_out_since_request = 0
        self._context.effects.page_ins.append(PageIn(self.key, self.cursor, PAGE_SIZE))

    def paged_in(self, records: list[StoredMessage], limit: int, *, requested: bool = True) -> None:
        """Stored messages join the queue: the answer to its ``PageIn`` (``requested``), or a
        read of the operator's (``core.management``), which settles nothing of the queue's."""
        if requested:
            self._page_in_requested = False
        loaded = len(records)
        if records and records[0].seq < self.cursor:
            # Read before a purge or an operator's page-in moved the cursor: already had.
            records = [r for r in records if r.seq >= self.cursor]
        now = self._context.now_ms
        for record in records:
            entry = self._entry_of(record)
            if entry.message.is_expired(now):
                self._expire(entry)
                continue
            self.pending.append(entry)
        self.paged_out -= len(records)
        if records:
            self.cursor = records[-1].seq + 1
        if requested and loaded < limit and not self._paged_out_since_request:
            # The store has nothing more from the cursor on: trust it over our count.
            self.paged_out = 0
        self.paged_out = max(self.paged_out, 0)

    def _entry_of(self, record: StoredMessage) -> Entry:
        """A stored row back in memory (charged), not yet waiting anywhere."""
        message = codec.decode(record.blob)
        entry = Entry(
            record.seq,
            message,
            self,
            stored=True,
            redelivery_count=message.redelivery_count + (1 if record.delivered else 0),
            marked_delivered=record.delivered,
        )
        self._charge(message)
        if not (message.persistent and self.storable):
            self._usage.temp_used -= message.size
        return entry

    def take_paged(self, record: StoredMessage) -> Entry | None:
        """A paged-out row to settle now (``core.removal``); None: a page-in may bring it."""
        if self._page_in_requested or not self.paged_out or record.seq < self.cursor:
            return None
        self.paged_out -= 1
        return self._entry_of(record)

    def kill(self, entry: Entry, cause: str | None) -> None:
        """An entry out of the waiting list expires (no ``cause``) or is dead-lettered."""
        self._expire(entry) if cause is None else self._dispatch.dead_letter(entry, cause)

    def drop(self, entry: Entry) -> None:
        """An entry in flight loses its row now; its ack or release only settles it."""
        if entry.stored and entry.message.persistent and self.storable:
            self._usage.store_used -= len(codec.encode(entry.message))
        if entry.stored:
            self._context.effects.store_ops.append(RemoveMessage(self.key, entry.seq))
        entry.stored = False
        entry.dropped = True

    # -- removal ------------------------------------------------------------------------------

    def purge(self) -> list[Entry]:
        """Drop every waiting message (queue deleted, subscription gone)."""
        entries = self.pending.clear()
        for entry in entries:
            self._discharge(entry.message)
        if self.storable or self.paged_out or any(e.stored for e in entries):
            self._context.effects.store_ops.append(PurgeContainer(self.key))
        self.paged_out = 0
        self.cursor = self._context.seq + 1  # a page-in read before the purge brings nothing
        return entries

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.key})"


MessageContainer = Queue
"""Its older name, still apt for a topic subscription's pending list."""


def _rotate(consumers: list[Consumer], consumer: Consumer) -> None:
    """Move ``consumer`` behind the others of its priority (round robin)."""
    index = consumers.index(consumer)
    end = index + 1
    while end < len(consumers) and consumers[end].priority == consumer.priority:
        end += 1
    if end - 1 != index:
        consumers.pop(index)
        consumers.insert(end - 1, consumer)
