"""The driver side of the source: one subscription, the messages taken from it, the offsets
given to them, the spool, and the acknowledgements (docs/spark.md "How it works").

Spark calls the stream reader's driver-side methods one at a time on one long-lived instance
(reference spark.md §1.4); this object lives there, created at the first call. It connects at
the first ``latest`` (never in a constructor: Spark builds readers in processes that must not
consume). A message goes through three states, each keyed by the client's audit key
(``message_audit_key``: the same for every redelivery of a message):

* *buffered*: received, no offset yet (at most the subscription's prefetch of them). After a
  failover the broker redelivers what was buffered, so the stale copies are dropped;
* *pending*: numbered and spooled, in a batch Spark may have planned but not yet committed.
  A redelivery of a pending message (after a failover or a restart) keeps its offset: only the
  handle to acknowledge it with is replaced;
* *awaiting*: Spark committed its batch, but the acknowledgement may not have reached the
  broker (the connection failed over meanwhile, or the driver restarted). A redelivery is
  acknowledged and dropped. The broker redelivers at once on (re)subscription, so these are
  forgotten ``AWAIT_RETIRE_S`` after the last acknowledgement round that could not be
  confirmed, and their spool files deleted then.

Micro-batches run one after the other, so when Spark asks ``latestOffset(start)`` every batch
up to ``start`` has been committed by the sink; ``latest`` therefore acknowledges up to
``start`` at once, instead of waiting for ``commit(start)``, which Spark sends only when it
plans the *next* non-empty batch (reference spark.md §1.5), leaving the last batch unacked
while the destination is idle.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Final

import pyarrow as pa

from ferrymq.client.blocking import BlockingConnection, BlockingMessage, BlockingSubscription
from ferrymq.client.subscription import AuditKey, message_audit_key
from ferrymq.spark.options import ConnectionOptions
from ferrymq.spark.rows import message_batch, message_keys
from ferrymq.spark.spool import Segment, Spool, SpoolContents, storage_for
from ferrymq.stomp.constants import ACK_CLIENT_INDIVIDUAL, TIMESTAMP

log = logging.getLogger(__name__)

AWAIT_RETIRE_S: Final = 60.0
"""How long committed messages whose ACK may have been lost are remembered. A broker redelivers
at once when a consumer (re)subscribes, so a redelivery comes within a few trigger intervals;
one that never comes had its ACK after all (the client's own audit may also have taken it)."""
DEFAULT_PREFETCH: Final = 1000
DEFAULT_NUM_PARTITIONS: Final = 1
DEFAULT_POLL_TIMEOUT_MS: Final = 1000


@dataclass(frozen=True, slots=True)
class SourceOptions:
    """What the source reads and how (docs/spark.md "Options")."""

    connection: ConnectionOptions
    selector: str | None = None
    subscription_name: str | None = None
    """A durable topic subscription's name (``activemq.subscriptionName``)."""
    max_messages_per_trigger: int | None = None
    prefetch: int = DEFAULT_PREFETCH
    spool_location: str | None = None
    fail_on_data_loss: bool = True
    num_partitions: int = DEFAULT_NUM_PARTITIONS
    poll_timeout_ms: int = DEFAULT_POLL_TIMEOUT_MS


@dataclass(frozen=True, slots=True)
class _Delivery:
    """A message as this driver's connection received it."""

    message: BlockingMessage
    generation: int
    """The connection's ``generation`` it arrived on: an ACK only reaches the broker if no
    failover happened since (the client drops the ACK of a message from before a failover)."""


@dataclass(slots=True)
class _Pending:
    offset: int
    delivery: _Delivery | None
    """None until the message is (re)delivered on this driver's connection."""


@dataclass(frozen=True, slots=True)
class ConsumerStatistics:
    buffered: int
    pending: int
    awaiting: int
    last_offset: int
    committed_offset: int


class SourceConsumer:
    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._spool: Spool | None = None
        contents = SpoolContents(0, [])
        if options.spool_location is not None:
            self._spool = Spool(storage_for(options.spool_location))
            contents = self._spool.load()
        else:
            log.warning(
                "ferrymq source on %s has no spoolLocation: a restart after a crash replays "
                "nothing, and messages come back by redelivery (at-least-once)",
                options.connection.destination,
            )
        if options.connection.is_topic and options.subscription_name is None:
            log.warning(
                "ferrymq source on %s has no subscriptionName: what is published while the "
                "query is not running is not kept for it",
                options.connection.destination,
            )
        self._committed = contents.committed
        self._last = contents.committed
        self._segments: list[Segment] = []
        self._pending: dict[AuditKey, _Pending] = {}
        self._awaiting: dict[AuditKey, int] = {}
        """Key -> offset of the messages in the *awaiting* state."""
        self._retire_at: float | None = None
        """When to forget ``_awaiting`` (monotonic)."""
        self._buffer: dict[AuditKey, _Delivery] = {}
        for segment in contents.segments:
            for offset, key in enumerate(message_keys(segment.batch), segment.first):
                if offset <= self._committed:
                    self._await({key: offset})
                else:
                    self._pending[key] = _Pending(offset, None)
            if segment.last > self._committed:
                self._segments.append(segment)
            self._last = max(self._last, segment.last)
        self._connection: BlockingConnection | None = None
        self._subscription: BlockingSubscription | None = None
        self._cutoff_ms: int | None = None

    # ---- what the stream reader calls ----

    @property
    def committed_offset(self) -> int:
        return self._committed

    def statistics(self) -> ConsumerStatistics:
        return ConsumerStatistics(
            len(self._buffer), len(self._pending), len(self._awaiting), self._last, self._committed
        )

    def note(self, offset: int) -> None:
        """Spark has an offset in its log: never give that number to another message (after a
        restart without a spool, what was numbered before is gone)."""
        self._last = max(self._last, offset)

    def latest(self, start: int, cap: int | None) -> int:
        """Acknowledge up to ``start``, take what has arrived, number up to ``cap`` messages
        after ``start`` (spooling them), and return the last offset."""
        self.note(start)
        self.acknowledge_through(start)  # first: it frees the prefetch window for what follows
        self._receive(wait=self._last == start and not self._buffer)
        ahead = self._last - start
        if cap is None:
            self._number(None)
            return self._last
        if ahead < cap:
            self._number(cap - ahead)
        return min(self._last, start + cap)

    def rows(self, start: int, end: int) -> list[pa.RecordBatch]:
        """The rows with offsets ``start+1..end`` that this driver still has."""
        self.note(end)
        found = []
        for segment in self._segments:
            low = max(start + 1, segment.first)
            high = min(end, segment.last)
            if low <= high:
                found.append(segment.batch.slice(low - segment.first, high - low + 1))
        return found

    def prepare_available_now(self, now_ms: int) -> None:
        """``trigger(availableNow=True)``: only messages stamped up to now are read; the
        query ends once none is left (a later one waits in the buffer for the next run)."""
        self._cutoff_ms = now_ms

    def acknowledge_through(self, offset: int) -> None:
        """Spark committed every batch up to ``offset``: acknowledge their messages."""
        if self._retire_at is not None and time.monotonic() >= self._retire_at:
            self._awaiting.clear()
            self._retire_at = None
        if offset > self._committed:
            if self._spool is not None:
                self._spool.commit(offset)
            self._committed = offset
            done = {key: p for key, p in self._pending.items() if p.offset <= offset}
            for key in done:
                del self._pending[key]
            confirmed = self._acknowledge(done)
            self._await({key: p.offset for key, p in done.items() if key not in confirmed})
            self._segments = [segment for segment in self._segments if segment.last > offset]
        if self._spool is not None:
            self._spool.discard_through(self._committed, keep=self._awaiting.values())

    def close(self) -> None:
        """Disconnect: the broker keeps (and redelivers) what was not acknowledged."""
        connection, self._connection = self._connection, None
        self._subscription = None
        self._buffer.clear()
        if connection is not None:
            connection.disconnect()

    # ---- internals ----

    def _subscribe(self) -> BlockingSubscription:
        if self._subscription is not None:
            return self._subscription
        options = self.options
        connection = options.connection.connect()
        try:
            self._subscription = connection.subscribe(
                options.connection.destination,
                ack=ACK_CLIENT_INDIVIDUAL,
                selector=options.selector,
                prefetch=options.prefetch,
                durable_name=options.subscription_name,
            )
        except BaseException:
            connection.close()
            raise
        self._connection = connection
        return self._subscription

    def _receive(self, *, wait: bool) -> None:
        """Take what the broker has pushed; with ``wait``, wait up to the poll timeout for a
        message that is not a duplicate. Bounded by what the broker can have pushed (the
        prefetch window, plus redeliveries of committed messages), so a fast producer cannot
        keep this going."""
        subscription = self._subscribe()
        deadline = time.monotonic() + self.options.poll_timeout_ms / 1000 if wait else None
        # Buffered before a failover: the broker took them back and redelivers them.
        generation = self._generation()
        self._buffer = {key: d for key, d in self._buffer.items() if d.generation == generation}
        left = self.options.prefetch + len(self._awaiting)
        while left > 0:
            timeout = 0.0 if deadline is None else max(0.0, deadline - time.monotonic())
            messages = subscription.get_many(left, timeout)
            if not messages:
                return
            left -= len(messages)
            # Each keeps the generation it arrived on, not the one this call began with: a
            # failover during the wait would make the later ones look stale for ever (their
            # ACKs dropped, yet the broker never redelivering them on this connection).
            known = self._take([_Delivery(message, message.generation) for message in messages])
            if known < len(messages):
                deadline = None

    def _take(self, deliveries: list[_Delivery]) -> int:
        """Buffer the new messages; how many the source knew already (those committed are
        acknowledged again, those pending get their new handle)."""
        known = 0
        redelivered: list[BlockingMessage] = []
        for delivery in deliveries:
            message = delivery.message
            key = message_audit_key(message.destination, message.message_id, message.headers)
            if self._awaiting.pop(key, None) is not None:
                redelivered.append(message)
                known += 1
                continue
            pending = self._pending.get(key)
            if pending is not None:
                pending.delivery = delivery
                known += 1
                continue
            self._buffer[key] = delivery  # a redelivery of a buffered one replaces it
        if redelivered and self._connection is not None:
            self._connection.ack_all(redelivered)
        return known

    def _number(self, room: int | None) -> None:
        """Give the next offsets to up to ``room`` buffered messages and spool them."""
        chosen: list[tuple[AuditKey, _Delivery]] = []
        for key, delivery in self._buffer.items():
            if room is not None and len(chosen) >= room:
                break
            if self._cutoff_ms is None or _stamp(delivery.message) <= self._cutoff_ms:
                chosen.append((key, delivery))
        if not chosen:
            return
        messages = [d.message for _, d in chosen]
        batch = message_batch(
            [(m.destination, m.message_id, m.headers, m.body) for m in messages], self._last + 1
        )
        segment = self._spool.append(batch) if self._spool is not None else Segment.of(batch)
        self._segments.append(segment)
        for offset, (key, delivery) in enumerate(chosen, segment.first):
            del self._buffer[key]
            self._pending[key] = _Pending(offset, delivery)
        self._last = segment.last

    def _generation(self) -> int:
        return self._connection.generation if self._connection else 0

    def _acknowledge(self, entries: dict[AuditKey, _Pending]) -> set[AuditKey]:
        """Acknowledge what this connection delivered, the last with a receipt (the broker
        handles a connection's frames in order); returns the keys whose ACK surely reached
        the broker: none if the connection failed over meanwhile, since the client drops the
        ACK of a message delivered before a failover and the broker redelivers it."""
        generation = self._generation()
        current = {
            key: p.delivery.message
            for key, p in entries.items()
            if p.delivery is not None and p.delivery.generation == generation
        }
        if not current:
            return set()
        assert self._connection is not None  # current deliveries came on it
        self._connection.ack_all(list(current.values()), receipt=True)
        if self._generation() == generation:
            return set(current)
        log.warning(
            "ferrymq source: the connection failed over while acknowledging %d messages; "
            "their redeliveries will be acknowledged and dropped",
            len(current),
        )
        return set()

    def _await(self, entries: dict[AuditKey, int]) -> None:
        """Committed messages whose acknowledgement did not (or may not) reach the broker."""
        if entries:
            self._awaiting.update(entries)
            self._retire_at = time.monotonic() + AWAIT_RETIRE_S


def _stamp(message: BlockingMessage) -> int:
    try:
        return int(message.headers.get(TIMESTAMP, "0"))
    except ValueError:
        return 0
