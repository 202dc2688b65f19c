"""Consumer advisories as a bridge reads them (``ActiveMQ.Advisory.Consumer.>``).

The broker publishes ``{"ConsumerInfo": {...}}`` when a consumer arrives and
``{"RemoveInfo": {...}}`` when it leaves (``ferrymq.core.advisory`` writes them, with ActiveMQ's
field names); a new subscriber first gets one ConsumerInfo per existing consumer, so a bridge
knows the whole demand right after it connects (reference §4.2).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ferrymq.core.destination import Destination, DestinationError, DestinationType

CONSUMER_ADVISORIES = "/topic/ActiveMQ.Advisory.Consumer.>"

_STOMP_PREFIXES = {
    DestinationType.QUEUE: "/queue/",
    DestinationType.TOPIC: "/topic/",
    DestinationType.TEMP_QUEUE: "/remote-temp-queue/",
    DestinationType.TEMP_TOPIC: "/remote-temp-topic/",
}


def stomp_name(destination: Destination) -> str:
    """The STOMP destination any connection may use for ``destination`` (a temporary one by its
    broker-wide name)."""
    return _STOMP_PREFIXES[destination.type] + destination.name


@dataclass(frozen=True, slots=True)
class RemoteConsumer:
    """One ConsumerInfo: a consumer on the broker whose advisories the bridge reads."""

    consumer_id: str
    destination: Destination
    selector: str | None = None
    priority: int = 0
    broker_path: tuple[str, ...] = ()
    """Brokers between the advertising broker and the real consumer (empty: a local one)."""
    network: bool = False
    browser: bool = False
    network_consumer_ids: tuple[str, ...] = ()
    durable_name: str | None = None
    client_id: str | None = None

    @property
    def original_ids(self) -> tuple[str, ...]:
        """The real consumers behind it: itself, or those a demand subscription stands for."""
        return self.network_consumer_ids if self.network_consumer_ids else (self.consumer_id,)


@dataclass(frozen=True, slots=True)
class RemovedConsumer:
    consumer_id: str


@dataclass(frozen=True, slots=True)
class RemovedSubscription:
    """A durable subscription was deleted (ActiveMQ's RemoveSubscriptionInfo)."""

    client_id: str
    subscription_name: str


class AdvisoryError(ValueError):
    """An advisory body a bridge cannot read; the message says what was wrong."""


def parse_consumer_advisory(
    body: bytes,
) -> RemoteConsumer | RemovedConsumer | RemovedSubscription | None:
    """Read one consumer advisory; None for kinds a bridge ignores."""
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise AdvisoryError(f"consumer advisory is not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise AdvisoryError("consumer advisory is not a JSON object")
    # A ConsumerInfo or RemoveInfo of the wrong shape is an error, not an advisory to skip in
    # silence: the bridge logs it, so a lost demand (or a route never closed) can be traced.
    if "ConsumerInfo" in document:
        info = document["ConsumerInfo"]
        if not isinstance(info, dict):
            raise AdvisoryError("ConsumerInfo is not a JSON object")
        return _consumer(info)
    if "RemoveInfo" in document:
        return _removed(document["RemoveInfo"])
    if "RemoveSubscriptionInfo" in document:
        info = document["RemoveSubscriptionInfo"]
        client_id = info.get("clientId") if isinstance(info, dict) else None
        name = info.get("subscriptionName") if isinstance(info, dict) else None
        if not isinstance(client_id, str) or not isinstance(name, str):
            raise AdvisoryError("RemoveSubscriptionInfo without clientId and subscriptionName")
        return RemovedSubscription(client_id, name)
    return None


def _removed(removed: object) -> RemovedConsumer | None:
    object_id = removed.get("objectId") if isinstance(removed, dict) else None
    if not isinstance(object_id, dict):
        raise AdvisoryError("RemoveInfo without an objectId object")
    if "ConsumerId" not in object_id:
        return None  # a connection or session went away: its consumers are removed one by one
    consumer_id = object_id["ConsumerId"]
    if not isinstance(consumer_id, str):
        raise AdvisoryError("RemoveInfo ConsumerId is not a string")
    return RemovedConsumer(consumer_id)


def _consumer(info: dict[str, object]) -> RemoteConsumer:
    consumer_id = info.get("consumerId")
    destination = info.get("destination")
    if not isinstance(consumer_id, str) or not isinstance(destination, str):
        raise AdvisoryError("ConsumerInfo without consumerId or destination")
    try:
        parsed = Destination.parse_qualified(destination)
    except DestinationError as exc:
        raise AdvisoryError(f"ConsumerInfo destination: {exc}") from None
    selector = info.get("selector")
    priority = info.get("priority", 0)
    return RemoteConsumer(
        consumer_id,
        parsed,
        selector if isinstance(selector, str) and selector else None,
        priority if isinstance(priority, int) else 0,
        _strings(info.get("brokerPath")),
        info.get("networkSubscription") is True,
        info.get("browser") is True,
        _strings(info.get("networkConsumerIds")),
        name if isinstance(name := info.get("subscriptionName"), str) else None,
        client if isinstance(client := info.get("clientId"), str) else None,
    )


def _strings(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(v for v in value if isinstance(v, str))
