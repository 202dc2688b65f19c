"""Per-destination policies: `<destinationPolicy>` and the `<redeliveryPlugin>` policy map.

Both maps give each destination one entry, the most specific that matches, as ActiveMQ does since
5.15.3 (`DestinationMap.chooseValue`, AMQ-6901: "the exact match by destination or the closest
parent that applies"). FerryMQ makes "closest" a total order: an exact name wins; otherwise, at
the first segment where two matching patterns differ, a literal segment beats `*`, `*` beats the
end of the pattern, and the end beats `>` (so `FOO.BAR` > `FOO.*` > `FOO` > `FOO.>` > `>`); equal
patterns go to the entry that comes first in the file. ActiveMQ breaks ties between unrelated
patterns (`*.EU` against `ORDERS.*`) by string order; FerryMQ prefers the more specific left
segment. With no match, the `defaultEntry` applies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeAlias, TypeVar

from ferrymq.config.errors import Location

__all__ = [
    "ConditionalNetworkBridgeFilterConfig",
    "DeadLetterStrategy",
    "DiscardingDeadLetterStrategy",
    "IndividualDeadLetterStrategy",
    "PolicyEntry",
    "PolicyMap",
    "RedeliveryPluginConfig",
    "RedeliveryPolicyConfig",
    "SharedDeadLetterStrategy",
    "destination_matches",
]


def destination_matches(pattern: str, name: str) -> bool:
    """ActiveMQ's wildcards: `.` separates segments, `*` is one segment, `>` the rest (0+)."""
    pattern_parts = pattern.split(".")
    name_parts = name.split(".")
    for i, part in enumerate(pattern_parts):
        if part == ">":
            return True
        if i >= len(name_parts) or (part != "*" and part != name_parts[i]):
            return False
    return len(pattern_parts) == len(name_parts)


@dataclass(frozen=True)
class _DeadLetterOptions:
    process_expired: bool = True
    """`processExpired`: send expired messages to the DLQ. Default true."""
    process_non_persistent: bool = False
    """`processNonPersistent`: send non-persistent messages to the DLQ too. Default false."""
    expiration_ms: int = 0
    """`expiration`: time to live given to messages in the DLQ; 0 keeps them. Default 0."""
    enable_audit: bool = True
    """`enableAudit`: drop duplicates on their way into the DLQ. Default true."""


@dataclass(frozen=True)
class SharedDeadLetterStrategy(_DeadLetterOptions):
    """`<sharedDeadLetterStrategy>`: one DLQ for every destination (the default)."""

    dead_letter_queue: str = "ActiveMQ.DLQ"
    """`<deadLetterQueue><queue physicalName>`: the DLQ's name. Default "ActiveMQ.DLQ"."""


@dataclass(frozen=True)
class IndividualDeadLetterStrategy(_DeadLetterOptions):
    """`<individualDeadLetterStrategy>`: one DLQ per destination: prefix + name + suffix."""

    queue_prefix: str = "ActiveMQ.DLQ.Queue."
    """`queuePrefix`. Default "ActiveMQ.DLQ.Queue."."""
    topic_prefix: str = "ActiveMQ.DLQ.Topic."
    """`topicPrefix`. Default "ActiveMQ.DLQ.Topic."."""
    queue_suffix: str = ""
    """`queueSuffix`. Default ""."""
    topic_suffix: str = ""
    """`topicSuffix`. Default ""."""
    use_queue_for_queue_messages: bool = True
    """`useQueueForQueueMessages`: the DLQ of a queue is a queue. Default true."""
    use_queue_for_topic_messages: bool = True
    """`useQueueForTopicMessages`: the DLQ of a topic is a queue. Default true."""
    destination_per_durable_subscriber: bool = False
    """`destinationPerDurableSubscriber`. Default false."""


@dataclass(frozen=True)
class DiscardingDeadLetterStrategy(_DeadLetterOptions):
    """`<discarding>`: drop dead letters instead of keeping them."""


DeadLetterStrategy: TypeAlias = (
    SharedDeadLetterStrategy | IndividualDeadLetterStrategy | DiscardingDeadLetterStrategy
)


@dataclass(frozen=True)
class ConditionalNetworkBridgeFilterConfig:
    """`<conditionalNetworkBridgeFilterFactory>`: lets stuck queue messages flow back over a network
    bridge when this broker has no consumers (reference 4.5)."""

    replay_when_no_consumers: bool = False
    """`replayWhenNoConsumers`. Default false."""
    replay_delay_ms: int = 0
    """`replayDelay`: minimum age of a message before it may go back. Default 0."""
    rate_limit: int = 0
    """`rateLimit`: matches per rate_duration for a network consumer; 0 is unlimited. Default 0."""
    rate_duration_ms: int = 1000
    """`rateDuration`. Default 1000."""
    selector_aware: bool = False
    """`selectorAware`: count only consumers whose selector matches. Default false."""


@dataclass(frozen=True)
class PolicyEntry:
    """One `<policyEntry>`: settings for destinations matching `queue` or `topic`."""

    queue: str | None = None
    """`queue`: the queue name pattern this entry covers (exactly one of queue/topic is set,
    except in a defaultEntry, which covers both)."""
    topic: str | None = None
    """`topic`: the topic name pattern this entry covers."""
    producer_flow_control: bool = True
    """`producerFlowControl`: block producers while the destination is full. Default true."""
    memory_limit: int | None = None
    """`memoryLimit` (bytes). Default None: the broker's memory limit applies."""
    dead_letter_strategy: DeadLetterStrategy = field(default_factory=SharedDeadLetterStrategy)
    """`<deadLetterStrategy>`. Default: shared, queue "ActiveMQ.DLQ"."""
    expire_messages_period_ms: int = 30000
    """`expireMessagesPeriod`: how often expired messages are swept; 0 never. Default 30000."""
    prioritized_messages: bool = False
    """`prioritizedMessages`: dispatch by JMS priority. Default false."""
    queue_prefetch: int | None = None
    """`queuePrefetch`. Default None: the consumer's own prefetch (ActiveMQ clients: 1000)."""
    topic_prefetch: int | None = None
    """`topicPrefetch`. Default None: the consumer's own (ActiveMQ clients: 32767)."""
    durable_topic_prefetch: int | None = None
    """`durableTopicPrefetch`. Default None: the consumer's own (ActiveMQ clients: 100)."""
    enable_audit: bool = True
    """`enableAudit`: drop duplicate sends to this destination. Default true."""
    max_page_size: int = 200
    """`maxPageSize`: messages paged in from the store at a time. Default 200."""
    max_browse_page_size: int = 400
    """`maxBrowsePageSize`. Default 400."""
    use_cache: bool = True
    """`useCache`: keep recently stored messages in memory for dispatch. Default true."""
    optimized_dispatch: bool = False
    """`optimizedDispatch`. Default false."""
    cursor_memory_high_water_mark: int = 70
    """`cursorMemoryHighWaterMark` (percent of the memory limit). Default 70."""
    gc_inactive_destinations: bool = False
    """`gcInactiveDestinations`: delete destinations idle for inactive_timeout. Default false."""
    inactive_timeout_before_gc_ms: int = 60000
    """`inactiveTimoutBeforeGC` (ActiveMQ's spelling). Default 60000."""
    advisory_for_consumed: bool = False
    """`advisoryForConsumed`. Default false."""
    advisory_for_delivery: bool = False
    """`advisoryForDelivery`. Default false."""
    advisory_for_slow_consumers: bool = False
    """`advisoryForSlowConsumers`. Default false."""
    advisory_for_fast_producers: bool = False
    """`advisoryForFastProducers`. Default false."""
    advisory_when_full: bool = False
    """`advisoryWhenFull`. Default false."""
    send_advisory_if_no_consumers: bool = False
    """`sendAdvisoryIfNoConsumers`. Default false."""
    pending_message_limit: int | None = None
    """`<pendingMessageLimitStrategy><constantPendingMessageLimitStrategy limit>`: messages kept
    for a slow topic consumer beyond its prefetch. Default None (unlimited)."""
    network_bridge_filter: ConditionalNetworkBridgeFilterConfig | None = None
    """`<networkBridgeFilterFactory>`. Default None: a message never goes back where it was."""
    location: Location | None = field(default=None, compare=False)

    def matches(self, destination_is_topic: bool, name: str) -> bool:
        pattern = self.topic if destination_is_topic else self.queue
        return pattern is not None and destination_matches(pattern, name)


@dataclass(frozen=True)
class RedeliveryPolicyConfig:
    """One `<redeliveryPolicy>`: when and how often the broker redelivers a rolled-back message."""

    queue: str | None = None
    """`queue`: the queue pattern this entry covers (None in the defaultEntry)."""
    topic: str | None = None
    """`topic`: the topic pattern this entry covers."""
    maximum_redeliveries: int = 6
    """`maximumRedeliveries`: redeliveries before the DLQ; -1 is unlimited. Default 6."""
    initial_redelivery_delay_ms: int = 1000
    """`initialRedeliveryDelay`. Default 1000."""
    redelivery_delay_ms: int = 1000
    """`redeliveryDelay`. Default 1000."""
    use_exponential_back_off: bool = False
    """`useExponentialBackOff`. Default false."""
    back_off_multiplier: float = 5.0
    """`backOffMultiplier`. Default 5.0."""
    maximum_redelivery_delay_ms: int = -1
    """`maximumRedeliveryDelay`; -1 is no cap. Default -1."""
    use_collision_avoidance: bool = False
    """`useCollisionAvoidance`: randomise delays by collision_avoidance_factor. Default false."""
    collision_avoidance_factor: float = 0.15
    """`collisionAvoidanceFactor` (or `collisionAvoidancePercent` / 100). Default 0.15."""
    location: Location | None = field(default=None, compare=False)

    def matches(self, destination_is_topic: bool, name: str) -> bool:
        pattern = self.topic if destination_is_topic else self.queue
        return pattern is not None and destination_matches(pattern, name)


_Entry = TypeVar("_Entry", PolicyEntry, RedeliveryPolicyConfig)


def _specificity(pattern: str) -> tuple[int, ...]:
    # literal 3 > "*" 2 > end of pattern 1 > ">" 0, compared segment by segment
    scores = [0 if part == ">" else 2 if part == "*" else 3 for part in pattern.split(".")]
    return (*scores, 1)


def _choose(entries: Sequence[_Entry], destination_is_topic: bool, name: str) -> _Entry | None:
    best: _Entry | None = None
    best_key: tuple[int, ...] = ()
    for entry in entries:
        pattern = entry.topic if destination_is_topic else entry.queue
        if pattern is None or not destination_matches(pattern, name):
            continue
        key = (4,) if pattern == name else _specificity(pattern)
        if best is None or key > best_key:
            best, best_key = entry, key
    return best


@dataclass(frozen=True)
class PolicyMap:
    """`<destinationPolicy><policyMap>`: the entries, in file order, and the defaultEntry."""

    entries: tuple[PolicyEntry, ...] = ()
    default_entry: PolicyEntry | None = None
    """`<defaultEntry>`; None means ActiveMQ's defaults (`PolicyEntry()`)."""

    def policy_for(self, destination_is_topic: bool, name: str) -> PolicyEntry:
        """The entry that governs queue or topic `name`."""
        chosen = _choose(self.entries, destination_is_topic, name)
        return chosen or self.default_entry or PolicyEntry()


@dataclass(frozen=True)
class RedeliveryPluginConfig:
    """`<plugins><redeliveryPlugin>`: broker-side redelivery with delay (needs schedulerSupport)."""

    fallback_to_dead_letter: bool = True
    """`fallbackToDeadLetter`: destinations with no matching policy go to the DLQ. Default true."""
    send_to_dlq_if_max_retries_exceeded: bool = True
    """`sendToDlqIfMaxRetriesExceeded`. Default true."""
    entries: tuple[RedeliveryPolicyConfig, ...] = ()
    """`<redeliveryPolicyEntries>`, in file order."""
    default_entry: RedeliveryPolicyConfig | None = None
    """`<defaultEntry>`: applies to destinations no entry matches."""
    location: Location | None = field(default=None, compare=False)

    def policy_for(self, destination_is_topic: bool, name: str) -> RedeliveryPolicyConfig | None:
        """The policy for a destination, or None: then fallback_to_dead_letter decides."""
        chosen = _choose(self.entries, destination_is_topic, name)
        return chosen or self.default_entry
