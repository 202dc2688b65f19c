"""The broker's domain in one synchronous object: ActiveMQ calls this part the RegionBroker.

Every operation is a plain method call that changes state and appends what must happen next to
``effects`` (deliveries, store writes, page-ins, connections to close); the service drains them.
Time comes in through ``now`` (set by the caller before each batch), so every decision here can be
replayed in a test without a clock, a socket or a store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ferrymq.core import advisory, codec
from ferrymq.core.connection import ConnectionState
from ferrymq.core.consumer import AckMode, Consumer
from ferrymq.core.container import MessageContainer
from ferrymq.core.dedup import DEFAULT_WINDOW, DuplicateDetector
from ferrymq.core.destination import Destination, DestinationPattern
from ferrymq.core.effects import CloseConnection, Delivery, Effects, PageIn, TraceEvent, TraceKind
from ferrymq.core.entry import Entry
from ferrymq.core.errors import BrokerError
from ferrymq.core.message import Message, MessageId
from ferrymq.core.policy import PolicyLookup, default_policy_lookup
from ferrymq.core.scheduler import Scheduler, check_schedule, wants_scheduling
from ferrymq.core.subscriptions import SubscriptionRegistry
from ferrymq.core.topic import Topic, TopicSubscription
from ferrymq.core.transaction import TransactedAck, Transaction
from ferrymq.core.usage import SystemUsage, UsageLimits
from ferrymq.store.base import (
    AddDestination,
    MarkDelivered,
    Recovery,
    RemoveDestination,
    StoredMessage,
)


@dataclass(frozen=True, slots=True)
class AckRef:
    """Which delivery an ACK/NACK names, in whichever form its STOMP version allows."""

    ack_id: str | None = None
    message_id: str | None = None
    subscription_id: str | None = None


@dataclass(frozen=True, slots=True)
class DestinationStatistics:
    destination: Destination
    depth: int
    enqueued: int
    dequeued: int
    dispatched: int
    expired: int
    in_flight: int
    consumers: int
    paged_out: int


class RegionBroker:
    def __init__(
        self,
        broker_id: str,
        broker_name: str,
        *,
        broker_url: str = "",
        incarnation: str = "0",
        policies: PolicyLookup = default_policy_lookup,
        usage_limits: UsageLimits | None = None,
        duplicate_window: int = DEFAULT_WINDOW,
        advisory_support: bool = True,
        scheduler_support: bool = False,
    ) -> None:
        self.broker_id = broker_id
        self.broker_name = broker_name
        self.broker_url = broker_url
        self.incarnation = incarnation
        self.policies = policies
        self.usage = SystemUsage(usage_limits)
        self.dedup = DuplicateDetector(duplicate_window)
        self.advisory_support = advisory_support
        self.effects = Effects()
        self.tracing = False
        """Collect ``TraceEvent``s in ``effects.trace`` for the message trace."""
        self.now = 0
        self.seq = 0
        self.connections: dict[str, ConnectionState] = {}
        self.client_ids: dict[str, str] = {}
        self.queues: dict[Destination, MessageContainer] = {}
        self.topics: dict[Destination, Topic] = {}
        self.subscriptions = SubscriptionRegistry(self)
        self.scheduler: Scheduler | None = Scheduler(self) if scheduler_support else None
        self._wildcard_queue_consumers: list[Consumer] = []
        self._page_ins_requested: set[str] = set()
        self._dirty: dict[int, MessageContainer] = {}
        self._master_advisory: Message | None = None
        self._next_expiry_sweep = 0

    # -- plumbing -----------------------------------------------------------------------------

    def drain(self) -> Effects:
        """Everything decided since the last drain.  Containers that gained room (acks) are
        dispatched here, once per batch instead of once per ACK frame."""
        while self._dirty:
            containers = list(self._dirty.values())
            self._dirty.clear()
            for container in containers:
                container.dispatch()
        effects = self.effects
        self.effects = Effects()
        return effects

    def _dispatch_later(self, containers: Iterable[MessageContainer]) -> None:
        dirty = self._dirty
        for container in containers:
            dirty[id(container)] = container

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def new_message_id(self) -> MessageId:
        self.seq += 1
        return MessageId(f"ID:{self.broker_id}-{self.incarnation}:{self.seq}")

    def lookup_for(
        self, message: Message, redelivery_count: int = 0
    ) -> Callable[[str], object | None]:
        """Resolve selector identifiers: message properties, then JMS header names."""
        props = message.properties

        def lookup(name: str) -> object | None:
            value = props.get(name)
            if value is not None:
                return value
            special = _JMS_FIELDS.get(name)
            return special(message, redelivery_count) if special is not None else None

        return lookup

    def selects(self, consumer: Consumer, message: Message) -> bool:
        """Whether a consumer's selector (and noLocal) admits a message (browsers use it)."""
        return consumer.matches(message, self.lookup_for(message, message.redelivery_count))

    def _connection(self, connection_id: str) -> ConnectionState:
        try:
            return self.connections[connection_id]
        except KeyError:
            raise BrokerError(f"unknown connection {connection_id}") from None

    # -- recovery -----------------------------------------------------------------------------

    def recover(self, recovery: Recovery) -> None:
        """Rebuild destinations and durable subscriptions from the store after a start."""
        self.seq = max(self.seq, recovery.last_seq)
        self.dedup.seed(recovery.producer_message_ids)
        for name in recovery.destinations:
            destination = Destination.parse_qualified(name)
            if destination.is_topic:
                self.topic(destination)
            else:
                self.queue(destination, persist=False)
        for record in recovery.durable_subscriptions:
            self.subscriptions.recover_durable(record)
        for state in recovery.containers.values():
            container = self._container_by_key(state.container)
            if container is None:
                if not state.container.startswith("queue://"):
                    continue
                container = self.queue(Destination.parse_qualified(state.container))
            container.recovered(state.count, state.first_seq)
            self.usage.store_used += state.bytes
            container.dispatch()

    def _container_by_key(self, key: str) -> MessageContainer | None:
        if key.startswith(("queue://", "temp-queue://")):
            return self.queues.get(Destination.parse_qualified(key))
        return self.subscriptions.by_key(key)

    # -- connections --------------------------------------------------------------------------

    def add_connection(
        self,
        connection_id: str,
        client_id: str | None = None,
        *,
        user: str | None = None,
        remote_address: str | None = None,
    ) -> ConnectionState:
        if client_id is not None:
            holder = self.client_ids.get(client_id)
            if holder is not None:
                raise BrokerError(
                    f"Broker: {self.broker_name} - Client: {client_id} already connected"
                )
            self.client_ids[client_id] = connection_id
        state = ConnectionState(
            connection_id,
            client_id or connection_id,
            client_id is not None,
            user=user,
            remote_address=remote_address,
            connected_at=self.now,
        )
        self.connections[connection_id] = state
        self._advise(
            advisory.CONNECTION_TOPIC,
            lambda: advisory.connection_info(connection_id, state.client_id, user, remote_address),
        )
        return state

    def remove_connection(self, connection_id: str) -> None:
        state = self.connections.get(connection_id)
        if state is None:
            return
        for transaction_id in list(state.transactions):
            self.abort(connection_id, transaction_id)
        for subscription_id in list(state.consumers):
            self.unsubscribe(connection_id, subscription_id)
        for destination in list(state.temporary_destinations):
            self.remove_destination(destination)
        del self.connections[connection_id]
        if state.explicit_client_id and self.client_ids.get(state.client_id) == connection_id:
            del self.client_ids[state.client_id]
        self._advise(advisory.CONNECTION_TOPIC, lambda: advisory.connection_removed(connection_id))

    def close_connection(self, connection_id: str, reason: str) -> None:
        self.effects.closes.append(CloseConnection(connection_id, reason))

    # -- destinations -------------------------------------------------------------------------

    def queue(self, destination: Destination, *, persist: bool = True) -> MessageContainer:
        container = self.queues.get(destination)
        if container is None:
            container = MessageContainer(
                self,
                destination.qualified,
                destination,
                self.policies(destination),
                storable=not destination.is_temporary,
            )
            self.queues[destination] = container
            for consumer in self._wildcard_queue_consumers:
                if consumer.pattern.matches(destination):
                    container.add_consumer(consumer)
            if persist and not destination.is_temporary:
                self.effects.store_ops.append(AddDestination(destination.qualified))
            self._advise_destination(destination, advisory.ADD_OPERATION)
        return container

    def topic(self, destination: Destination) -> Topic:
        topic = self.topics.get(destination)
        if topic is None:
            topic = Topic(destination)
            self.topics[destination] = topic
            self.subscriptions.attach_matching(topic)
            if not destination.is_advisory:
                self._advise_destination(destination, advisory.ADD_OPERATION)
        return topic

    def create_temporary(self, connection_id: str, destination: Destination) -> None:
        state = self._connection(connection_id)
        if destination not in state.temporary_destinations:
            state.temporary_destinations.add(destination)
            if destination.is_topic:
                self.topic(destination)
            else:
                self.queue(destination)

    def remove_destination(self, destination: Destination) -> None:
        if destination.is_topic:
            topic = self.topics.pop(destination, None)
            if topic is None:
                return
            for subscription in list(topic.subscriptions):
                topic.detach(subscription)
        else:
            container = self.queues.pop(destination, None)
            if container is None:
                return
            for consumer in list(container.consumers):
                self._close_consumer_elsewhere(consumer, f"destination {destination} removed")
            for entry in container.purge():
                entry.consumer = None
            if not destination.is_temporary:
                self.effects.store_ops.append(RemoveDestination(destination.qualified))
        for state in self.connections.values():
            state.temporary_destinations.discard(destination)
        self._advise_destination(destination, advisory.REMOVE_OPERATION)

    def _close_consumer_elsewhere(self, consumer: Consumer, reason: str) -> None:
        owner = self.connections.get(consumer.connection_id)
        if owner is not None and consumer.subscription_id in owner.consumers:
            self.unsubscribe(consumer.connection_id, consumer.subscription_id)

    def _targets(self, destination: Destination) -> list[Destination]:
        """A wildcard send goes to every existing destination it matches (ActiveMQ)."""
        if not destination.is_wildcard:
            return [destination]
        pattern = DestinationPattern(destination)
        pool: Iterable[Destination] = self.topics if destination.is_topic else self.queues
        return [d for d in pool if pattern.matches(d) and not d.is_advisory]

    # -- producing ----------------------------------------------------------------------------

    def producer_blocked(self, message: Message) -> str | None:
        """Which resource is exhausted for this message, or None (producer flow control)."""
        full = self.usage.full_for(message.persistent)
        if full is None:
            return None
        if not self.policies(message.destination).producer_flow_control:
            return None
        return full

    def send(
        self,
        connection_id: str,
        message: Message,
        destinations: Sequence[Destination] = (),
        transaction: str | None = None,
    ) -> bool:
        """Accept a message; returns False when it is a duplicate that was not stored again."""
        state = self._connection(connection_id)
        targets = tuple(destinations) or (message.destination,)
        for destination in targets:
            if destination.is_temporary and not self._temporary_exists(destination):
                raise BrokerError(f"Cannot publish to a deleted Destination: {destination}")
        message.origin_connection = connection_id
        state.messages_sent += 1
        if self.scheduler is not None and wants_scheduling(message):
            check_schedule(message)  # refuse bad scheduling headers now, not at commit
        if transaction is not None:
            self._transaction(state, transaction).sends.append((message, targets))
            return True
        return self._route(message, targets)

    def has_destination(self, destination: Destination) -> bool:
        return self._temporary_exists(destination)

    def _temporary_exists(self, destination: Destination) -> bool:
        pool: dict[Destination, object] = (
            self.topics if destination.is_topic else self.queues  # type: ignore[assignment]
        )
        return destination in pool

    def _route(self, message: Message, targets: Sequence[Destination]) -> bool:
        producer_message_id = message.producer_message_id
        if producer_message_id is not None:
            if self.dedup.is_duplicate(producer_message_id):
                return False
            self.dedup.record(producer_message_id)
        if self.tracing:
            for target in targets:
                if not target.is_advisory:
                    self.effects.trace.append(TraceEvent(TraceKind.SENT, message, target))
        if self.scheduler is not None and wants_scheduling(message):
            self.scheduler.schedule(message, tuple(targets))
            return True
        self._deliver_to(message, targets)
        return True

    def deliver_scheduled(self, message: Message, targets: Sequence[Destination]) -> None:
        """The scheduler's delivery of a job that came due."""
        self._deliver_to(message, targets)

    def _deliver_to(self, message: Message, targets: Sequence[Destination]) -> None:
        seq = self.next_seq()
        for target in targets:
            for destination in self._targets(target):
                copy = (
                    message
                    if destination == message.destination
                    else message.copy(destination=destination)
                )
                self._enqueue(copy, seq)

    def _enqueue(self, message: Message, seq: int) -> None:
        destination = message.destination
        if destination.is_topic:
            self.topic(destination).publish(message, seq, self.lookup_for)
        else:
            self.queue(destination).offer(message, seq)

    def route_internal(self, message: Message) -> None:
        """Publish a broker-made message (advisories, dead letters)."""
        self._enqueue(message, self.next_seq())

    # -- consuming ----------------------------------------------------------------------------

    def subscribe(self, consumer: Consumer, *, start: bool = True) -> None:
        """Register a consumer; with ``start=False`` nothing is dispatched until ``start_consumer``
        (so a SUBSCRIBE's RECEIPT can go out before the first MESSAGE, as ActiveMQ guarantees)."""
        state = self._connection(consumer.connection_id)
        if consumer.subscription_id in state.consumers:
            raise BrokerError(f"subscription id {consumer.subscription_id!r} is already in use")
        destination = consumer.destination
        if destination.is_temporary and not self._temporary_exists(destination):
            raise BrokerError(f"Cannot subscribe to a deleted Destination: {destination}")
        if consumer.durable_name is not None and not destination.is_topic:
            raise BrokerError(
                "Invalid Subscription: cannot durably subscribe to a Queue destination!"
            )
        if consumer.prefetch <= 0:
            raise BrokerError("activemq.prefetchSize must be greater than 0")
        if consumer.browser:
            raise BrokerError("browsers are served by the service, not subscribed")
        if destination.is_topic:
            self.subscriptions.subscribe(state, consumer)
        else:
            if destination.is_wildcard:
                self._wildcard_queue_consumers.append(consumer)
                containers = [q for d, q in self.queues.items() if consumer.pattern.matches(d)]
            else:
                containers = [self.queue(destination)]
            for container in containers:
                container.add_consumer(consumer)
        state.consumers[consumer.subscription_id] = consumer
        if self.tracing:
            self.trace_consumer(TraceKind.SUBSCRIBED, consumer)
        if start:
            self.start_consumer(consumer)

    def start_consumer(self, consumer: Consumer) -> None:
        state = self.connections.get(consumer.connection_id)
        if state is None or state.consumers.get(consumer.subscription_id) is not consumer:
            return
        self._advise_consumer(state, consumer, added=True)
        self.subscriptions.replay_if_listener(consumer)
        for container in list(consumer.containers):
            container.dispatch()

    def unsubscribe(
        self, connection_id: str, subscription_id: str, *, destroy_durable: bool = False
    ) -> None:
        state = self._connection(connection_id)
        consumer = state.consumers.pop(subscription_id, None)
        if consumer is None:
            raise BrokerError(f"No subscription matched: {subscription_id}")
        for transaction in state.transactions.values():
            transaction.acks = [a for a in transaction.acks if a.consumer is not consumer]
        for ack_id in list(state.ack_owners):
            if state.ack_owners[ack_id] is consumer:
                del state.ack_owners[ack_id]
        entries = consumer.take_all()
        containers = list(consumer.containers)
        for entry in entries:
            entry.container.release(entry)
        if consumer in self._wildcard_queue_consumers:
            self._wildcard_queue_consumers.remove(consumer)
        if consumer.destination.is_topic:
            self.subscriptions.unsubscribe(state, consumer, destroy=destroy_durable)
        else:
            for container in containers:
                container.remove_consumer(consumer)
        self._advise_consumer(state, consumer, added=False)
        if self.tracing:
            self.trace_consumer(TraceKind.UNSUBSCRIBED, consumer)
        for container in containers:
            container.dispatch()

    def destroy_durable(self, connection_id: str, subscription_name: str) -> None:
        """UNSUBSCRIBE with ``activemq.subscriptionName``: the durable subscription is deleted."""
        state = self._connection(connection_id)
        destination = self.subscriptions.durable_destination(state.client_id, subscription_name)
        if destination is not None and not destination.is_advisory:
            # Bridges forget their durable demand for it (ActiveMQ's RemoveSubscriptionInfo).
            self._advise(
                advisory.consumer_topic(destination),
                lambda: advisory.subscription_removed(
                    state.client_id, subscription_name, destination
                ),
            )
        for subscription_id, consumer in list(state.consumers.items()):
            if consumer.durable_name == subscription_name:
                self.unsubscribe(connection_id, subscription_id, destroy_durable=True)
                return
        if not self.subscriptions.destroy_durable(state.client_id, subscription_name):
            raise BrokerError(
                f"No durable subscription exists for clientID: {state.client_id} "
                f"and subscriptionName: {subscription_name}"
            )

    def deliver(self, consumer: Consumer, entry: Entry) -> None:
        """Called by containers: hand ``entry`` to ``consumer`` and ledger it."""
        state = self.connections[consumer.connection_id]
        state.next_ack += 1
        ack_id = str(state.next_ack)
        consumer.record_delivery(ack_id, entry)
        if consumer.ack_mode is not AckMode.AUTO:
            state.ack_owners[ack_id] = consumer
        state.messages_delivered += 1
        if self.tracing:
            self.trace_entry(TraceKind.DELIVERED, entry, consumer)
        after_commit = entry.stored
        if after_commit and not entry.marked_delivered:
            entry.marked_delivered = True
            self.effects.store_ops.append(MarkDelivered(entry.container.key, entry.seq))
        self.effects.deliveries.append(Delivery(consumer, entry, ack_id, after_commit))

    # -- acknowledging ------------------------------------------------------------------------

    def _resolve(self, state: ConnectionState, ref: AckRef, verb: str) -> tuple[Consumer, str]:
        if ref.ack_id is not None:
            consumer = state.ack_owners.get(ref.ack_id)
            if consumer is not None and consumer.entry(ref.ack_id) is not None:
                return consumer, ref.ack_id
            raise BrokerError(f"Unexpected {verb} received for message-id [{ref.ack_id}]")
        if ref.message_id is None:
            raise BrokerError(f"{verb} received without a message-id to acknowledge")
        candidates: Iterable[Consumer]
        if ref.subscription_id is not None:
            consumer_or_none = state.consumers.get(ref.subscription_id)
            candidates = [consumer_or_none] if consumer_or_none is not None else []
        else:
            candidates = state.consumers.values()
        for consumer in candidates:
            ack_id = consumer.ack_id_for_message(ref.message_id)
            if ack_id is not None:
                return consumer, ack_id
        raise BrokerError(f"Unexpected {verb} received for message-id [{ref.message_id}]")

    def acknowledge(self, connection_id: str, ref: AckRef, transaction: str | None = None) -> None:
        self._settle(connection_id, ref, transaction, nack=False)

    def nack(self, connection_id: str, ref: AckRef, transaction: str | None = None) -> None:
        self._settle(connection_id, ref, transaction, nack=True)

    def _settle(
        self, connection_id: str, ref: AckRef, transaction: str | None, *, nack: bool
    ) -> None:
        state = self._connection(connection_id)
        consumer, ack_id = self._resolve(state, ref, "NACK" if nack else "ACK")
        cumulative = consumer.ack_mode is AckMode.CLIENT
        if transaction is not None:
            tx = self._transaction(state, transaction)
            covered = (
                consumer.entries_through(ack_id)
                if cumulative
                else [(ack_id, e) for e in [consumer.entry(ack_id)] if e is not None]
            )
            for _, entry in covered:
                entry.acked_in_transaction = transaction
                consumer.release_credit(entry)
            tx.acks.append(TransactedAck(consumer, [key for key, _ in covered], nack))
        else:
            taken = (
                consumer.take_through(ack_id) if cumulative else [(ack_id, consumer.take(ack_id))]
            )
            self._apply(state, consumer, taken, nack)
        self._dispatch_later(consumer.containers)

    def _apply(
        self,
        state: ConnectionState,
        consumer: Consumer,
        taken: list[tuple[str, Entry]],
        nack: bool,
    ) -> None:
        owners = state.ack_owners
        for key, entry in taken:
            owners.pop(key, None)
            container = entry.container
            if not nack:
                if self.tracing:
                    self.trace_entry(TraceKind.ACKED, entry, consumer)
                container.acknowledge(entry)
            elif container.policy.redelivery.nack_redelivers or (
                container.policy.dead_letter.is_dead_letter_destination(container.destination)
            ):
                container.release(entry)
            else:
                container.remove_in_flight(entry)
                self.dead_letter(entry, "Poison ack (STOMP NACK)")

    def acknowledge_written(self, deliveries: Iterable[Delivery]) -> None:
        """Auto-ack: the service wrote these MESSAGE frames, so they count as consumed."""
        connections = self.connections
        for delivery in deliveries:
            consumer = delivery.consumer
            if consumer.entry(delivery.ack_id) is None:
                continue  # unsubscribed meanwhile: already released
            if consumer.connection_id not in connections:
                continue
            entry = consumer.take(delivery.ack_id)
            if self.tracing:
                self.trace_entry(TraceKind.ACKED, entry, consumer)
            entry.container.acknowledge(entry)
            self._dispatch_later(consumer.containers)

    # -- transactions -------------------------------------------------------------------------

    def _transaction(self, state: ConnectionState, transaction_id: str) -> Transaction:
        try:
            return state.transactions[transaction_id]
        except KeyError:
            raise BrokerError(f"Invalid transaction id: {transaction_id}") from None

    def begin(self, connection_id: str, transaction_id: str) -> None:
        state = self._connection(connection_id)
        if transaction_id in state.transactions:
            raise BrokerError(f"The transaction was already started: {transaction_id}")
        state.transactions[transaction_id] = Transaction(transaction_id)

    def commit(self, connection_id: str, transaction_id: str) -> None:
        state = self._connection(connection_id)
        tx = self._transaction(state, transaction_id)
        del state.transactions[transaction_id]
        for message, targets in tx.sends:
            self._route(message, targets)
        for acked in tx.acks:
            consumer = acked.consumer
            taken: list[tuple[str, Entry]] = []
            for ack_id in acked.ack_ids:
                if consumer.entry(ack_id) is not None:
                    taken.append((ack_id, consumer.take(ack_id)))
            self._apply(state, consumer, taken, acked.nack)
            self._dispatch_later(consumer.containers)

    def abort(self, connection_id: str, transaction_id: str) -> None:
        state = self._connection(connection_id)
        tx = self._transaction(state, transaction_id)
        del state.transactions[transaction_id]
        for acked in tx.acks:
            for ack_id in acked.ack_ids:
                entry = acked.consumer.entry(ack_id)
                if entry is not None and entry.acked_in_transaction == transaction_id:
                    entry.acked_in_transaction = None
                    acked.consumer.restore_credit(entry)

    # -- dead letters and expiry ---------------------------------------------------------------

    def dead_letter(self, entry: Entry, cause: str) -> None:
        container = entry.container
        message = entry.message
        policy = container.policy.dead_letter
        target = policy.dead_letter_destination(message.original_destination or message.destination)
        container.settle(entry)
        if target is not None and not message.persistent and not policy.process_non_persistent:
            target = None
        if self.tracing:
            self.trace_entry(TraceKind.DEAD_LETTERED, entry, cause=cause, target=target)
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
        self.route_internal(copy)
        self._advise(advisory.dlq_topic(container.destination), lambda: message.body)

    def expire(self, entry: Entry) -> None:
        container = entry.container
        container.stats.expired += 1
        if self.tracing:
            self.trace_entry(TraceKind.EXPIRED, entry)
        policy = container.policy.dead_letter
        if policy.process_expired:
            self.dead_letter(entry, "Message expired")
        else:
            container.settle(entry)
        self._advise(advisory.expired_topic(container.destination), lambda: b"")

    def tick(self) -> None:
        """Periodic work: deliver scheduled messages that came due, sweep expired ones."""
        if self.scheduler is not None:
            self.scheduler.fire_due()
        if self.now < self._next_expiry_sweep:
            return
        period = 30000
        for container in self._all_containers():
            period = min(period, container.policy.expire_messages_period_ms or period)
            expired = [e for e in container.pending if e.message.is_expired(self.now)]
            for entry in expired:
                container.pending.remove(entry)
                self.expire(entry)
        self._next_expiry_sweep = self.now + period

    def _all_containers(self) -> list[MessageContainer]:
        containers: list[MessageContainer] = list(self.queues.values())
        containers.extend(self.subscriptions.all())
        return containers

    # -- the message trace ----------------------------------------------------------------------

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

    # -- paging -------------------------------------------------------------------------------

    def request_page_in(self, container: str, from_seq: int, limit: int) -> None:
        self.effects.page_ins.append(PageIn(container, from_seq, limit))

    def paged_in(self, container_key: str, records: list[StoredMessage], limit: int) -> None:
        container = self._container_by_key(container_key)
        if container is None:
            return
        container.paged_in(records, limit)
        container.dispatch()

    # -- browsing -----------------------------------------------------------------------------

    def browse(self, consumer: Consumer) -> tuple[list[Message], str, int, int]:
        """What a queue browser sees: the messages held in memory that it selects, in order,
        plus where the paged-out ones start in the store (the service reads those)."""
        destination = consumer.destination
        container = self.queues.get(destination)
        if container is None:
            return [], destination.qualified, 0, 0
        entries: list[Entry] = list(container.pending)
        for consumer in container.consumers:
            entries.extend(e for e in consumer.in_flight_entries() if e.container is container)
        entries.sort(key=lambda e: e.seq)
        return (
            [
                e.message
                for e in entries
                if not e.message.is_expired(self.now) and self.selects(consumer, e.message)
            ],
            container.key,
            container.cursor,
            container.paged_out,
        )

    # -- advisories ---------------------------------------------------------------------------

    def _advise(
        self, topic: Destination, body: Callable[[], bytes], extra: dict[str, str] | None = None
    ) -> None:
        if not self.advisory_support or not self.subscriptions.has_listeners(topic):
            return
        message = Message(
            self.new_message_id(),
            topic,
            body(),
            advisory.properties(self.broker_name, self.broker_id, self.broker_url, extra),
            timestamp=self.now,
        )
        self.route_internal(message)

    def _advise_destination(self, destination: Destination, operation: int) -> None:
        if destination.is_advisory:
            return
        self._advise(
            advisory.destination_topic(destination),
            lambda: advisory.destination_info(destination, operation),
        )

    def _advise_consumer(self, state: ConnectionState, consumer: Consumer, *, added: bool) -> None:
        destination = consumer.destination
        if destination.is_advisory:
            return
        topic = advisory.consumer_topic(destination)
        count = self._consumer_count(destination)
        body = (
            (lambda: advisory.consumer_info(consumer, state.client_id))
            if added
            else (lambda: advisory.consumer_removed(consumer))
        )
        self._advise(topic, body, {"consumerCount": str(count)})

    def _consumer_count(self, destination: Destination) -> int:
        if destination.is_topic:
            topic = self.topics.get(destination)
            return topic.consumer_count if topic is not None else 0
        container = self.queues.get(destination)
        return len(container.consumers) if container is not None else 0

    def announce_master(self) -> None:
        """``ActiveMQ.Advisory.MasterBroker``: sent when this broker becomes master, and kept
        (ActiveMQ's LastImage policy) for subscribers that come later."""
        if not self.advisory_support:
            return
        self._master_advisory = Message(
            self.new_message_id(),
            advisory.MASTER_BROKER_TOPIC,
            b"",
            advisory.properties(self.broker_name, self.broker_id, self.broker_url),
            timestamp=self.now,
        )
        if self.subscriptions.has_listeners(advisory.MASTER_BROKER_TOPIC):
            self.route_internal(self._master_advisory)

    def replay_advisories(self, subscription: TopicSubscription) -> None:
        """A new advisory subscriber first learns what already exists (ActiveMQ replays)."""
        if not self.advisory_support:
            return
        pattern = subscription.pattern
        replay: list[Message] = []
        if self._master_advisory is not None and pattern.matches(advisory.MASTER_BROKER_TOPIC):
            replay.append(self._master_advisory)

        def add(
            topic: Destination, body: Callable[[], bytes], extra: dict[str, str] | None = None
        ) -> None:
            if pattern.matches(topic):
                props = advisory.properties(
                    self.broker_name, self.broker_id, self.broker_url, extra
                )
                replay.append(
                    Message(self.new_message_id(), topic, body(), props, timestamp=self.now)
                )

        for state in self.connections.values():
            add(
                advisory.CONNECTION_TOPIC,
                lambda s=state: advisory.connection_info(  # type: ignore[misc]
                    s.connection_id, s.client_id, s.user, s.remote_address
                ),
            )
            for consumer in state.consumers.values():
                if consumer.destination.is_advisory or consumer is subscription.consumer:
                    continue
                add(
                    advisory.consumer_topic(consumer.destination),
                    lambda c=consumer, s=state: advisory.consumer_info(c, s.client_id),  # type: ignore[misc]
                    {"consumerCount": str(self._consumer_count(consumer.destination))},
                )
        for destination in [*self.queues, *self.topics]:
            if not destination.is_advisory:
                add(
                    advisory.destination_topic(destination),
                    lambda d=destination: advisory.destination_info(d, advisory.ADD_OPERATION),  # type: ignore[misc]
                )
        for message in replay:
            subscription.enqueue(message, self.next_seq())
        subscription.dispatch()

    # -- statistics ---------------------------------------------------------------------------

    def destination_statistics(self) -> list[DestinationStatistics]:
        result: list[DestinationStatistics] = []
        for destination, container in self.queues.items():
            s = container.stats
            result.append(
                DestinationStatistics(
                    destination,
                    container.depth,
                    s.enqueued,
                    s.dequeued,
                    s.dispatched,
                    s.expired,
                    container.in_flight,
                    len(container.consumers),
                    container.paged_out,
                )
            )
        for destination, topic in self.topics.items():
            s = topic.stats
            in_flight = sum(sub.in_flight for sub in topic.subscriptions)
            dequeued = sum(sub.stats.dequeued for sub in topic.subscriptions)
            expired = sum(sub.stats.expired for sub in topic.subscriptions)
            paged = sum(sub.paged_out for sub in topic.subscriptions)
            result.append(
                DestinationStatistics(
                    destination,
                    topic.depth,
                    s.enqueued,
                    dequeued,
                    s.dispatched,
                    expired,
                    in_flight,
                    topic.consumer_count,
                    paged,
                )
            )
        return result


def _delivery_mode(message: Message, redelivery_count: int) -> object:
    return "PERSISTENT" if message.persistent else "NON_PERSISTENT"


_JMS_FIELDS: dict[str, Callable[[Message, int], object | None]] = {
    "JMSMessageID": lambda m, e: m.message_id,
    "JMSPriority": lambda m, e: m.priority,
    "JMSTimestamp": lambda m, e: m.timestamp,
    "JMSExpiration": lambda m, e: m.expires,
    "JMSDeliveryMode": _delivery_mode,
    "JMSCorrelationID": lambda m, e: m.properties.get("correlation-id"),
    "JMSType": lambda m, e: m.properties.get("type"),
    "JMSReplyTo": lambda m, e: m.properties.get("reply-to"),
    "JMSDestination": lambda m, e: m.destination.qualified,
    "JMSRedelivered": lambda m, count: count > 0,
    "JMSXDeliveryCount": lambda m, count: count + 1,
    "JMSActiveMQBrokerPath": lambda m, e: ",".join(m.broker_path) if m.broker_path else None,
}


def decode_all(records: Iterable[StoredMessage]) -> list[Message]:
    """Decode stored records (browsing paged-out messages)."""
    return [codec.decode(r.blob) for r in records]
