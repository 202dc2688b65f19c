"""The broker's domain in one synchronous object: ActiveMQ's ``RegionBroker``.

It keeps the registries (connections, queues, topics and their subscriptions) and offers the
public commands. Each command returns an ``Outcome``: accepted or refused (with the reason), and
whether its confirmation must wait for a store write it queued. What a batch of commands decided
(deliveries, store writes, page-ins, trace events) accumulates until ``drain``, which the service
calls once per batch. Time enters as an argument (``begin_batch``, ``tick``), so every decision
here can be replayed in a test without a clock, a socket or a store.

The work is done by parts that share a ``CoreContext`` and never see this class: ``destinations``
creates and removes queues and topics, ``routing`` takes a sent message to them, queues and topic
subscriptions hold it (``queue``, ``topic``, ``subscriptions``), ``dispatch`` hands it out or lets
it die, ``consumers`` adds and removes consumers, ``ledger`` settles acks and transactions,
``advisory`` publishes advisories and ``scheduler`` delays deliveries; ``clients`` admits and
removes connections, each with the guard that authorizes its commands (``authorization``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from ferrymq.core import codec
from ferrymq.core.advisory import AdvisoryPublisher
from ferrymq.core.clients import Clients
from ferrymq.core.connection import ConnectionState
from ferrymq.core.consumer import Consumer, ConsumerContainer
from ferrymq.core.consumers import Consumers
from ferrymq.core.context import CoreContext
from ferrymq.core.dedup import DEFAULT_WINDOW
from ferrymq.core.destination import Destination
from ferrymq.core.destinations import Destinations
from ferrymq.core.dispatch import Dispatcher
from ferrymq.core.effects import Delivery, Effects
from ferrymq.core.errors import BrokerError
from ferrymq.core.ledger import AckRef, Ledger
from ferrymq.core.management import Management
from ferrymq.core.message import Message
from ferrymq.core.mirror import MirrorTap
from ferrymq.core.outcome import (
    ACCEPTED,
    ACCEPTED_DURABLY,
    DUPLICATE,
    Outcome,
    QueueBrowse,
    refused,
)
from ferrymq.core.policy import PolicyLookup
from ferrymq.core.queue import Queue
from ferrymq.core.routing import Router
from ferrymq.core.selector.jms_fields import lookup_for
from ferrymq.core.statistics import DestinationStatistics, destination_statistics
from ferrymq.core.subscriptions import SubscriptionRegistry
from ferrymq.core.topic import Topic
from ferrymq.core.transaction import Settlement
from ferrymq.core.usage import SystemUsage, UsageLimits
from ferrymq.security.api import Operation, Subject
from ferrymq.store.base import Recovery, StoredMessage

__all__ = ["AckRef", "RegionBroker", "Settlement", "decode_all"]

_ACCEPT = Settlement.ACCEPT


class RegionBroker:
    """ActiveMQ's ``RegionBroker``: the registries and the commands every protocol calls."""

    def __init__(
        self,
        broker_id: str,
        broker_name: str,
        *,
        policies: PolicyLookup,
        incarnation: str = "0",
        usage_limits: UsageLimits | None = None,
        duplicate_window: int = DEFAULT_WINDOW,
        advisory_support: bool = True,
        scheduler_support: bool = False,
    ) -> None:
        self.broker_id = broker_id
        self.broker_name = broker_name
        self.node_id = broker_id
        """Artemis's node id, what mirror peers see (broker connections set the kept one)."""
        context = CoreContext(broker_id, incarnation, policies, SystemUsage(usage_limits))
        self._context = context
        self.usage = context.usage
        self.next_seq = context.next_seq
        self.new_message_id = context.new_message_id
        self.connections: dict[str, ConnectionState] = {}
        self.client_ids: dict[str, str] = {}
        self.queues: dict[Destination, Queue] = {}
        self.topics: dict[Destination, Topic] = {}
        self._dirty: dict[int, ConsumerContainer] = {}
        self._wire(advisory_support, duplicate_window, scheduler_support)

    def _wire(self, advisory_support: bool, duplicate_window: int, scheduler_support: bool) -> None:
        """Build the parts, each given only what it uses (the registries are shared, read live).
        Where two parts need each other, one gets this broker's delegate instead (rare paths)."""
        context, connections = self._context, self.connections
        queues, topics = self.queues, self.topics
        dispatcher = Dispatcher(
            context, connections, route=self.route_internal, advise=self._advise
        )
        self.subscriptions = subscriptions = SubscriptionRegistry(
            context, dispatcher, topics=topics, topic=self.topic
        )
        self._advisories = advisories = AdvisoryPublisher(
            context,
            broker_name=self.broker_name,
            enabled=advisory_support,
            subscriptions=subscriptions,
            connections=connections,
            queues=queues,
            topics=topics,
            route=self.route_internal,
        )
        self._consumers = consumers = Consumers(
            context,
            connections=connections,
            queues=queues,
            queue=self.queue,
            has_destination=self.has_destination,
            subscriptions=subscriptions,
            advisories=advisories,
        )
        self._destinations = destinations = Destinations(
            context,
            dispatcher,
            connections=connections,
            queues=queues,
            topics=topics,
            subscriptions=subscriptions,
            advisories=advisories,
            consumers=consumers,
        )
        self.mirror = MirrorTap(context, destinations.queue)
        """The mirrors' events (``configure`` with the mirrors; dormant without)."""
        self._router = router = Router(
            context,
            queues=queues,
            topics=topics,
            queue=destinations.queue,
            topic=destinations.topic,
            exists=destinations.exists,
            duplicate_window=duplicate_window,
            scheduler_support=scheduler_support,
        )
        self.dedup = router.dedup
        self.scheduler = router.scheduler
        self._accept, self._route = router.accept, router.route  # the SEND path, looked up once
        self.management = Management(
            context, queues, destinations, subscriptions, router, advisories
        )
        self._ledger = ledger = Ledger(
            context,
            dispatcher,
            connections,
            route=router.route,
            dispatch_later=self._dispatch_later,
        )
        self.clients = Clients(
            context,
            self.broker_name,
            connections=connections,
            client_ids=self.client_ids,
            parts=(ledger, consumers, destinations),
            advise=self._advise,
        )
        """Who is connected; its ``authorizer`` (None: allow all) authorizes new connections."""

    # -- the batch ----------------------------------------------------------------------------

    def begin_batch(self, now_ms: int) -> None:
        """The time, epoch milliseconds, of the commands that follow (until the next call)."""
        self._context.begin_batch(now_ms)

    @property
    def now_ms(self) -> int:
        """The current batch's time (``begin_batch``); read straight from the context's slot,
        as the send path reads it for every message."""
        return self._context._now_ms

    @property
    def seq(self) -> int:
        """The last sequence number handed out (the store's keys, message ids)."""
        return self._context.seq

    @property
    def tracing(self) -> bool:
        """Collect ``TraceEvent``s in the effects, for the message trace."""
        return self._context.tracing

    @tracing.setter
    def tracing(self, on: bool) -> None:
        self._context.tracing = on

    @property
    def broker_url(self) -> str:
        """The address advisories name as their origin (the first listener's)."""
        return self._advisories.broker_url

    @broker_url.setter
    def broker_url(self, url: str) -> None:
        self._advisories.broker_url = url

    @property
    def effects(self) -> Effects:
        """What has been decided since the last ``drain`` (a test looks; the service drains)."""
        return self._context.effects

    def has_pending_writes(self) -> bool:
        """Whether store writes were decided that the next ``drain`` will hand over."""
        return bool(self._context.effects.store_ops)

    def drain(self) -> Effects:
        """Everything decided since the last drain.  Containers that gained room (acks) are
        dispatched here, once per batch instead of once per ACK frame."""
        while self._dirty:
            containers = list(self._dirty.values())
            self._dirty.clear()
            for container in containers:
                container.dispatch()
        context = self._context
        effects = context.effects
        context.effects = Effects()
        return effects

    def _dispatch_later(self, containers: Iterable[ConsumerContainer]) -> None:
        dirty = self._dirty
        for container in containers:
            dirty[id(container)] = container

    def _decide(self, command: Callable[[], object]) -> Outcome:
        """Run a command: refused if it raised ``BrokerError``; durable if it queued a write."""
        store_ops = self._context.effects.store_ops
        before = len(store_ops)
        try:
            command()
        except BrokerError as refusal:
            return refused(refusal, needs_commit=len(store_ops) > before)
        return ACCEPTED_DURABLY if len(store_ops) > before else ACCEPTED

    def _on(self, connection_id: str, command: Callable[[ConnectionState], object]) -> Outcome:
        """``_decide`` a command of one connection (refused if the connection is unknown)."""
        return self._decide(lambda: command(self._connection(connection_id)))

    def _connection(self, connection_id: str) -> ConnectionState:
        try:
            return self.connections[connection_id]
        except KeyError:
            raise BrokerError(f"unknown connection {connection_id}") from None

    def selects(self, consumer: Consumer, message: Message) -> bool:
        """Whether a consumer's selector (and noLocal) admits a message (browsers use it)."""
        return consumer.matches(message, lookup_for(message, message.redelivery_count))

    # -- recovery and paging ------------------------------------------------------------------

    def recover(self, recovery: Recovery) -> None:
        """Rebuild destinations and durable subscriptions from the store after a start."""
        self._context.seq = max(self._context.seq, recovery.last_seq)
        self.dedup.seed(recovery.producer_message_ids)
        with self.mirror.unmirrored():  # recreating what the store holds is no new event
            self._destinations.recover(recovery)

    def paged_in(self, container_key: str, records: list[StoredMessage], limit: int) -> None:
        """The store's answer to a ``PageIn``: the messages join their container and dispatch."""
        self._destinations.paged_in(container_key, records, limit)

    # -- connections --------------------------------------------------------------------------

    def add_connection(
        self,
        connection_id: str,
        client_id: str | None = None,
        *,
        user: str | None = None,
        remote_address: str | None = None,
        subject: Subject | None = None,
    ) -> Outcome:
        """Refused when another connection holds ``client_id`` (InvalidClientIDException);
        ``subject`` is who an ``Authenticator`` proved the client to be (its user wins)."""
        return self._decide(
            lambda: self.clients.add(connection_id, client_id, subject, user, remote_address)
        )

    def remove_connection(self, connection_id: str) -> Outcome:
        """Abort its transactions, close its consumers, delete its temporary destinations."""
        return self._decide(lambda: self.clients.remove(connection_id))

    # -- destinations (``destinations``) -------------------------------------------------------

    def queue(self, destination: Destination, *, persist: bool = True) -> Queue:
        return self._destinations.queue(destination, persist=persist)

    def topic(self, destination: Destination) -> Topic:
        return self._destinations.topic(destination)

    def has_destination(self, destination: Destination) -> bool:
        return self._destinations.exists(destination)

    def create_temporary(self, connection_id: str, destination: Destination) -> None:
        self._destinations.create_temporary(self._connection(connection_id), destination)

    def remove_destination(self, destination: Destination) -> None:
        self._destinations.remove(destination)

    # -- producing (``routing``) --------------------------------------------------------------

    def producer_blocked(self, message: Message) -> str | None:
        """Which resource is exhausted for this message, or None (producer flow control)."""
        return self._router.producer_blocked(message)

    def send(
        self,
        connection_id: str,
        message: Message,
        destinations: Sequence[Destination] = (),
        transaction: str | None = None,
    ) -> Outcome:
        """Accept a message (held back until COMMIT inside a transaction). A duplicate of a
        message already accepted is not stored again; its confirmation waits for the commit
        in flight, which may be the one that stores the first copy."""
        store_ops = self._context.effects.store_ops
        before = len(store_ops)
        try:
            state = self._connection(connection_id)
            targets = self._accept(state, message, destinations, transaction)
            if transaction is not None:
                self._ledger.transaction(state, transaction).sends.append((message, targets))
            elif not self._route(message, targets):
                return DUPLICATE
        except BrokerError as refusal:
            return refused(refusal, needs_commit=len(store_ops) > before)
        return ACCEPTED_DURABLY if len(store_ops) > before else ACCEPTED

    def route_internal(self, message: Message) -> None:
        """Publish a broker-made message (advisories, dead letters)."""
        self._router.route_internal(message)

    def _advise(self, topic: Destination, body: Callable[[], bytes]) -> None:
        self._advisories.advise(topic, body)

    # -- consuming (``consumers``) ------------------------------------------------------------

    def subscribe(self, consumer: Consumer, *, start: bool = True) -> Outcome:
        """Register a consumer; with ``start=False`` nothing is dispatched until ``start_consumer``
        (so a SUBSCRIBE's RECEIPT can go out before the first MESSAGE, as ActiveMQ guarantees)."""
        return self._on(
            consumer.connection_id, lambda state: self._consumers.add(state, consumer, start=start)
        )

    def start_consumer(self, consumer: Consumer) -> None:
        """Advise a subscribed consumer's arrival, then give it its first messages."""
        self._consumers.start(consumer)

    def control_consumer(self, connection_id: str, subscription_id: str, prefetch: int) -> Outcome:
        """Change a consumer's prefetch window (ActiveMQ's ``ConsumerControl``): the
        protocol-neutral form of consumer credit."""
        return self._on(
            connection_id, lambda state: self._consumers.control(state, subscription_id, prefetch)
        )

    def unsubscribe(self, connection_id: str, subscription_id: str) -> Outcome:
        return self._on(connection_id, lambda state: self._consumers.remove(state, subscription_id))

    def destroy_durable(self, connection_id: str, subscription_name: str) -> Outcome:
        """UNSUBSCRIBE with ``activemq.subscriptionName``: the durable subscription is deleted."""
        return self._on(
            connection_id, lambda state: self._consumers.destroy_durable(state, subscription_name)
        )

    # -- acknowledging and transactions (``ledger``) ------------------------------------------

    def acknowledge(
        self, connection_id: str, ref: AckRef, transaction: str | None = None
    ) -> Outcome:
        return self.settle(connection_id, ref, transaction, _ACCEPT)

    def nack(self, connection_id: str, ref: AckRef, transaction: str | None = None) -> Outcome:
        return self.settle(connection_id, ref, transaction, Settlement.NACK)

    def settle(
        self, connection_id: str, ref: AckRef, transaction: str | None, settlement: Settlement
    ) -> Outcome:
        """``_decide`` spelled out: an ACK per message is a hot path."""
        store_ops = self._context.effects.store_ops
        before = len(store_ops)
        try:
            self._ledger.settle(self._connection(connection_id), ref, transaction, settlement)
        except BrokerError as refusal:
            return refused(refusal, needs_commit=len(store_ops) > before)
        return ACCEPTED_DURABLY if len(store_ops) > before else ACCEPTED

    def acknowledge_written(self, deliveries: Iterable[Delivery]) -> None:
        """Auto-ack: the service wrote these MESSAGE frames, so they count as consumed."""
        self._ledger.acknowledge_written(deliveries)

    def begin(self, connection_id: str, transaction_id: str) -> Outcome:
        return self._on(connection_id, lambda state: self._ledger.begin(state, transaction_id))

    def commit(self, connection_id: str, transaction_id: str) -> Outcome:
        return self._on(connection_id, lambda state: self._ledger.commit(state, transaction_id))

    def abort(self, connection_id: str, transaction_id: str) -> Outcome:
        return self._on(connection_id, lambda state: self._ledger.abort(state, transaction_id))

    # -- time passing -------------------------------------------------------------------------

    def tick(self, now_ms: int) -> None:
        """Periodic work at ``now_ms`` (which begins a batch): deliver scheduled messages that
        came due, sweep expired ones."""
        self.begin_batch(now_ms)
        if self.scheduler is not None:
            self.scheduler.fire_due(now_ms)
        self._destinations.sweep_expired(now_ms)

    # -- what others read ---------------------------------------------------------------------

    def authorize_browse(self, browser: Consumer) -> Outcome:
        """Whether the browser's user may read its queue (checked before the browse starts)."""
        return self._on(
            browser.connection_id, lambda state: self._consumers.authorize_browse(state, browser)
        )

    def authorize_producer(self, connection_id: str, destination: Destination) -> Outcome:
        """Whether the connection's user may send to ``destination`` (an AMQP producer link
        is refused at attach, as ActiveMQ refuses a JMS producer at creation)."""

        def check(state: ConnectionState) -> None:
            if state.guard is not None:
                state.guard.check(Operation.WRITE, destination)

        return self._on(connection_id, check)

    def browse(self, browser: Consumer) -> QueueBrowse:
        """What a queue browser sees now; the service reads the paged-out rest from the store."""
        return self._consumers.browse(browser)

    def announce_master(self) -> None:
        """``ActiveMQ.Advisory.MasterBroker``: this broker just became master."""
        self._advisories.announce_master()

    def destination_statistics(self) -> list[DestinationStatistics]:
        return destination_statistics(self.queues, self.topics)


def decode_all(records: Iterable[StoredMessage]) -> list[Message]:
    """Decode stored records (browsing paged-out messages)."""
    return [codec.decode(r.blob) for r in records]
