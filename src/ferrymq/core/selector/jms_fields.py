"""What a selector's identifiers resolve to: the message's properties, then the JMS header fields.

A property the producer set wins over a JMS field of the same name, as in ActiveMQ's STOMP
conversion (the STOMP headers become string properties). ``JMSRedelivered`` and
``JMSXDeliveryCount`` depend on the copy being delivered, so the redelivery count is passed in.
"""

from __future__ import annotations

from collections.abc import Callable

from ferrymq.core.message import (
    BROKER_PATH,
    CORRELATION_ID,
    DELIVERY_COUNT,
    REPLY_TO,
    TYPE,
    Message,
)
from ferrymq.core.selector.selector import Lookup


def lookup_for(message: Message, redelivery_count: int = 0) -> Lookup:
    props = message.properties

    def lookup(name: str) -> object | None:
        value = props.get(name)
        if value is not None:
            return value
        special = _JMS_FIELDS.get(name)
        return special(message, redelivery_count) if special is not None else None

    return lookup


def _delivery_mode(message: Message, redelivery_count: int) -> object:
    return "PERSISTENT" if message.persistent else "NON_PERSISTENT"


def _broker_path(message: Message, redelivery_count: int) -> object:
    return ",".join(message.broker_path) if message.broker_path else None


_JMS_FIELDS: dict[str, Callable[[Message, int], object | None]] = {
    "JMSMessageID": lambda m, e: m.message_id,
    "JMSPriority": lambda m, e: m.priority,
    "JMSTimestamp": lambda m, e: m.timestamp,
    "JMSExpiration": lambda m, e: m.expires,
    "JMSDeliveryMode": _delivery_mode,
    "JMSCorrelationID": lambda m, e: m.properties.get(CORRELATION_ID),
    "JMSType": lambda m, e: m.properties.get(TYPE),
    "JMSReplyTo": lambda m, e: m.properties.get(REPLY_TO),
    "JMSDestination": lambda m, e: m.destination.qualified,
    "JMSRedelivered": lambda m, count: count > 0,
    DELIVERY_COUNT: lambda m, count: count + 1,
    BROKER_PATH: _broker_path,
}
