"""Topics and their subscriptions.

A topic keeps no messages itself: publishing copies the message into every matching
subscription.  A subscription is a container of its own with one consumer: a durable one keeps
persistent messages in the store and keeps collecting while its consumer is offline; a plain one
lives and dies with its consumer (ActiveMQ's ``DurableTopicSubscription`` and
``TopicSubscription``).  Wildcard subscriptions are attached to every topic they match, including
topics created later.
"""

from __future__ import annotations

from ferrymq.core.consumer import Consumer, NetworkFilter, admits
from ferrymq.core.context import CoreContext, Dispatch
from ferrymq.core.destination import Destination, DestinationPattern
from ferrymq.core.entry import Entry
from ferrymq.core.message import Message
from ferrymq.core.queue import ContainerStatistics, Queue
from ferrymq.core.selector import Lookup, Selector
from ferrymq.core.selector.jms_fields import lookup_for
from ferrymq.store.base import DurableSubscriptionRecord


class TopicSubscription(Queue):
    def __init__(
        self,
        context: CoreContext,
        dispatch: Dispatch,
        key: str,
        destination: Destination,
        *,
        selector: Selector | None,
        no_local: bool,
        record: DurableSubscriptionRecord | None = None,
        network_filter: NetworkFilter | None = None,
    ) -> None:
        super().__init__(context, dispatch, key, destination, storable=record is not None)
        self.pattern = DestinationPattern(destination)
        self.selector = selector
        self.no_local = no_local
        self.network_filter = network_filter
        self.record = record
        self.active_connection: str | None = None
        self.topics: list[Topic] = []

    @property
    def durable(self) -> bool:
        return self.record is not None

    @property
    def consumer(self) -> Consumer | None:
        return self.consumers[0] if self.consumers else None

    def accepts(self, message: Message, lookup: Lookup | None) -> bool:
        """``admits``, noLocal keyed by the connection of the consumer attached now: an offline
        durable subscription (no consumer) collects every message, its own client's included."""
        return admits(
            message,
            self.active_connection if self.no_local else None,
            self.network_filter,
            self.selector,
            lookup,
        )

    def _select(
        self, entry: Entry, candidates: list[Consumer], use_groups: bool
    ) -> Consumer | None:
        # The selector was applied when the message was published to this subscription.
        return candidates[0]


class Topic:
    def __init__(self, destination: Destination) -> None:
        self.destination = destination
        self.subscriptions: list[TopicSubscription] = []
        self.stats = ContainerStatistics()

    def attach(self, subscription: TopicSubscription) -> None:
        if subscription not in self.subscriptions:
            self.subscriptions.append(subscription)
            subscription.topics.append(self)

    def detach(self, subscription: TopicSubscription) -> None:
        if subscription in self.subscriptions:
            self.subscriptions.remove(subscription)
        if self in subscription.topics:
            subscription.topics.remove(self)

    @property
    def consumer_count(self) -> int:
        return sum(1 for s in self.subscriptions if s.consumers)

    @property
    def depth(self) -> int:
        return sum(s.depth for s in self.subscriptions)

    def publish(self, message: Message, seq: int) -> int:
        """Copy the message into each matching subscription; returns how many took it."""
        self.stats.enqueued += 1
        taken = 0
        resolver: Lookup | None = None
        for subscription in self.subscriptions:
            if subscription.selector is not None and resolver is None:
                resolver = lookup_for(message)
            if not subscription.accepts(message, resolver):
                continue
            subscription.offer(message, seq)
            taken += 1
        self.stats.dispatched += taken
        return taken

    def __repr__(self) -> str:
        return f"Topic({self.destination.name})"
