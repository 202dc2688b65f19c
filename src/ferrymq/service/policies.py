"""Builds the core's per-destination policies from the configuration, once per destination."""

from __future__ import annotations

from ferrymq.config.model import BrokerConfig
from ferrymq.config.policy import (
    DiscardingDeadLetterStrategy,
    IndividualDeadLetterStrategy,
    SharedDeadLetterStrategy,
)
from ferrymq.core.destination import Destination
from ferrymq.core.policy import (
    DeadLetterKind,
    DeadLetterPolicy,
    DestinationPolicy,
    RedeliveryPolicy,
)


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
        strategy = entry.dead_letter_strategy
        if isinstance(strategy, IndividualDeadLetterStrategy):
            dead_letter = DeadLetterPolicy(
                kind=DeadLetterKind.INDIVIDUAL,
                queue_prefix=strategy.queue_prefix,
                topic_prefix=strategy.topic_prefix,
                queue_suffix=strategy.queue_suffix,
                topic_suffix=strategy.topic_suffix,
                use_queue_for_queue_messages=strategy.use_queue_for_queue_messages,
                use_queue_for_topic_messages=strategy.use_queue_for_topic_messages,
                process_expired=strategy.process_expired,
                process_non_persistent=strategy.process_non_persistent,
            )
        elif isinstance(strategy, DiscardingDeadLetterStrategy):
            dead_letter = DeadLetterPolicy(kind=DeadLetterKind.DISCARDING)
        else:
            assert isinstance(strategy, SharedDeadLetterStrategy)
            dead_letter = DeadLetterPolicy(
                queue_name=strategy.dead_letter_queue,
                process_expired=strategy.process_expired,
                process_non_persistent=strategy.process_non_persistent,
            )
        redelivery = RedeliveryPolicy()
        plugin = config.redelivery_policies
        if plugin is not None:
            chosen = plugin.policy_for(destination.is_topic, destination.name)
            if chosen is not None:
                redelivery = RedeliveryPolicy(
                    maximum_redeliveries=chosen.maximum_redeliveries, nack_redelivers=True
                )
        return DestinationPolicy(
            dead_letter=dead_letter,
            redelivery=redelivery,
            producer_flow_control=entry.producer_flow_control,
            expire_messages_period_ms=entry.expire_messages_period_ms,
        )
