"""Per-destination behaviour the core needs: dead-letter routing, redelivery limits, flow control.

These are the core's own small records; the service builds them from the configuration's
``<destinationPolicy>`` and ``<redeliveryPlugin>`` entries so the core never imports ``config``.
They have no defaults: ActiveMQ's defaults live once, in ``ferrymq.config.policy``, and the service
(``ferrymq.service.policies``) always fills every field from there.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from ferrymq.core.destination import Destination, DestinationType


class DeadLetterKind(enum.Enum):
    SHARED = "shared"
    INDIVIDUAL = "individual"
    DISCARDING = "discarding"


@dataclass(frozen=True, slots=True)
class DeadLetterPolicy:
    """Where a message that dies goes: the shared DLQ (``queue_name``), one DLQ per destination
    (prefix + name + suffix), or nowhere (discarding)."""

    kind: DeadLetterKind
    queue_name: str
    """The shared DLQ's name (``SHARED`` only)."""
    queue_prefix: str
    topic_prefix: str
    queue_suffix: str
    topic_suffix: str
    use_queue_for_queue_messages: bool
    use_queue_for_topic_messages: bool
    process_expired: bool
    """An expired message is dead-lettered (True) or just dropped."""
    process_non_persistent: bool
    """A non-persistent message that dies is dead-lettered too (ActiveMQ drops it by default)."""

    def dead_letter_destination(self, origin: Destination) -> Destination | None:
        if self.kind is DeadLetterKind.DISCARDING:
            return None
        if self.kind is DeadLetterKind.SHARED:
            return Destination.queue(self.queue_name)
        if origin.is_topic:
            name = f"{self.topic_prefix}{origin.name}{self.topic_suffix}"
            as_queue = self.use_queue_for_topic_messages
        else:
            name = f"{self.queue_prefix}{origin.name}{self.queue_suffix}"
            as_queue = self.use_queue_for_queue_messages
        return Destination(DestinationType.QUEUE if as_queue else DestinationType.TOPIC, name)

    def is_dead_letter_destination(self, destination: Destination) -> bool:
        if self.kind is DeadLetterKind.SHARED:
            return destination.name == self.queue_name
        if self.kind is DeadLetterKind.INDIVIDUAL:
            return destination.name.startswith((self.queue_prefix, self.topic_prefix))
        return False


@dataclass(frozen=True, slots=True)
class RedeliveryPolicy:
    maximum_redeliveries: int
    """Redeliveries before the message is dead-lettered; -1 retries for ever."""
    nack_redelivers: bool
    """ActiveMQ sends a NACKed message straight to the DLQ unless its RedeliveryPlugin is
    installed, in which case NACK means "try again" until ``maximum_redeliveries``."""

    def exceeded(self, redelivery_count: int) -> bool:
        return 0 <= self.maximum_redeliveries < redelivery_count


@dataclass(frozen=True, slots=True)
class DestinationPolicy:
    dead_letter: DeadLetterPolicy
    redelivery: RedeliveryPolicy
    producer_flow_control: bool
    expire_messages_period_ms: int
    """How often waiting messages are swept for expiry (at least every 30 s; 0 changes nothing)."""
    use_message_groups: bool
    """Messages with the same ``JMSXGroupID`` go to one consumer while it lives."""


PolicyLookup = Callable[[Destination], DestinationPolicy]
