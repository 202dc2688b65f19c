"""Handing a message out, and the two ways it can die instead: expiry and the dead-letter queue.

``Dispatcher`` is the ``Dispatch`` a queue calls back (ActiveMQ splits this between the
subscription's ``dispatch``, ``RegionBroker.messageExpired`` and ``sendToDeadLetterQueue``). It
ledgers a delivery under a connection-wide ack id, and decides the store write (``MarkDelivered``)
that must be durable before the frame may leave.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ferrymq.core import advisory
from ferrymq.core.connection import ConnectionState
from ferrymq.core.consumer import AckMode, Consumer
from ferrymq.core.context import ACK_EXPIRED, ACK_KILLED, CoreContext
from ferrymq.core.destination import Destination
from ferrymq.core.effects import Delivery, TraceKind
from ferrymq.core.entry import Entry
from ferrymq.core.message import Message
from ferrymq.store.base import MarkDelivered

_AUTO = AckMode.AUTO


class Dispatcher:
    def __init__(
        self,
        context: CoreContext,
        connections: Mapping[str, ConnectionState],
        *,
        route: Callable[[Message], None],
        advise: Callable[[Destination, Callable[[], bytes]], None],
    ) -> None:
        """``route`` publishes a broker-made message (the dead-letter copy); ``advise`` publishes
        an advisory whose body is built only if someone listens."""
        self._context = context
        self._connections = connections
        self._route = route
        self._advise = advise

    def deliver(self, consumer: Consumer, entry: Entry) -> None:
        context = self._context
        state = self._connections[consumer.connection_id]
        state.next_ack += 1
        ack_id = str(state.next_ack)
        consumer.record_delivery(ack_id, entry)
        if consumer.ack_mode is not _AUTO:
            state.ack_owners[ack_id] = consumer
        state.messages_delivered += 1
        consumer.dispatched += 1
        if context.tracing:
            context.trace_entry(TraceKind.DELIVERED, entry, consumer)
        effects = context.effects
        after_commit = entry.stored
        if after_commit and not entry.marked_delivered:
            entry.marked_delivered = True
            effects.store_ops.append(MarkDelivered(entry.container.key, entry.seq))
        effects.deliveries.append(Delivery(consumer, entry, ack_id, after_commit))

    def dead_letter(self, entry: Entry, cause: str) -> None:
        self._dead_letter(entry, cause, ACK_KILLED)

    def _dead_letter(self, entry: Entry, cause: str, reason: int) -> None:
        container = entry.container
        message = entry.message
        policy = container.policy.dead_letter
        target = policy.dead_letter_destination(message.original_destination or message.destination)
        container.settle(entry, reason)
        if target is not None and not message.persistent and not policy.process_non_persistent:
            target = None
        if self._context.tracing:
            self._context.trace_entry(TraceKind.DEAD_LETTERED, entry, cause=cause, target=target)
        if target is None:
            return
        properties = dict(message.properties)
        properties["dlqDeliveryFailureCause"] = cause
        if not message.persistent:
            properties["originalDeliveryMode"] = "NON_PERSISTENT"
        copy = message.copy(
            destination=target,
            original_destination=message.original_destination or message.destination,
            persistent=True,
            expires=0,
            properties=properties,
            redelivery_count=entry.redelivery_count,
        )
        mirror = self._context.mirror
        if mirror is None:
            self._route(copy)
        else:
            with mirror.unmirrored():  # the target dead-letters its own copy (the ack's reason)
                self._route(copy)
        self._advise(advisory.dlq_topic(container.destination), lambda: message.body)

    def expire(self, entry: Entry) -> None:
        """The queue has counted the expiry and taken the entry out of its waiting list."""
        container = entry.container
        if self._context.tracing:
            self._context.trace_entry(TraceKind.EXPIRED, entry)
        if container.policy.dead_letter.process_expired:
            self._dead_letter(entry, "Message expired", ACK_EXPIRED)
        else:
            container.settle(entry, ACK_EXPIRED)
        self._advise(advisory.expired_topic(container.destination), lambda: b"")
