"""Adding, removing and browsing consumers: ActiveMQ's ``addConsumer``/``removeConsumer``.

A queue consumer joins its queue (a wildcard one every queue it matches and may read, those
created later included: ``core.authorization.may_join``); a topic consumer gets a subscription
from the ``SubscriptionRegistry``. Each arrival and departure is advised, and a consumer that
leaves gives its unacknowledged messages back for redelivery.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ferrymq.core import advisory
from ferrymq.core.advisory import AdvisoryPublisher
from ferrymq.core.authorization import check_temporary_owner, may_join
from ferrymq.core.connection import ConnectionState
from ferrymq.core.consumer import Consumer
from ferrymq.core.context import CoreContext
from ferrymq.core.destination import Destination
from ferrymq.core.effects import TraceKind
from ferrymq.core.entry import Entry
from ferrymq.core.errors import BrokerError
from ferrymq.core.ledger import forget_consumer
from ferrymq.core.outcome import QueueBrowse
from ferrymq.core.queue import Queue
from ferrymq.core.selector.jms_fields import lookup_for
from ferrymq.core.subscriptions import SubscriptionRegistry


class Consumers:
    def __init__(
        self,
        context: CoreContext,
        *,
        connections: Mapping[str, ConnectionState],
        queues: Mapping[Destination, Queue],
        queue: Callable[[Destination], Queue],
        has_destination: Callable[[Destination], bool],
        subscriptions: SubscriptionRegistry,
        advisories: AdvisoryPublisher,
    ) -> None:
        """``connections`` and ``queues`` are the broker's (read live); ``queue`` finds or
        creates a queue."""
        self._context = context
        self._connections = connections
        self._queues = queues
        self._queue = queue
        self._has_destination = has_destination
        self._subscriptions = subscriptions
        self._advisories = advisories
        self._wildcard_queue_consumers: list[Consumer] = []

    def attach_wildcards(self, queue: Queue) -> None:
        """A new queue gets the wildcard consumers that match it and may read it."""
        destination = queue.destination
        for consumer in self._wildcard_queue_consumers:
            if consumer.pattern.matches(destination) and may_join(
                self._connections.get(consumer.connection_id), consumer.network, destination
            ):
                queue.add_consumer(consumer)

    def add(self, state: ConnectionState, consumer: Consumer, *, start: bool) -> None:
        _check(state, consumer, self._has_destination)
        destination = consumer.destination
        if state.guard is not None:
            state.guard.check_consume(destination, self._has_destination)
        check_temporary_owner(state, consumer.network, destination)
        if destination.is_topic:
            self._subscriptions.subscribe(state, consumer)
        else:
            if destination.is_wildcard:
                self._wildcard_queue_consumers.append(consumer)
                queues = [
                    q
                    for d, q in self._queues.items()
                    if consumer.pattern.matches(d) and may_join(state, consumer.network, d)
                ]
            else:
                queues = [self._queue(destination)]
            for queue in queues:
                queue.add_consumer(consumer)
        state.consumers[consumer.subscription_id] = consumer
        if self._context.tracing:
            self._context.trace_consumer(TraceKind.SUBSCRIBED, consumer)
        if start:
            self.start(consumer)

    def start(self, consumer: Consumer) -> None:
        """Advise the consumer's arrival, then give it its first messages (unless it is gone)."""
        state = self._connections.get(consumer.connection_id)
        if state is None or state.consumers.get(consumer.subscription_id) is not consumer:
            return
        self._advisories.advise_consumer(state, consumer, added=True)
        listener = self._subscriptions.advisory_listener(consumer)
        if listener is not None:
            self._advisories.replay(listener)
        for container in list(consumer.containers):
            container.dispatch()

    def control(self, state: ConnectionState, subscription_id: str, prefetch: int) -> None:
        """ActiveMQ's ``ConsumerControl``: a consumer's prefetch window changes while it runs
        (AMQP's link credit is this window). A wider window is filled at once; a narrower one
        takes back nothing already delivered, it only holds back the next deliveries."""
        consumer = state.consumers.get(subscription_id)
        if consumer is None:
            raise BrokerError(f"No subscription matched: {subscription_id}")
        if prefetch < 0:
            raise BrokerError(f"a prefetch window is 0 or more, not {prefetch}")
        consumer.grant(prefetch)
        for container in list(consumer.containers):
            container.dispatch()

    def remove(
        self, state: ConnectionState, subscription_id: str, *, destroy_durable: bool = False
    ) -> None:
        consumer = state.consumers.pop(subscription_id, None)
        if consumer is None:
            raise BrokerError(f"No subscription matched: {subscription_id}")
        forget_consumer(state, consumer)
        entries = consumer.take_all()
        containers = list(consumer.containers)
        for entry in entries:
            entry.container.release(entry)
        if consumer in self._wildcard_queue_consumers:
            self._wildcard_queue_consumers.remove(consumer)
        if consumer.destination.is_topic:
            self._subscriptions.unsubscribe(state, consumer, destroy=destroy_durable)
        else:
            for container in containers:
                container.remove_consumer(consumer)
        self._advisories.advise_consumer(state, consumer, added=False)
        if self._context.tracing:
            self._context.trace_consumer(TraceKind.UNSUBSCRIBED, consumer)
        for container in containers:
            container.dispatch()

    def authorize_browse(self, state: ConnectionState, browser: Consumer) -> None:
        """A browser reads its queue (and creates nothing), checked before it is answered;
        another connection's temporary queue is refused to it as to a consumer."""
        check_temporary_owner(state, browser.network, browser.destination)
        if state.guard is not None:
            state.guard.check_consume(browser.destination, lambda _: True)

    def browse(self, browser: Consumer) -> QueueBrowse:
        """The messages of the browser's queue held in memory that it selects, waiting or in
        flight, in order, and where the paged-out ones start in the store."""
        queue = self._queues.get(browser.destination)
        if queue is None:
            return QueueBrowse([], browser.destination.qualified, 0, 0)
        entries: list[Entry] = list(queue.pending)
        for consumer in queue.consumers:
            entries.extend(e for e in consumer.in_flight_entries() if e.container is queue)
        entries.sort(key=lambda e: e.seq)
        now = self._context.now_ms
        messages = [
            e.message
            for e in entries
            if not e.message.is_expired(now)
            and browser.matches(e.message, lookup_for(e.message, e.message.redelivery_count))
        ]
        return QueueBrowse(messages, queue.key, queue.cursor, queue.paged_out)

    def destroy_durable(self, state: ConnectionState, subscription_name: str) -> None:
        """Delete a durable subscription, closing its consumer if this connection holds it."""
        client_id = state.client_id
        destination = self._subscriptions.durable_destination(client_id, subscription_name)
        if destination is not None and not destination.is_advisory:
            # Bridges forget their durable demand for it (ActiveMQ's RemoveSubscriptionInfo).
            self._advisories.advise(
                advisory.consumer_topic(destination),
                lambda: advisory.subscription_removed(client_id, subscription_name, destination),
            )
        for subscription_id, consumer in list(state.consumers.items()):
            if consumer.durable_name == subscription_name:
                self.remove(state, subscription_id, destroy_durable=True)
                return
        if not self._subscriptions.destroy_durable(client_id, subscription_name):
            raise BrokerError(
                f"No durable subscription exists for clientID: {client_id} "
                f"and subscriptionName: {subscription_name}"
            )


def _check(
    state: ConnectionState, consumer: Consumer, exists: Callable[[Destination], bool]
) -> None:
    """Refuse a consumer the broker cannot serve, before anything changes."""
    if consumer.subscription_id in state.consumers:
        raise BrokerError(f"subscription id {consumer.subscription_id!r} is already in use")
    destination = consumer.destination
    if destination.is_temporary and not exists(destination):
        raise BrokerError(f"Cannot subscribe to a deleted Destination: {destination}")
    if consumer.durable_name is not None and not destination.is_topic:
        raise BrokerError("Invalid Subscription: cannot durably subscribe to a Queue destination!")
    if consumer.prefetch <= 0 and not consumer.credit_mode:  # credit comes after the attach
        raise BrokerError("activemq.prefetchSize must be greater than 0")
    if consumer.browser:
        raise BrokerError("browsers are served by the service, not subscribed")
