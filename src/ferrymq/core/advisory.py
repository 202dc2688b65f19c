"""ActiveMQ's advisory topics: names, and the JSON bodies a STOMP subscriber receives.

ActiveMQ renders advisories over STOMP as JSON whose single top-level key names the command
(``{"ConsumerInfo": {...}}``, ``{"RemoveInfo": {...}}``, ``{"ConnectionInfo": ...}``,
``{"DestinationInfo": ...}``); FerryMQ keeps that shape and those field names where they exist.
Advisories are non-persistent topic messages with ``type:Advisory`` and the origin broker's
name, id and URL as properties, never generated for advisory topics themselves.  Network bridges
build demand on the consumer advisories, so ``brokerPath`` and ``networkSubscription`` are kept.

``AdvisoryPublisher`` (ActiveMQ's ``AdvisoryBroker``) publishes them, only while someone listens,
and replays what already exists to a new advisory subscriber.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping

from ferrymq.core.connection import ConnectionState
from ferrymq.core.consumer import Consumer
from ferrymq.core.context import CoreContext
from ferrymq.core.destination import Destination, DestinationType
from ferrymq.core.message import Message
from ferrymq.core.queue import Queue
from ferrymq.core.subscriptions import SubscriptionRegistry
from ferrymq.core.topic import Topic, TopicSubscription

PREFIX = "ActiveMQ.Advisory."
CONNECTION_TOPIC = Destination.topic(PREFIX + "Connection")
MASTER_BROKER_TOPIC = Destination.topic(PREFIX + "MasterBroker")

_DESTINATION_TOPICS = {
    DestinationType.QUEUE: Destination.topic(PREFIX + "Queue"),
    DestinationType.TOPIC: Destination.topic(PREFIX + "Topic"),
    DestinationType.TEMP_QUEUE: Destination.topic(PREFIX + "TempQueue"),
    DestinationType.TEMP_TOPIC: Destination.topic(PREFIX + "TempTopic"),
}

# DestinationInfo.operationType values.
ADD_OPERATION = 0
REMOVE_OPERATION = 1


def _encode_name(name: str) -> str:
    # Commas would make the advisory topic a composite destination.
    return name.replace(",", "&sbquo;")


def _kind(destination: Destination) -> str:
    return "Topic" if destination.is_topic else "Queue"


def consumer_topic(destination: Destination) -> Destination:
    return Destination.topic(
        f"{PREFIX}Consumer.{_kind(destination)}.{_encode_name(destination.name)}"
    )


def producer_topic(destination: Destination) -> Destination:
    return Destination.topic(
        f"{PREFIX}Producer.{_kind(destination)}.{_encode_name(destination.name)}"
    )


def destination_topic(destination: Destination) -> Destination:
    return _DESTINATION_TOPICS[destination.type]


def expired_topic(destination: Destination) -> Destination:
    return Destination.topic(
        f"{PREFIX}Expired.{_kind(destination)}.{_encode_name(destination.name)}"
    )


def dlq_topic(destination: Destination) -> Destination:
    return Destination.topic(
        f"{PREFIX}MessageDLQd.{_kind(destination)}.{_encode_name(destination.name)}"
    )


def consumer_id(consumer: Consumer) -> str:
    return f"{consumer.connection_id}:{consumer.subscription_id}"


def consumer_info(consumer: Consumer, client_id: str) -> bytes:
    info: dict[str, object] = {
        "consumerId": consumer_id(consumer),
        "connectionId": consumer.connection_id,
        "clientId": client_id,
        "destination": consumer.destination.qualified,
        "prefetchSize": consumer.prefetch,
        "priority": consumer.priority,
        "exclusive": consumer.exclusive,
        "noLocal": consumer.no_local,
        "browser": consumer.browser,
        "networkSubscription": consumer.network,
        "brokerPath": list(consumer.broker_path),
    }
    if consumer.network_consumer_ids:
        info["networkConsumerIds"] = list(consumer.network_consumer_ids)
    if consumer.selector is not None:
        info["selector"] = consumer.selector.text
    if consumer.durable_name is not None:
        info["subscriptionName"] = consumer.durable_name
    if consumer.extra:
        info["properties"] = dict(consumer.extra)
    return _json({"ConsumerInfo": info})


def consumer_removed(consumer: Consumer) -> bytes:
    return _json(
        {
            "RemoveInfo": {
                "objectId": {"ConsumerId": consumer_id(consumer)},
                "destination": consumer.destination.qualified,
            }
        }
    )


def subscription_removed(client_id: str, name: str, destination: Destination) -> bytes:
    return _json(
        {
            "RemoveSubscriptionInfo": {
                "clientId": client_id,
                "subscriptionName": name,
                "destination": destination.qualified,
            }
        }
    )


def connection_info(
    connection_id: str, client_id: str, user: str | None, remote_address: str | None
) -> bytes:
    return _json(
        {
            "ConnectionInfo": {
                "connectionId": connection_id,
                "clientId": client_id,
                "userName": user or "",
                "clientIp": remote_address or "",
            }
        }
    )


def connection_removed(connection_id: str) -> bytes:
    return _json({"RemoveInfo": {"objectId": {"ConnectionId": connection_id}}})


def destination_info(destination: Destination, operation: int) -> bytes:
    return _json(
        {
            "DestinationInfo": {
                "destination": destination.qualified,
                "operationType": operation,
            }
        }
    )


def properties(
    broker_name: str, broker_id: str, broker_url: str, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    props = {
        "type": "Advisory",
        "originBrokerName": broker_name,
        "originBrokerId": broker_id,
        "originBrokerURL": broker_url,
    }
    if extra:
        props.update(extra)
    return props


def _json(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


Body = Callable[[], bytes]
"""An advisory's body, built only when someone listens."""


class AdvisoryPublisher:
    """Publishes the advisories of one broker: it reads the broker's registries (live) and hands
    each advisory to ``route``; silent with ``enabled`` False (``advisorySupport="false"``)."""

    def __init__(
        self,
        context: CoreContext,
        *,
        broker_name: str,
        enabled: bool,
        subscriptions: SubscriptionRegistry,
        connections: Mapping[str, ConnectionState],
        queues: Mapping[Destination, Queue],
        topics: Mapping[Destination, Topic],
        route: Callable[[Message], None],
    ) -> None:
        self._context = context
        self.broker_name = broker_name
        self.broker_url = ""
        """``originBrokerURL``: the first listener's address, once the broker listens."""
        self.enabled = enabled
        self._subscriptions = subscriptions
        self._connections = connections
        self._queues = queues
        self._topics = topics
        self._route = route
        self._master: Message | None = None

    def _message(self, topic: Destination, body: bytes, extra: dict[str, str] | None) -> Message:
        context = self._context
        return Message(
            context.new_message_id(),
            topic,
            body,
            properties(self.broker_name, context.broker_id, self.broker_url, extra),
            timestamp=context.now_ms,
        )

    def advise(self, topic: Destination, body: Body, extra: dict[str, str] | None = None) -> None:
        if not self.enabled or not self._subscriptions.has_listeners(topic):
            return
        self._route(self._message(topic, body(), extra))

    def advise_destination(self, destination: Destination, operation: int) -> None:
        if destination.is_advisory:
            return
        self.advise(
            destination_topic(destination), lambda: destination_info(destination, operation)
        )

    def advise_consumer(self, state: ConnectionState, consumer: Consumer, *, added: bool) -> None:
        destination = consumer.destination
        if destination.is_advisory:
            return
        count = self._consumer_count(destination)
        body = (
            (lambda: consumer_info(consumer, state.client_id))
            if added
            else (lambda: consumer_removed(consumer))
        )
        self.advise(consumer_topic(destination), body, {"consumerCount": str(count)})

    def _consumer_count(self, destination: Destination) -> int:
        if destination.is_topic:
            topic = self._topics.get(destination)
            return topic.consumer_count if topic is not None else 0
        queue = self._queues.get(destination)
        return len(queue.consumers) if queue is not None else 0

    def announce_master(self) -> None:
        """``ActiveMQ.Advisory.MasterBroker``: sent when this broker becomes master, and kept
        (ActiveMQ's LastImage policy) for subscribers that come later."""
        if not self.enabled:
            return
        self._master = self._message(MASTER_BROKER_TOPIC, b"", None)
        if self._subscriptions.has_listeners(MASTER_BROKER_TOPIC):
            self._route(self._master)

    def replay(self, subscription: TopicSubscription) -> None:
        """A new advisory subscriber first learns what already exists (ActiveMQ replays)."""
        if not self.enabled:
            return
        pattern = subscription.pattern
        replay: list[Message] = []
        if self._master is not None and pattern.matches(MASTER_BROKER_TOPIC):
            replay.append(self._master)
        gate = subscription.network_filter  # a bridge hears only of demand it may serve
        for topic, body, extra in self._what_exists(subscription.consumer):
            if pattern.matches(topic):
                message = self._message(topic, body(), extra)
                if gate is None or gate.admits(message):
                    replay.append(message)
        for message in replay:
            subscription.enqueue(message, self._context.next_seq())
        subscription.dispatch()

    def _what_exists(
        self, listener: Consumer | None
    ) -> Iterator[tuple[Destination, Body, dict[str, str] | None]]:
        """The advisories that describe the broker now: connections, consumers (but the
        listener itself), destinations; each body is built only if it is replayed."""
        for state in self._connections.values():
            yield (
                CONNECTION_TOPIC,
                lambda s=state: connection_info(  # type: ignore[misc]
                    s.connection_id, s.client_id, s.user, s.remote_address
                ),
                None,
            )
            for consumer in state.consumers.values():
                if consumer.destination.is_advisory or consumer is listener:
                    continue
                yield (
                    consumer_topic(consumer.destination),
                    lambda c=consumer, s=state: consumer_info(c, s.client_id),  # type: ignore[misc]
                    {"consumerCount": str(self._consumer_count(consumer.destination))},
                )
        for destination in [*self._queues, *self._topics]:
            if not destination.is_advisory:
                yield (
                    destination_topic(destination),
                    lambda d=destination: destination_info(d, ADD_OPERATION),  # type: ignore[misc]
                    None,
                )
