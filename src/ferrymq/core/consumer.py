"""A consumer (a STOMP subscription) and its ledger of messages delivered but not yet acknowledged.

ActiveMQ's ``PrefetchSubscription``. The ledger keeps deliveries in the order they were
dispatched, because ``client`` acks are cumulative ("this one and every earlier one of the
subscription"), and indexes them by ack id (STOMP 1.2) and by message id (1.0/1.1).

``admits`` is the one admission rule (network filter, noLocal, selector) of both a queue's
consumers and a topic's subscriptions.
"""

from __future__ import annotations

import enum
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ferrymq.core.destination import Destination, DestinationPattern
from ferrymq.core.entry import Entry
from ferrymq.core.message import Message
from ferrymq.core.selector import Lookup, Selector

# ActiveMQPrefetchPolicy defaults, per kind of consumer.
QUEUE_PREFETCH = 1000
TOPIC_PREFETCH = 32767
DURABLE_TOPIC_PREFETCH = 100
QUEUE_BROWSER_PREFETCH = 500


@dataclass(frozen=True, slots=True)
class NetworkFilter:
    """What a network bridge's demand subscription may take (ActiveMQ's NetworkBridgeFilter):
    never a message that already crossed the broker it forwards to (self-avoiding paths), never
    one whose broker path already has ``message_ttl`` hops (-1: no limit), and, for a demand on a
    wildcard, never one whose own destination the connector excludes or does not include (a
    ``PRICE.>`` consumer must not pull an excluded ``PRICE.NYSE.X`` across)."""

    target_broker_id: str
    message_ttl: int = 1
    excluded: tuple[DestinationPattern, ...] = ()
    included: tuple[DestinationPattern, ...] = ()
    gate: Callable[[Message], bool] | None = None
    """A further test: a bridge's consumer advisories, only of destinations its user may
    write (``core.authorization.demand_gate``)."""

    def admits(self, message: Message) -> bool:
        path = message.broker_path
        if path:
            if self.target_broker_id in path:
                return False
            if self.message_ttl >= 0 and len(path) >= self.message_ttl:
                return False
        if (self.excluded or self.included) and not message.destination.is_temporary:
            destination = message.destination
            if any(p.matches(destination) for p in self.excluded):
                return False
            if self.included and not any(p.matches(destination) for p in self.included):
                return False
        return self.gate is None or self.gate(message)


def admits(
    message: Message,
    local_connection: str | None,
    network_filter: NetworkFilter | None,
    selector: Selector | None,
    lookup: Lookup | None,
) -> bool:
    """Whether a consumer (or a topic subscription) may take ``message``.

    ``local_connection`` is the connection whose own messages are refused (``activemq.noLocal``),
    or None. ``lookup`` resolves the selector's identifiers; it may be None only without one.
    The three tests have no side effects, so their order is only a matter of cost.
    """
    if network_filter is not None and not network_filter.admits(message):
        return False
    if local_connection is not None and message.origin_connection == local_connection:
        return False
    return selector is None or (lookup is not None and selector.matches(lookup))


class ConsumerContainer(Protocol):
    """Where a consumer takes messages from: a queue, or its topic subscription (``core.queue``)."""

    def dispatch(self) -> None: ...

    def remove_consumer(self, consumer: Consumer) -> None: ...


class AckMode(enum.Enum):
    AUTO = "auto"
    CLIENT = "client"
    CLIENT_INDIVIDUAL = "client-individual"


class Consumer:
    __slots__ = (
        "_by_message_id",
        "_index_message_ids",
        "_ledger",
        "_outstanding",
        "ack_mode",
        "broker_path",
        "browser",
        "connection_id",
        "containers",
        "credit_mode",
        "destination",
        "dispatched",
        "durable_name",
        "exclusive",
        "extra",
        "network",
        "network_consumer_ids",
        "network_filter",
        "no_local",
        "pattern",
        "prefetch",
        "priority",
        "selector",
        "subscription_id",
    )

    def __init__(
        self,
        connection_id: str,
        subscription_id: str,
        destination: Destination,
        *,
        ack_mode: AckMode = AckMode.AUTO,
        prefetch: int = QUEUE_PREFETCH,
        selector: Selector | None = None,
        priority: int = 0,
        exclusive: bool = False,
        no_local: bool = False,
        browser: bool = False,
        durable_name: str | None = None,
        network: bool = False,
        network_filter: NetworkFilter | None = None,
        broker_path: tuple[str, ...] = (),
        acks_by_message_id: bool = True,
    ) -> None:
        self.connection_id = connection_id
        self.subscription_id = subscription_id
        self.destination = destination
        self.pattern = DestinationPattern(destination)
        self.ack_mode = ack_mode
        self.prefetch = prefetch
        self.selector = selector
        self.priority = priority
        self.exclusive = exclusive
        self.no_local = no_local
        self.browser = browser
        self.durable_name = durable_name
        self.network = network
        """A network bridge's demand subscription (``networkSubscription`` in advisories)."""
        self.network_filter = network_filter
        self.broker_path = broker_path
        """For a demand subscription: the brokers between this one and the real consumer,
        nearest last, as advertised so the next bridge can apply consumerTTL."""
        self.network_consumer_ids: tuple[str, ...] = ()
        """For a demand subscription: the real consumers it stands for, so a broker that
        hears of one consumer by two routes can keep one (suppressDuplicateQueueSubscriptions)."""
        self.extra: dict[str, str] = {}  # other activemq.* SUBSCRIBE headers, for advisories
        self.containers: list[ConsumerContainer] = []
        self._ledger: OrderedDict[str, Entry] = OrderedDict()
        self._by_message_id: dict[str, str] = {}
        self._index_message_ids = acks_by_message_id and ack_mode is not AckMode.AUTO
        """STOMP 1.0 and 1.1 name the message in an ACK; 1.2 names the ack id, and nobody
        acknowledges an auto subscription, so the index is kept only where it is used."""
        self._outstanding = 0  # in flight, not acked in a tx (credit_mode: since the grant)
        self.credit_mode = False  # the window is link credit (AMQP): see ``grant``
        self.dispatched = 0  # ActiveMQ's DispatchedCount: every delivery, redeliveries too

    @property
    def key(self) -> tuple[str, str]:
        return (self.connection_id, self.subscription_id)

    @property
    def has_capacity(self) -> bool:
        return self._outstanding < self.prefetch

    @property
    def outstanding(self) -> int:
        return self._outstanding

    @property
    def delivered_count(self) -> int:
        return len(self._ledger)

    @property
    def filters(self) -> bool:
        """Whether ``matches`` can refuse a message (most consumers take everything)."""
        return self.selector is not None or self.no_local or self.network_filter is not None

    def matches(self, message: Message, lookup: Lookup) -> bool:
        """``admits``, noLocal keyed by this consumer's own connection (ActiveMQ's rule)."""
        return admits(
            message,
            self.connection_id if self.no_local else None,
            self.network_filter,
            self.selector,
            lookup,
        )

    # -- the ledger ---------------------------------------------------------------------------

    def record_delivery(self, ack_id: str, entry: Entry) -> None:
        entry.consumer = self
        self._ledger[ack_id] = entry
        if self._index_message_ids:
            self._by_message_id[entry.message.message_id] = ack_id
        self._outstanding += 1

    def ack_id_for_message(self, message_id: str) -> str | None:
        if self._index_message_ids:
            return self._by_message_id.get(message_id)
        return next(
            (key for key, entry in self._ledger.items() if entry.message.message_id == message_id),
            None,
        )

    def entry(self, ack_id: str) -> Entry | None:
        return self._ledger.get(ack_id)

    def take(self, ack_id: str) -> Entry:
        """Remove one delivery from the ledger (individual ack, nack)."""
        entry = self._ledger.pop(ack_id)
        self._forget(entry)
        return entry

    def take_through(self, ack_id: str) -> list[tuple[str, Entry]]:
        """Remove this delivery and every earlier one (cumulative ``client`` ack).

        Deliveries already acknowledged inside a still-open transaction are left alone.
        """
        taken: list[tuple[str, Entry]] = []
        for key in list(self._ledger):
            entry = self._ledger[key]
            if entry.acked_in_transaction is None or key == ack_id:
                taken.append((key, entry))
            if key == ack_id:
                break
        for key, entry in taken:
            del self._ledger[key]
            self._forget(entry)
        return taken

    def entries_through(self, ack_id: str) -> list[tuple[str, Entry]]:
        """Like ``take_through`` without removing: what a transacted cumulative ack covers."""
        found: list[tuple[str, Entry]] = []
        for key, entry in self._ledger.items():
            if entry.acked_in_transaction is None:
                found.append((key, entry))
            if key == ack_id:
                break
        return found

    def in_flight_entries(self) -> list[Entry]:
        return list(self._ledger.values())

    def take_all(self) -> list[Entry]:
        entries = list(self._ledger.values())
        for entry in entries:
            entry.consumer = None
        self._ledger.clear()
        self._by_message_id.clear()
        self._outstanding = 0
        return entries

    def grant(self, window: int) -> None:
        """Set the window. In ``credit_mode`` (AMQP's link credit, not a prefetch) a delivery
        uses the window up and an ack gives nothing back: the consumer may now take ``window``
        more deliveries, whatever it has not acknowledged yet."""
        self.prefetch = window
        if self.credit_mode:
            self._outstanding = 0

    def release_credit(self, entry: Entry) -> None:
        """A transacted ack frees the prefetch slot before the commit (ActiveMQ's DELIVERED ack)."""
        if not self.credit_mode:
            self._outstanding -= 1

    def restore_credit(self, entry: Entry) -> None:
        if not self.credit_mode:
            self._outstanding += 1

    def _forget(self, entry: Entry) -> None:
        entry.consumer = None
        if self._index_message_ids:
            self._by_message_id.pop(entry.message.message_id, None)
        if entry.acked_in_transaction is None and not self.credit_mode:
            self._outstanding -= 1
        entry.acked_in_transaction = None

    def __repr__(self) -> str:
        return f"Consumer({self.connection_id}/{self.subscription_id} on {self.destination})"
