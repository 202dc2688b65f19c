"""Where a sent message goes: ActiveMQ's send path from ``RegionBroker.send`` to the destinations.

On its way a message meets duplicate detection (ActiveMQ's ``ActiveMQMessageAudit``: a producer
message id seen before is dropped), the scheduler (``AMQ_SCHEDULED_*``: ActiveMQ's
``SchedulerBroker`` holds the message back as a job), and fan-out: a composite send names several
destinations, and a wildcard one reaches every existing destination it matches (each checked for
WRITE when the send is accepted: ``core.authorization``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from ferrymq.core.connection import ConnectionState
from ferrymq.core.context import CoreContext
from ferrymq.core.dedup import DuplicateDetector
from ferrymq.core.destination import Destination, DestinationPattern
from ferrymq.core.effects import TraceEvent, TraceKind
from ferrymq.core.errors import BrokerError
from ferrymq.core.message import Message
from ferrymq.core.queue import Queue
from ferrymq.core.scheduler import Scheduler, check_schedule, wants_scheduling
from ferrymq.core.topic import Topic


class Router:
    def __init__(
        self,
        context: CoreContext,
        *,
        queues: Mapping[Destination, Queue],
        topics: Mapping[Destination, Topic],
        queue: Callable[[Destination], Queue],
        topic: Callable[[Destination], Topic],
        exists: Callable[[Destination], bool],
        duplicate_window: int,
        scheduler_support: bool,
    ) -> None:
        """``queues`` and ``topics`` are the broker's (read live); ``queue`` and ``topic`` find
        or create one, ``exists`` tells whether one exists."""
        self._context = context
        self._next_seq = context.next_seq
        self._queues = queues
        self._topics = topics
        self._queue = queue
        self._topic = topic
        self._exists = exists
        self.dedup = DuplicateDetector(duplicate_window)
        self.scheduler = Scheduler(context, self.deliver) if scheduler_support else None

    def producer_blocked(self, message: Message) -> str | None:
        """Which resource is exhausted for this message, or None (producer flow control)."""
        full = self._context.usage.full_for(message.persistent)
        if full is None:
            return None
        if not self._context.policies(message.destination).producer_flow_control:
            return None
        return full

    def accept(
        self,
        state: ConnectionState,
        message: Message,
        destinations: Sequence[Destination],
        transaction: str | None = None,
    ) -> tuple[Destination, ...]:
        """Check a send from ``state``'s connection (authorized: ``core.authorization``) and
        count it; returns where it goes."""
        targets = tuple(destinations) or (message.destination,)
        for destination in targets:
            if destination.is_temporary and not self._exists(destination):
                raise BrokerError(f"Cannot publish to a deleted Destination: {destination}")
        guard = state.guard
        if guard is not None and not guard.sendable.issuperset(targets):
            tx = state.transactions.get(transaction) if transaction is not None else None
            guard.check_send(targets, self._exists, tx, self._targets)
        message.origin_connection = state.connection_id
        state.messages_sent += 1
        if self.scheduler is not None and wants_scheduling(message):
            check_schedule(message)  # refuse bad scheduling headers now, not at commit
        return targets

    def route(self, message: Message, targets: Sequence[Destination]) -> bool:
        """Route a message now; False when it is a duplicate (dropped)."""
        producer_message_id = message.producer_message_id
        if producer_message_id is not None:
            if self.dedup.is_duplicate(producer_message_id):
                return False
            self.dedup.record(producer_message_id)
        if self._context.tracing:
            trace = self._context.effects.trace
            for target in targets:
                if not target.is_advisory:
                    trace.append(TraceEvent(TraceKind.SENT, message, target))
        if self.scheduler is not None and wants_scheduling(message):
            self.scheduler.schedule(message, tuple(targets))
            return True
        self.deliver(message, targets)
        return True

    def deliver(self, message: Message, targets: Sequence[Destination]) -> None:
        """Put a message into its destinations now (a send, or a scheduled job come due)."""
        seq = self._next_seq()
        for target in targets:
            for destination in self._targets(target):
                copy = (
                    message
                    if destination == message.destination
                    else message.copy(destination=destination)
                )
                self._enqueue(copy, seq)

    def route_internal(self, message: Message) -> None:
        """Publish a broker-made message (advisories, dead letters)."""
        self._enqueue(message, self._next_seq())

    def _enqueue(self, message: Message, seq: int) -> None:
        destination = message.destination
        mirror = self._context.mirror
        if destination.is_topic:
            topic = self._topic(destination)
            if mirror is not None:
                mirror.routed(message, topic)  # its event goes first: an ack never overtakes it
            topic.publish(message, seq)
        else:
            queue = self._queue(destination)
            if mirror is not None:
                mirror.routed(message, queue)
            queue.offer(message, seq)

    def _targets(self, destination: Destination) -> list[Destination]:
        """A wildcard send goes to every existing destination it matches (ActiveMQ), but never
        to a temporary one: in ActiveMQ those live in regions of their own, which a queue or
        topic pattern does not reach."""
        if not destination.is_wildcard:
            return [destination]
        pattern = DestinationPattern(destination)
        pool: Iterable[Destination] = self._topics if destination.is_topic else self._queues
        return [d for d in pool if pattern.matches(d) and not d.is_advisory and not d.is_temporary]
