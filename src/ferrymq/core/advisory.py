"""ActiveMQ's advisory topics: names, and the JSON bodies a STOMP subscriber receives.

ActiveMQ renders advisories over STOMP as JSON whose single top-level key names the command
(``{"ConsumerInfo": {...}}``, ``{"RemoveInfo": {...}}``, ``{"ConnectionInfo": ...}``,
``{"DestinationInfo": ...}``); FerryMQ keeps that shape and those field names where they exist.
Advisories are non-persistent topic messages with ``type:Advisory`` and the origin broker's
name, id and URL as properties, never generated for advisory topics themselves.  Network bridges
build demand on the consumer advisories, so ``brokerPath`` and ``networkSubscription`` are kept.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from ferrymq.core.consumer import Consumer
from ferrymq.core.destination import Destination, DestinationType

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
