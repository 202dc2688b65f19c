"""Topic subscriptions: plain ones per consumer, durable ones per (client-id, subscription name).

A durable subscription outlives its consumer: it keeps collecting while offline, survives
restarts through its store record, and is destroyed only by UNSUBSCRIBE with
``activemq.subscriptionName``. A wildcard subscription joins only the topics its connection may
read (``core.authorization.may_join``), those created later included.  Subscribing again under
the same name with another topic, selector or noLocal recreates it empty, as JMS requires.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ferrymq.core.authorization import may_join
from ferrymq.core.connection import ConnectionState
from ferrymq.core.consumer import Consumer
from ferrymq.core.context import CoreContext, Dispatch
from ferrymq.core.destination import Destination
from ferrymq.core.errors import BrokerError
from ferrymq.core.selector import parse_selector
from ferrymq.core.topic import Topic, TopicSubscription
from ferrymq.store.base import (
    AddDurableSubscription,
    DurableSubscriptionRecord,
    RemoveDurableSubscription,
)

_ADVISORY_PATH = ("ActiveMQ", "Advisory")


def could_match_advisories(pattern: Destination) -> bool:
    """Whether a topic pattern can match some ``ActiveMQ.Advisory.*`` topic."""
    for i, part in enumerate(pattern.name.split(".")):
        if part in ("*", ">"):
            return True
        if i >= len(_ADVISORY_PATH):
            return True
        if part != _ADVISORY_PATH[i]:
            return False
    return False


class SubscriptionRegistry:
    def __init__(
        self,
        context: CoreContext,
        dispatch: Dispatch,
        *,
        topics: Mapping[Destination, Topic],
        topic: Callable[[Destination], Topic],
    ) -> None:
        """``topics`` are the broker's topics (read live); ``topic`` finds or creates one."""
        self._context = context
        self._dispatch = dispatch
        self._topics = topics
        self._topic = topic
        self._all: list[TopicSubscription] = []
        self._by_key: dict[str, TopicSubscription] = {}
        self._by_consumer: dict[tuple[str, str], TopicSubscription] = {}
        self._durables: dict[tuple[str, str], TopicSubscription] = {}
        self._advisory_listeners: list[TopicSubscription] = []
        self._owners: dict[str, ConnectionState] = {}
        """subscription key -> the connection of its consumer (absent: a durable one offline)."""

    def all(self) -> list[TopicSubscription]:
        return list(self._all)

    def by_key(self, key: str) -> TopicSubscription | None:
        return self._by_key.get(key)

    def durable(self, client_id: str, name: str) -> TopicSubscription | None:
        return self._durables.get((client_id, name))

    def durables(self) -> list[TopicSubscription]:
        return list(self._durables.values())

    def has_listeners(self, topic: Destination) -> bool:
        return any(s.pattern.matches(topic) for s in self._advisory_listeners)

    # -- lifecycle ----------------------------------------------------------------------------

    def _register(
        self,
        subscription: TopicSubscription,
        state: ConnectionState | None = None,
        network: bool = False,
    ) -> None:
        self._all.append(subscription)
        self._by_key[subscription.key] = subscription
        destination = subscription.destination
        if could_match_advisories(destination):
            self._advisory_listeners.append(subscription)
        if not destination.is_wildcard:
            self._topic(destination)  # creating it attaches matching subscriptions
        for topic in self._topics.values():
            if self._joins(subscription, topic.destination, state, network):
                topic.attach(subscription)

    def _joins(
        self,
        subscription: TopicSubscription,
        topic: Destination,
        state: ConnectionState | None,
        network: bool,
    ) -> bool:
        if not subscription.pattern.matches(topic):
            return False
        return not subscription.destination.is_wildcard or may_join(state, network, topic)

    def _remove(self, subscription: TopicSubscription) -> None:
        for topic in list(subscription.topics):
            topic.detach(subscription)
        self._all.remove(subscription)
        del self._by_key[subscription.key]
        self._owners.pop(subscription.key, None)
        if subscription in self._advisory_listeners:
            self._advisory_listeners.remove(subscription)
        record = subscription.record
        if record is not None:
            del self._durables[(record.client_id, record.subscription_name)]
            self._context.effects.store_ops.append(
                RemoveDurableSubscription(record.client_id, record.subscription_name)
            )
            if self._context.mirror is not None:
                self._context.mirror.subscription_removed(record)
        subscription.purge()

    def attach_matching(self, topic: Topic) -> None:
        for subscription in self._all:
            state = self._owners.get(subscription.key)
            network = any(c.network for c in subscription.consumers)
            if self._joins(subscription, topic.destination, state, network):
                topic.attach(subscription)

    # -- consumers ----------------------------------------------------------------------------

    def subscribe(self, state: ConnectionState, consumer: Consumer) -> None:
        if consumer.durable_name is not None:
            subscription = self._durable_for(state, consumer)
        else:
            subscription = TopicSubscription(
                self._context,
                self._dispatch,
                f"sub:{state.connection_id}:{consumer.subscription_id}",
                consumer.destination,
                selector=consumer.selector,
                no_local=consumer.no_local,
                network_filter=consumer.network_filter,
            )
            self._register(subscription, state, consumer.network)
        subscription.active_connection = state.connection_id
        self._owners[subscription.key] = state
        subscription.add_consumer(consumer)
        self._by_consumer[consumer.key] = subscription

    def advisory_listener(self, consumer: Consumer) -> TopicSubscription | None:
        """The consumer's subscription, if it may hear advisories (they are replayed to it)."""
        subscription = self._by_consumer.get(consumer.key)
        if subscription is not None and subscription in self._advisory_listeners:
            return subscription
        return None

    def _durable_for(self, state: ConnectionState, consumer: Consumer) -> TopicSubscription:
        name = consumer.durable_name
        assert name is not None
        if not state.explicit_client_id:
            raise BrokerError(
                "Durable subscriptions need a client id: send the client-id header with CONNECT"
            )
        client_id = state.client_id
        subscription = self._durables.get((client_id, name))
        selector_text = consumer.selector.text if consumer.selector is not None else None
        if subscription is not None:
            if subscription.consumers:
                raise BrokerError(
                    f"Durable consumer is in use for client: {client_id} "
                    f"and subscriptionName: {name}"
                )
            record = subscription.record
            assert record is not None
            if (
                record.destination != consumer.destination.qualified
                or record.selector != selector_text
                or record.no_local != consumer.no_local
            ):
                self._remove(subscription)
                subscription = None
        if subscription is None:
            record = DurableSubscriptionRecord(
                client_id,
                name,
                consumer.destination.qualified,
                selector_text,
                consumer.no_local,
                f"durable:{client_id}:{name}",
            )
            subscription = self._create_durable(record, state, consumer.network)
            self._context.effects.store_ops.append(AddDurableSubscription(record))
            if self._context.mirror is not None:
                self._context.mirror.subscription_created(record)
        # A bridge's durable demand keeps its filter while offline (until a restart).
        subscription.network_filter = consumer.network_filter
        return subscription

    def _create_durable(
        self,
        record: DurableSubscriptionRecord,
        state: ConnectionState | None = None,
        network: bool = False,
    ) -> TopicSubscription:
        destination = Destination.parse_qualified(record.destination)
        subscription = TopicSubscription(
            self._context,
            self._dispatch,
            record.container,
            destination,
            selector=parse_selector(record.selector) if record.selector else None,
            no_local=record.no_local,
            record=record,
        )
        self._durables[(record.client_id, record.subscription_name)] = subscription
        self._register(subscription, state, network)
        return subscription

    def recover_durable(self, record: DurableSubscriptionRecord) -> None:
        self._create_durable(record)

    def unsubscribe(self, state: ConnectionState, consumer: Consumer, *, destroy: bool) -> None:
        subscription = self._by_consumer.pop(consumer.key, None)
        if subscription is None:
            return
        subscription.remove_consumer(consumer)
        subscription.active_connection = None
        self._owners.pop(subscription.key, None)
        if subscription.durable and not destroy:
            return
        self._remove(subscription)

    def durable_destination(self, client_id: str, name: str) -> Destination | None:
        subscription = self._durables.get((client_id, name))
        return subscription.destination if subscription is not None else None

    def destroy_durable(self, client_id: str, name: str) -> bool:
        subscription = self._durables.get((client_id, name))
        if subscription is None:
            return False
        if subscription.consumers:
            raise BrokerError(
                f"Durable consumer is in use for client: {client_id} and subscriptionName: {name}"
            )
        self._remove(subscription)
        return True
