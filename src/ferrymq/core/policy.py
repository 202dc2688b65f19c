"""Per-destination behaviour the core needs: dead-letter routing, redelivery limits, flow control.

These are the core's own small records; the service builds them from the configuration's
``<destinationPolicy>`` and ``<redeliveryPlugin>`` entries so the core never imports ``config``.
Defaults are ActiveMQ 5.17's.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field

from ferrymq.core.destination import Destination, DestinationType

SHARED_DLQ_NAME = "ActiveMQ.DLQ"


class DeadLetterKind(enum.Enum):
    SHARED = "shared"
    INDIVIDUAL = "individual"
    DISCARDING = "discarding"


@dataclass(frozen=True, slots=True)
class DeadLetterPolicy:
    kind: DeadLetterKind = DeadLetterKind.SHARED
    queue_name: str = SHARED_DLQ_NAME
    queue_prefix: str = "ActiveMQ.DLQ.Queue."
    topic_prefix: str = "ActiveMQ.DLQ.Topic."
    queue_suffix: str = ""
    topic_suffix: str = ""
    use_queue_for_queue_messages: bool = True
    use_queue_for_topic_messages: bool = True
    process_expired: bool = True
    process_non_persistent: bool = False
    """ActiveMQ's default: a non-persistent message that dies is dropped, not dead-lettered."""

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
    maximum_redeliveries: int = 6
    """Redeliveries before the message is dead-lettered; -1 retries for ever."""
    nack_redelivers: bool = False
    """ActiveMQ sends a NACKed message straight to the DLQ unless its RedeliveryPlugin is
    installed, in which case NACK means "try again" until ``maximum_redeliveries``."""

    def exceeded(self, redelivery_count: int) -> bool:
        return 0 <= self.maximum_redeliveries < redelivery_count


@dataclass(frozen=True, slots=True)
class DestinationPolicy:
    dead_letter: DeadLetterPolicy = field(default_factory=DeadLetterPolicy)
    redelivery: RedeliveryPolicy = field(default_factory=RedeliveryPolicy)
    producer_flow_control: bool = True
    expire_messages_period_ms: int = 30000
    use_message_groups: bool = True


DEFAULT_POLICY = DestinationPolicy()

PolicyLookup = Callable[[Destination], DestinationPolicy]


def default_policy_lookup(destination: Destination) -> DestinationPolicy:
    return DEFAULT_POLICY
