"""The message as the broker core sees it.

Standard fields that drive broker behaviour (persistence, priority, expiry, groups, the broker
path) are attributes; every other header the producer sent is kept, as a string, in
``properties`` and handed back unchanged on delivery (ActiveMQ turns them into JMS string
properties and prints them back as STOMP headers).  Bodies stay ``bytes`` and are never decoded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NewType

from ferrymq.core.destination import Destination
from ferrymq.core.errors import BrokerError

MessageId = NewType("MessageId", str)

DEFAULT_PRIORITY = 4
MIN_PRIORITY = 0
MAX_PRIORITY = 9
MAX_LONG = 2**63 - 1
"""The largest number a time header (``expires``, ``timestamp``, the scheduling delays) may
hold: a Java long, as ActiveMQ parses it, and what the stores' 64-bit integer columns take. A
larger one would fail the store's commit, and with it the broker, for every message of the
group commit; it is refused at SEND instead."""


def require_long(name: str, number: int) -> int:
    """``number``, if a Java long holds it; else ``BrokerError`` naming the header ``name``."""
    if not -MAX_LONG - 1 <= number <= MAX_LONG:
        raise BrokerError(
            f"header {name} must fit in a signed 64-bit integer (a Java long), got {number}"
        )
    return number


# Property names with a meaning to the broker (ActiveMQ's JMS names, as STOMP headers).
GROUP_ID = "JMSXGroupID"
GROUP_SEQ = "JMSXGroupSeq"
CORRELATION_ID = "correlation-id"
REPLY_TO = "reply-to"
TYPE = "type"
DELIVERY_COUNT = "JMSXDeliveryCount"
"""Deliveries so far, this one included: a selector field and a header of each MESSAGE."""
BROKER_PATH = "JMSActiveMQBrokerPath"
"""The brokers a message crossed, comma-separated (see ``Message.broker_path``)."""

# Bytes charged for a message on top of its body, for memory accounting: a Message with two
# short properties measured 458 bytes with tracemalloc (CPython 3.11); more properties cost more.
MESSAGE_OVERHEAD_BYTES = 500


@dataclass(slots=True, eq=False)
class Message:
    message_id: MessageId
    destination: Destination
    body: bytes
    properties: dict[str, str] = field(default_factory=dict)
    persistent: bool = False
    priority: int = DEFAULT_PRIORITY
    expires: int = 0
    """Absolute expiry time in epoch milliseconds; 0 never expires."""
    timestamp: int = 0
    """When the broker accepted the message, epoch milliseconds."""
    redelivery_count: int = 0
    broker_path: tuple[str, ...] = ()
    """Ids of the brokers this message crossed, oldest first (``JMSActiveMQBrokerPath``)."""
    producer_message_id: str | None = None
    """The producer's own id for duplicate detection (header ``ferrymq.producer-message-id``)."""
    origin_connection: str | None = None
    """The connection that sent it, for ``activemq.noLocal``; not stored."""
    original_destination: Destination | None = None
    """Where a dead-lettered message was first sent."""
    origin_node: str | None = None
    """The node id of the broker where the message was first sent, when it came here through
    a mirror (None: sent here). Stored, never shown to consumers: onward mirrors skip the
    origin, and a peer's later ack names the message by its id (kept from the origin)."""
    encoded: bytes | None = field(default=None, repr=False)
    """The store encoding, cached: a topic message stored for several durable subscriptions is
    encoded once.  Cleared by ``copy``."""
    holders: int = field(default=0, repr=False)
    """How many in-memory entries share this object (a topic message copied into several
    subscriptions): its body is charged to memory once, while any of them holds it."""
    wire: tuple[str, bytes] | None = field(default=None, repr=False)
    """The delivery-independent MESSAGE headers as rendered for one STOMP version, cached so a
    topic message fanned out to many subscribers is rendered once.  Cleared by ``copy``."""
    amqp_tail: bytes | None = field(default=None, repr=False)
    """The AMQP sections after the header (the same for every delivery), cached like ``wire``.
    Cleared by ``copy``."""

    @property
    def group_id(self) -> str | None:
        return self.properties.get(GROUP_ID)

    @property
    def size(self) -> int:
        """Approximate memory cost in bytes, used by usage limits and paging."""
        return len(self.body) + MESSAGE_OVERHEAD_BYTES

    def is_expired(self, now_ms: int) -> bool:
        return 0 < self.expires <= now_ms

    def copy(self, **changes: object) -> Message:
        """A shallow copy with some fields changed (topic copies, DLQ copies, redeliveries)."""
        values = {name: getattr(self, name) for name in self.__slots__}
        values["properties"] = dict(self.properties)
        values["encoded"] = None
        values["wire"] = None
        values["amqp_tail"] = None
        values["holders"] = 0
        values.update(changes)
        return Message(**values)
