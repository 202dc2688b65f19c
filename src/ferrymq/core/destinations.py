"""The broker's queues and topics as a whole: created on first use, removed, recovered, paged in.

ActiveMQ keeps this in its regions' destination maps (``AbstractRegion.addDestination``,
``removeDestination``). A queue is created by its first send or consumer, a topic likewise, each
announced on the destination advisory topics; a queue that is not temporary is also recorded in
the store, so it exists again after a restart even while empty.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping

from ferrymq.core import advisory
from ferrymq.core.advisory import AdvisoryPublisher
from ferrymq.core.authorization import ADMIN
from ferrymq.core.connection import ConnectionState
from ferrymq.core.consumers import Consumers
from ferrymq.core.context import CoreContext, Dispatch
from ferrymq.core.destination import Destination
from ferrymq.core.queue import Queue
from ferrymq.core.subscriptions import SubscriptionRegistry
from ferrymq.core.topic import Topic
from ferrymq.store.base import AddDestination, Recovery, RemoveDestination, StoredMessage

EXPIRY_SWEEP_MS = 30000
"""The longest time between two sweeps for expired messages."""


class Destinations:
    def __init__(
        self,
        context: CoreContext,
        dispatch: Dispatch,
        *,
        connections: Mapping[str, ConnectionState],
        queues: MutableMapping[Destination, Queue],
        topics: MutableMapping[Destination, Topic],
        subscriptions: SubscriptionRegistry,
        advisories: AdvisoryPublisher,
        consumers: Consumers,
    ) -> None:
        """``queues`` and ``topics`` are the broker's registries, which this part fills."""
        self._context = context
        self._dispatch = dispatch
        self._connections = connections
        self._queues = queues
        self._topics = topics
        self._subscriptions = subscriptions
        self._advisories = advisories
        self._consumers = consumers
        self._next_expiry_sweep = 0

    def queue(self, destination: Destination, *, persist: bool = True) -> Queue:
        """The queue, created (and, unless ``persist`` is False, recorded) if it is new."""
        queue = self._queues.get(destination)
        if queue is None:
            queue = Queue(
                self._context,
                self._dispatch,
                destination.qualified,
                destination,
                storable=not destination.is_temporary,
            )
            self._queues[destination] = queue
            self._consumers.attach_wildcards(queue)
            if persist and not destination.is_temporary:
                self._context.effects.store_ops.append(AddDestination(destination.qualified))
                if self._context.mirror is not None:
                    self._context.mirror.created(destination)
            self._advisories.advise_destination(destination, advisory.ADD_OPERATION)
        return queue

    def topic(self, destination: Destination) -> Topic:
        topic = self._topics.get(destination)
        if topic is None:
            topic = Topic(destination)
            self._topics[destination] = topic
            self._subscriptions.attach_matching(topic)
            if self._context.mirror is not None:
                self._context.mirror.created(destination)
            self._advisories.advise_destination(destination, advisory.ADD_OPERATION)
        return topic

    def exists(self, destination: Destination) -> bool:
        pool: Mapping[Destination, object] = self._topics if destination.is_topic else self._queues
        return destination in pool

    def create_temporary(self, state: ConnectionState, destination: Destination) -> None:
        """A temporary destination lives as long as the connection that created it."""
        if destination not in state.temporary_destinations:
            if state.guard is not None:
                state.guard.check(ADMIN, destination)  # tempDestinationAuthorizationEntry
            state.temporary_destinations.add(destination)
            if destination.is_topic:
                self.topic(destination)
            else:
                self.queue(destination)

    def remove(self, destination: Destination) -> None:
        """Delete a destination: its consumers are closed and its messages dropped."""
        if destination.is_topic:
            topic = self._topics.pop(destination, None)
            if topic is None:
                return
            for subscription in list(topic.subscriptions):
                topic.detach(subscription)
        elif not self._remove_queue(destination):
            return
        for state in self._connections.values():
            state.temporary_destinations.discard(destination)
        if self._context.mirror is not None:
            self._context.mirror.deleted(destination)
        self._advisories.advise_destination(destination, advisory.REMOVE_OPERATION)

    def _remove_queue(self, destination: Destination) -> bool:
        queue = self._queues.pop(destination, None)
        if queue is None:
            return False
        for consumer in list(queue.consumers):
            owner = self._connections.get(consumer.connection_id)
            if owner is not None and consumer.subscription_id in owner.consumers:
                self._consumers.remove(owner, consumer.subscription_id)
        for entry in queue.purge():
            entry.consumer = None
        if not destination.is_temporary:
            self._context.effects.store_ops.append(RemoveDestination(destination.qualified))
        return True

    # -- the store's side ---------------------------------------------------------------------

    def recover(self, recovery: Recovery) -> None:
        """Rebuild destinations and durable subscriptions from the store after a start; every
        stored message is paged out until a consumer wants it."""
        for name in recovery.destinations:
            destination = Destination.parse_qualified(name)
            if destination.is_topic:
                self.topic(destination)
            else:
                self.queue(destination, persist=False)
        for record in recovery.durable_subscriptions:
            self._subscriptions.recover_durable(record)
        for state in recovery.containers.values():
            container = self.container(state.container)
            if container is None:
                if not state.container.startswith("queue://"):
                    continue
                container = self.queue(Destination.parse_qualified(state.container))
            container.recovered(state.count, state.first_seq)
            self._context.usage.store_used += state.bytes
            container.dispatch()

    def container(self, key: str) -> Queue | None:
        """A queue or durable subscription by its name in the store."""
        if key.startswith(("queue://", "temp-queue://")):
            return self._queues.get(Destination.parse_qualified(key))
        return self._subscriptions.by_key(key)

    def paged_in(self, container_key: str, records: list[StoredMessage], limit: int) -> None:
        container = self.container(container_key)
        if container is None:
            return
        container.paged_in(records, limit)
        container.dispatch()

    def sweep_expired(self, now_ms: int) -> None:
        """Take expired messages out of every container, at most as often as the shortest
        ``expireMessagesPeriod`` asks (and at least every 30 s)."""
        if now_ms < self._next_expiry_sweep:
            return
        period = EXPIRY_SWEEP_MS
        containers: list[Queue] = list(self._queues.values())
        containers.extend(self._subscriptions.all())
        for container in containers:
            period = min(period, container.policy.expire_messages_period_ms or period)
            container.sweep_expired(now_ms)
        self._next_expiry_sweep = now_ms + period
