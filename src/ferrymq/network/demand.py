"""Which remote consumers become demand subscriptions, and how (seed 001 ch. 2-5 and 7).

Sans-IO: a ``DemandTable`` takes consumer advisories and answers with the demand subscriptions
to open or close; the bridge does the I/O. The rules are ActiveMQ's (reference §4.3):

* a consumer is ignored when it is a browser, when its broker path already has ``consumerTTL``
  hops, when it came through this broker, or when the connector's filters refuse its
  destination (excluded first; then, if any are given, only the dynamically included);
* with ``conduitSubscriptions`` every consumer of one destination shares one subscription with
  no selector (Figure 2.5, and chapter 5's pitfall), except a queue consumer that is itself a
  network subscription (unless ``conduitNetworkQueueSubscriptions``); without it each consumer
  gets its own, carrying its selector (Figures 9.1/9.2);
* ``decreaseNetworkConsumerPriority``: the subscription gets ``consumerPriorityBase`` (-5),
  one less for every further hop (seed 001 §7.2), so local consumers (0) and short routes win.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ferrymq.config.network import DestinationRef, NetworkConnectorConfig
from ferrymq.core.destination import Destination, DestinationPattern
from ferrymq.network.advisories import RemoteConsumer


def _pattern(ref: DestinationRef) -> DestinationPattern:
    # The loader refuses an empty physicalName; a model built in code gets ">" for it.
    name = ref.physical_name.strip() or ">"
    return DestinationPattern(Destination.topic(name) if ref.is_topic else Destination.queue(name))


def _matches(refs: Iterable[tuple[bool, DestinationPattern]], destination: Destination) -> bool:
    return any(
        is_topic == destination.is_topic and pattern.matches(_plain(destination))
        for is_topic, pattern in refs
    )


def _plain(destination: Destination) -> Destination:
    # Filters name queues and topics; temporary destinations are matched by kind.
    return (
        Destination.topic(destination.name)
        if destination.is_topic
        else Destination.queue(destination.name)
    )


class DestinationFilter:
    """A connector's ``dynamicallyIncludedDestinations`` / ``excludedDestinations``."""

    def __init__(self, config: NetworkConnectorConfig) -> None:
        self._included = [
            (r.is_topic, _pattern(r)) for r in config.dynamically_included_destinations
        ]
        self._excluded = [(r.is_topic, _pattern(r)) for r in config.excluded_destinations]
        self._bridge_temps = config.bridge_temp_destinations

    def patterns(self) -> tuple[str, str]:
        """(excluded, included) as the broker reads them on a demand subscription."""
        return (
            ",".join(p.destination.qualified for _, p in self._excluded),
            ",".join(p.destination.qualified for _, p in self._included),
        )

    def permits(self, destination: Destination) -> bool:
        if destination.is_advisory:
            return False
        if destination.is_temporary:
            return self._bridge_temps
        if _matches(self._excluded, destination):
            return False
        return not self._included or _matches(self._included, destination)


@dataclass(eq=False)
class Demand:
    """One demand subscription on the forwarding side."""

    key: str
    destination: Destination
    selector: str | None
    priority: int
    broker_path: tuple[str, ...]
    """The path advertised for it: the consumer's path plus the broker it is on."""
    static: bool = False
    durable_name: str | None = None
    """Set for a durable demand (a remote durable subscriber, or a durableDestination)."""
    durables: set[tuple[str, str]] = field(default_factory=set)
    """The remote durable subscriptions (client id, name) it serves: while one exists the
    demand stays, so what is published while the subscriber is offline still crosses."""
    consumers: set[str] = field(default_factory=set)
    original_ids: tuple[str, ...] = ()
    forwarded: int = 0
    subscription_id: str = ""


@dataclass(frozen=True, slots=True)
class DemandChange:
    opened: Demand | None = None
    closed: Demand | None = None
    destroy: bool = False
    """With ``closed``: delete the (durable) subscription, not just stop it."""


class DemandTable:
    """The demand of one bridge direction: remote consumers in, subscriptions out."""

    def __init__(
        self,
        config: NetworkConnectorConfig,
        *,
        local_broker_id: str,
        remote_broker_id: str,
        durable_prefix: str | None = None,
    ) -> None:
        self.config = config
        self.local_broker_id = local_broker_id
        """The broker the demand subscriptions live on (messages are taken from it)."""
        self.remote_broker_id = remote_broker_id
        """The broker whose consumers create the demand (messages go to it)."""
        self.filter = DestinationFilter(config)
        self.durable_prefix = durable_prefix
        """``NC-DS_<localBrokerName>_`` when the demand side can hold durable subscriptions
        (the bridge's own broker); None keeps every demand non-durable."""
        self.demands: dict[str, Demand] = {}
        self._by_consumer: dict[str, str] = {}
        self.ignored = 0

    def static_demands(self) -> list[Demand]:
        """``staticallyIncludedDestinations``: subscriptions that exist with or without
        consumers (seed 001 §3 "Static propagation"); exclusions do not apply to them."""
        found = []
        for ref in self.config.statically_included_destinations:
            name = ref.physical_name.strip() or ">"
            destination = Destination.topic(name) if ref.is_topic else Destination.queue(name)
            demand = Demand(
                f"static:{destination.qualified}",
                destination,
                None,
                self._priority(1),
                (self.remote_broker_id,),
                static=True,
            )
            self.demands[demand.key] = demand
            found.append(demand)
        return found

    def accepts(self, consumer: RemoteConsumer) -> bool:
        ttl = self.config.consumer_ttl
        if consumer.browser:
            return False
        if ttl > -1 and len(consumer.broker_path) >= ttl:
            return False
        if self.local_broker_id in consumer.broker_path:
            return False
        return self.filter.permits(consumer.destination)

    def add(self, consumer: RemoteConsumer) -> DemandChange:
        if consumer.consumer_id in self._by_consumer:
            return DemandChange()
        if not self.accepts(consumer):
            self.ignored += 1
            return DemandChange()
        config = self.config
        destination = consumer.destination
        if consumer.durable_name is not None and self.durable_prefix is not None:
            return self._add_durable(consumer)
        conduit = config.conduit_subscriptions and (
            destination.is_topic
            or not consumer.network
            or config.conduit_network_queue_subscriptions
        )
        path = (*consumer.broker_path, self.remote_broker_id)
        key = f"conduit:{destination.qualified}" if conduit else f"consumer:{consumer.consumer_id}"
        self._by_consumer[consumer.consumer_id] = key
        existing = self.demands.get(key)
        if existing is not None:
            existing.consumers.add(consumer.consumer_id)
            existing.original_ids = (*existing.original_ids, *consumer.original_ids)
            return DemandChange()
        priority = (
            self._priority(len(path))
            if config.decrease_network_consumer_priority
            else consumer.priority
        )
        demand = Demand(
            key,
            destination,
            None if conduit else consumer.selector,
            priority,
            path,
            consumers={consumer.consumer_id},
            original_ids=consumer.original_ids,
        )
        self.demands[key] = demand
        return DemandChange(opened=demand)

    def durable_demands(self) -> list[Demand]:
        """``durableDestinations`` with ``dynamicOnly="false"``: the durable demand of an earlier
        bridge is taken up again at start, so what it kept while the bridge was down crosses
        before any subscriber reconnects (reference §4.2, DurableConduitBridge)."""
        if self.config.dynamic_only or self.durable_prefix is None:
            return []
        found = []
        for ref in self.config.durable_destinations:
            if not ref.is_topic:
                continue
            found.append(self._durable_demand(Destination.topic(ref.physical_name.strip())))
        return found

    def _durable_demand(self, destination: Destination) -> Demand:
        key = f"durable:{destination.qualified}"
        existing = self.demands.get(key)
        if existing is not None:
            return existing
        demand = Demand(
            key,
            destination,
            None,
            self._priority(1),
            (self.remote_broker_id,),
            durable_name=f"{self.durable_prefix}{destination.name}",
        )
        self.demands[key] = demand
        return demand

    def _add_durable(self, consumer: RemoteConsumer) -> DemandChange:
        new = f"durable:{consumer.destination.qualified}" not in self.demands
        demand = self._durable_demand(consumer.destination)
        demand.consumers.add(consumer.consumer_id)
        demand.original_ids = (*demand.original_ids, *consumer.original_ids)
        if consumer.durable_name is not None:
            demand.durables.add((consumer.client_id or "", consumer.durable_name))
        self._by_consumer[consumer.consumer_id] = demand.key
        return DemandChange(opened=demand if new else None)

    def remove_subscription(self, client_id: str, name: str) -> DemandChange:
        """A remote durable subscription was deleted: the last one takes the durable demand,
        and its subscription here, with it."""
        for demand in list(self.demands.values()):
            if (client_id, name) in demand.durables:
                demand.durables.discard((client_id, name))
                if not demand.durables and not demand.consumers:
                    del self.demands[demand.key]
                    return DemandChange(closed=demand, destroy=True)
        return DemandChange()

    def remove(self, consumer_id: str) -> DemandChange:
        key = self._by_consumer.pop(consumer_id, None)
        if key is None:
            return DemandChange()
        demand = self.demands.get(key)
        if demand is None:
            return DemandChange()
        demand.consumers.discard(consumer_id)
        if demand.consumers or demand.durables:
            return DemandChange()
        del self.demands[key]
        # A durable demand closes only once its remote subscriptions were deleted too.
        return DemandChange(closed=demand, destroy=demand.durable_name is not None)

    def _priority(self, hops: int) -> int:
        if not self.config.decrease_network_consumer_priority:
            return 0
        return self.config.consumer_priority_base - (hops - 1)
