"""The operator's commands: what ActiveMQ's JMX beans (``QueueViewMBean``, ``BrokerViewMBean``)
and web console do to a running broker, decided here like any client's command.

``Management.purge``, ``remove_destination``, ``move``, ``retry``, ``destroy_durable`` and
``send`` each return an ``Outcome`` whose ``affected`` counts the messages touched; every store
write they decide (a purge, a removal, a message leaving one queue and arriving in another)
goes through the same effects as a client's, so the service makes it durable in one commit:
a message moved is removed from its source and added to its target atomically.

``move`` and ``retry`` see only the messages a queue holds in memory: the service pages the rest
in (``paging``) and calls again until the queue has nothing more in the store. Messages in
flight to a consumer are left to it, except by ``purge``, which (as ActiveMQ's does) drops the
stored copies too, so a consumer's later acknowledgement finds nothing left to remove.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ferrymq.core import advisory, codec
from ferrymq.core.advisory import AdvisoryPublisher
from ferrymq.core.context import CoreContext
from ferrymq.core.destination import Destination
from ferrymq.core.destinations import Destinations
from ferrymq.core.entry import Entry
from ferrymq.core.errors import BrokerError
from ferrymq.core.message import (
    DEFAULT_PRIORITY,
    MAX_PRIORITY,
    Message,
    MessageId,
    require_long,
)
from ferrymq.core.mirror import rerouting
from ferrymq.core.outcome import Outcome, refused
from ferrymq.core.queue import Queue
from ferrymq.core.routing import Router
from ferrymq.core.selector import Selector, SelectorError, parse_selector
from ferrymq.core.selector.jms_fields import lookup_for
from ferrymq.core.subscriptions import SubscriptionRegistry
from ferrymq.store.base import StoredMessage

DLQ_PROPERTIES = ("dlqDeliveryFailureCause", "originalDeliveryMode")
"""What dead-lettering added to a message, taken off again when it is retried."""
BROKER_HEADERS = frozenset(
    {
        "destination",
        "receipt",
        "transaction",
        "content-length",
        "message-id",
        "redelivered",
        "subscription",
        "ack",
        "original-destination",
        "timestamp",
        "JMSXUserID",
        "JMSXDeliveryCount",
        "JMSActiveMQBrokerPath",
        "ferrymq.producer-message-id",
    }
)
"""Headers of a MESSAGE that the broker sets (ActiveMQ strips them from a SEND): a test
message may not name them."""


class Refusal(enum.Enum):
    """Why an operator's command was refused, so the admin API can answer 404, 409 or 400."""

    NOT_FOUND = "not found"
    IN_USE = "in use"
    INVALID = "invalid"
    NOT_SERVING = "not serving"
    """A slave, or a broker stopping: the service refuses before the core is asked."""


@dataclass
class ManagementError(BrokerError):
    reason: Refusal = Refusal.INVALID


@dataclass(frozen=True, slots=True)
class Paging:
    """Where a queue's paged-out messages start in the store (the service loads them)."""

    container: str
    cursor: int
    paged_out: int


class Management:
    """ActiveMQ's ``QueueView``/``BrokerView`` operations over the core's parts."""

    def __init__(
        self,
        context: CoreContext,
        queues: Mapping[Destination, Queue],
        destinations: Destinations,
        subscriptions: SubscriptionRegistry,
        router: Router,
        advisories: AdvisoryPublisher,
    ) -> None:
        self._context = context
        self._queues = queues
        self._destinations = destinations
        self._subscriptions = subscriptions
        self._router = router
        self._advisories = advisories

    def _decide(self, command: Callable[[], int]) -> Outcome:
        store_ops = self._context.effects.store_ops
        before = len(store_ops)
        try:
            affected = command()
        except BrokerError as refusal:
            return refused(refusal, needs_commit=len(store_ops) > before)
        return Outcome(needs_commit=len(store_ops) > before, affected=affected)

    def _queue(self, destination: Destination) -> Queue:
        if destination.is_topic:
            raise ManagementError(f"{destination.qualified} is not a queue")
        queue = self._queues.get(destination)
        if queue is None:
            raise ManagementError(f"no queue named {destination.name!r}", reason=Refusal.NOT_FOUND)
        return queue

    def paging(self, destination: Destination) -> Paging | None:
        """The queue's messages that are only in the store, or None (all in memory, or gone)."""
        queue = self._queues.get(destination)
        if queue is None or not queue.paged_out:
            return None
        return Paging(queue.key, queue.cursor, queue.paged_out)

    def read_page(self, destination: Destination, records: list[StoredMessage]) -> None:
        """A page the operator's command read (``paging``): it joins the queue and dispatches,
        leaving the queue's own page-in request and its count of what the store holds alone
        (a read that overlaps the queue's own must not settle or zero them)."""
        queue = self._queues.get(destination)
        if queue is not None:
            queue.paged_in(records, len(records), requested=False)
            queue.dispatch()

    # -- commands -----------------------------------------------------------------------------

    def purge(self, destination: Destination) -> Outcome:
        """``QueueViewMBean.purge``: every message of the queue, in memory, paged out and in
        flight, is removed; the queue and its consumers stay."""
        return self._decide(lambda: self._purge(destination))

    def _purge(self, destination: Destination) -> int:
        queue = self._queue(destination)
        count = queue.paged_out + len(queue.pending)
        usage = self._context.usage
        purged = queue.purge()
        for entry in purged:
            if entry.stored and entry.message.persistent and queue.storable:
                usage.store_used -= len(codec.encode(entry.message))  # as ``Queue.settle``
        mirror = self._context.mirror
        if mirror is not None:
            mirror.purged(destination, purged)
        queue.stats.dequeued += count
        for consumer in queue.consumers:
            for entry in consumer.in_flight_entries():
                if entry.container is queue and not entry.dropped:
                    self._drop_in_flight(queue, entry)
        return count

    def _drop_in_flight(self, queue: Queue, entry: Entry) -> None:
        """Its store row went with the purge: an ack changes nothing more, and a consumer that
        gives it back (closes, rolls back) does not get it delivered to another."""
        if entry.stored and entry.message.persistent and queue.storable:
            self._context.usage.store_used -= len(codec.encode(entry.message))
        entry.stored = False
        entry.dropped = True

    def remove_destination(self, destination: Destination) -> Outcome:
        """``BrokerViewMBean.removeQueue``/``removeTopic``: its consumers are closed, its
        messages dropped, and it does not come back at the next start."""
        return self._decide(lambda: self._remove(destination))

    def _remove(self, destination: Destination) -> int:
        if not self._destinations.exists(destination):
            kind = "topic" if destination.is_topic else "queue"
            raise ManagementError(f"no {kind} named {destination.name!r}", reason=Refusal.NOT_FOUND)
        queue = self._queues.get(destination)
        count = queue.depth if queue is not None else 0
        self._destinations.remove(destination)
        mirror = self._context.mirror
        if mirror is not None:
            mirror.purged(destination, ())  # a mirror queue's events went with it
        return count

    def move(
        self,
        source: Destination,
        target: Destination,
        selector: str | None = None,
        limit: int | None = None,
        *,
        copy: bool = False,
        from_seq: int = 0,
    ) -> Outcome:
        """``moveMatchingMessagesTo``/``copyMatchingMessagesTo`` over what ``source`` holds in
        memory: at most ``limit`` waiting messages that ``selector`` selects (of those stored
        from ``from_seq`` on: a page just read in)."""
        with rerouting():
            return self._decide(lambda: self._move(source, target, selector, limit, copy, from_seq))

    def _move(
        self,
        source: Destination,
        target: Destination,
        selector: str | None,
        limit: int | None,
        copy: bool,
        from_seq: int,
    ) -> int:
        queue = self._queue(source)
        if target.is_topic or target.is_temporary or target.is_wildcard:
            raise ManagementError(f"messages move to a queue, not to {target.qualified}")
        if target == source:
            raise ManagementError(f"the source and target are the same queue: {source.name!r}")
        entries = self._select(queue, _compile(selector), limit, from_seq)
        for entry in entries:
            message = entry.message
            if copy:
                moved = message.copy(
                    destination=target,
                    message_id=self._context.new_message_id(),
                    producer_message_id=None,
                )
            else:
                moved = message.copy(destination=target, redelivery_count=entry.redelivery_count)
                queue.pending.remove(entry)
                queue.settle(entry)
            self._router.route_internal(moved)
        return len(entries)

    def retry(
        self,
        dead_letter_queue: Destination,
        selector: str | None = None,
        limit: int | None = None,
        from_seq: int = 0,
    ) -> Outcome:
        """``QueueViewMBean.retryMessages``: dead letters go back to the destination they were
        first sent to, with a fresh delivery count; one without that record stays."""
        with rerouting():
            return self._decide(lambda: self._retry(dead_letter_queue, selector, limit, from_seq))

    def _retry(
        self, queue_name: Destination, selector: str | None, limit: int | None, from_seq: int
    ) -> int:
        queue = self._queue(queue_name)
        entries = [
            e
            for e in self._select(queue, _compile(selector), None, from_seq)
            if e.message.original_destination is not None
        ][:limit]
        for entry in entries:
            message = entry.message
            properties = {k: v for k, v in message.properties.items() if k not in DLQ_PROPERTIES}
            retried = message.copy(
                destination=message.original_destination,
                original_destination=None,
                persistent=message.properties.get("originalDeliveryMode") != "NON_PERSISTENT",
                redelivery_count=0,
                properties=properties,
            )
            queue.pending.remove(entry)
            queue.settle(entry)
            self._router.route_internal(retried)
        return len(entries)

    def destroy_durable(self, client_id: str, subscription_name: str) -> Outcome:
        """``BrokerViewMBean.destroyDurableSubscriber``: refused while a consumer is active."""
        return self._decide(lambda: self._destroy_durable(client_id, subscription_name))

    def _destroy_durable(self, client_id: str, name: str) -> int:
        subscriptions = self._subscriptions
        destination = subscriptions.durable_destination(client_id, name)
        subscription = subscriptions.durable(client_id, name)
        if destination is None or subscription is None:
            raise ManagementError(
                f"no durable subscription {name!r} of client {client_id!r}",
                reason=Refusal.NOT_FOUND,
            )
        if subscription.consumers:
            raise ManagementError(
                f"durable subscription {name!r} of client {client_id!r} is active; "
                "close its consumer first",
                reason=Refusal.IN_USE,
            )
        count = subscription.depth
        subscriptions.destroy_durable(client_id, name)
        if not destination.is_advisory:
            # Bridges forget their durable demand for it (ActiveMQ's RemoveSubscriptionInfo).
            self._advisories.advise(
                advisory.consumer_topic(destination),
                lambda: advisory.subscription_removed(client_id, name, destination),
            )
        return count

    def send(
        self, destination: Destination, body: bytes, headers: Mapping[str, str]
    ) -> tuple[Outcome, str]:
        """The console's "send to": a message made by the broker, persistent unless
        ``headers`` say ``persistent: false``; returns its message id."""
        message_id = self._context.new_message_id()
        outcome = self._decide(lambda: self._send(message_id, destination, body, headers))
        return outcome, message_id

    def _send(
        self,
        message_id: MessageId,
        destination: Destination,
        body: bytes,
        headers: Mapping[str, str],
    ) -> int:
        if destination.is_wildcard or destination.is_temporary:
            raise ManagementError(f"cannot send to {destination.qualified}")
        for name, value in headers.items():
            if name in BROKER_HEADERS:
                raise ManagementError(f"header {name} is set by the broker, not by the sender")
            if not name or any(c in name for c in ":\r\n") or any(c in value for c in "\r\n"):
                raise ManagementError(f"header {name!r} must be one line, its name without ':'")
        properties = dict(headers)
        persistent = properties.pop("persistent", "true").lower() != "false"
        priority = _number(properties.pop("priority", str(DEFAULT_PRIORITY)), "priority")
        if not 0 <= priority <= MAX_PRIORITY:
            raise ManagementError(f"priority must be 0 to {MAX_PRIORITY}, got {priority}")
        expires = require_long("expires", _number(properties.pop("expires", "0"), "expires"))
        message = Message(
            message_id,
            destination,
            body,
            properties,
            persistent=persistent,
            priority=priority,
            expires=expires,
            timestamp=self._context.now_ms,
        )
        self._router.route_internal(message)
        return 1

    def _select(
        self, queue: Queue, selector: Selector | None, limit: int | None, from_seq: int
    ) -> list[Entry]:
        chosen: list[Entry] = []
        for entry in queue.pending:
            if limit is not None and len(chosen) >= limit:
                break
            if entry.seq < from_seq:
                continue
            message = entry.message
            if selector is None or selector.matches(lookup_for(message, entry.redelivery_count)):
                chosen.append(entry)
        return chosen


def _compile(selector: str | None) -> Selector | None:
    if not selector:
        return None
    try:
        return parse_selector(selector)
    except SelectorError as exc:
        raise ManagementError(f"invalid selector {selector!r}: {exc}") from None


def _number(text: str, name: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ManagementError(f"header {name} must be a whole number, got {text!r}") from None
