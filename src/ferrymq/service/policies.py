"""Builds the core's per-destination policies from the configuration, once per destination.

Every field of the core's records is filled here, from the configuration model, whose dataclass
defaults are ActiveMQ's: that is the one place those defaults are written down.
"""

from __future__ import annotations

from ferrymq.config.model import BrokerConfig
from ferrymq.config.policy import (
    DeadLetterStrategy,
    DiscardingDeadLetterStrategy,
    IndividualDeadLetterStrategy,
    RedeliveryPolicyConfig,
    SharedDeadLetterStrategy,
)
from ferrymq.core.destination import Destination
from ferrymq.core.policy import (
    DeadLetterKind,
    DeadLetterPolicy,
    DestinationPolicy,
    RedeliveryPolicy,
)

_DISCARDING = DiscardingDeadLetterStrategy()
_REDELIVERY = RedeliveryPolicyConfig()


class PolicyResolver:
    """``Destination -> DestinationPolicy``, cached: policies do not change at run time."""

    def __init__(self, config: BrokerConfig) -> None:
        self._config = config
        self._cache: dict[Destination, DestinationPolicy] = {}

    def __call__(self, destination: Destination) -> DestinationPolicy:
        policy = self._cache.get(destination)
        if policy is None:
            policy = self._build(destination)
            self._cache[destination] = policy
        return policy

    def _build(self, destination: Destination) -> DestinationPolicy:
        config = self._config
        entry = config.destination_policy.policy_for(destination.is_topic, destination.name)
        return DestinationPolicy(
            dead_letter=dead_letter_policy(entry.dead_letter_strategy),
            redelivery=self._redelivery(destination),
            producer_flow_control=entry.producer_flow_control,
            expire_messages_period_ms=entry.expire_messages_period_ms,
            use_message_groups=True,  # ActiveMQ always honours JMSXGroupID; no switch for it
        )

    def _redelivery(self, destination: Destination) -> RedeliveryPolicy:
        plugin = self._config.redelivery_policies
        chosen = (
            plugin.policy_for(destination.is_topic, destination.name)
            if plugin is not None
            else None
        )
        if chosen is None:
            # Without the RedeliveryPlugin a NACK is a poison ack (straight to the DLQ).
            return RedeliveryPolicy(_REDELIVERY.maximum_redeliveries, nack_redelivers=False)
        return RedeliveryPolicy(chosen.maximum_redeliveries, nack_redelivers=True)


def dead_letter_policy(strategy: DeadLetterStrategy) -> DeadLetterPolicy:
    """The core's record of a ``<deadLetterStrategy>``; fields a kind does not use are empty."""
    if isinstance(strategy, IndividualDeadLetterStrategy):
        return DeadLetterPolicy(
            kind=DeadLetterKind.INDIVIDUAL,
            queue_name="",
            queue_prefix=strategy.queue_prefix,
            topic_prefix=strategy.topic_prefix,
            queue_suffix=strategy.queue_suffix,
            topic_suffix=strategy.topic_suffix,
            use_queue_for_queue_messages=strategy.use_queue_for_queue_messages,
            use_queue_for_topic_messages=strategy.use_queue_for_topic_messages,
            process_expired=strategy.process_expired,
            process_non_persistent=strategy.process_non_persistent,
        )
    options: SharedDeadLetterStrategy | DiscardingDeadLetterStrategy
    if isinstance(strategy, DiscardingDeadLetterStrategy):
        # As before the core records lost their defaults: a discarding strategy's own
        # processExpired/processNonPersistent are not consulted (the message is dropped anyway).
        kind, name, options = DeadLetterKind.DISCARDING, "", _DISCARDING
    else:
        assert isinstance(strategy, SharedDeadLetterStrategy)
        kind, name, options = DeadLetterKind.SHARED, strategy.dead_letter_queue, strategy
    return DeadLetterPolicy(
        kind=kind,
        queue_name=name,
        queue_prefix="",
        topic_prefix="",
        queue_suffix="",
        topic_suffix="",
        use_queue_for_queue_messages=True,
        use_queue_for_topic_messages=True,
        process_expired=options.process_expired,
        process_non_persistent=options.process_non_persistent,
    )
