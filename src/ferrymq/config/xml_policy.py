"""`<destinationPolicy>` and `<plugins>`: `<redeliveryPlugin>` (reference sections 4.5 and 6.11)
and FerryMQ's `<messageTracePlugin>`."""

from __future__ import annotations

from ferrymq.config.model import MessageTraceConfig
from ferrymq.config.policy import (
    ConditionalNetworkBridgeFilterConfig,
    DeadLetterStrategy,
    DiscardingDeadLetterStrategy,
    IndividualDeadLetterStrategy,
    PolicyEntry,
    PolicyMap,
    RedeliveryPluginConfig,
    RedeliveryPolicyConfig,
    SharedDeadLetterStrategy,
)
from ferrymq.config.security import SecurityConfig
from ferrymq.config.xml_document import Element, ElementReader, LoadContext
from ferrymq.config.xml_security import (
    AUTHENTICATION_PLUGINS,
    SECURITY_PLUGINS,
    read_authentication,
    read_authorization,
)
from ferrymq.config.xml_trace import read_message_trace

__all__ = ["read_destination_policy", "read_plugins"]


def _only_child(context: LoadContext, element: Element, name: str) -> Element:
    """The single child of a wrapper such as `<defaultEntry><policyEntry/></defaultEntry>`."""
    reader = context.reader(element)
    children = reader.children({name})
    reader.finish()
    if len(children) != 1:
        raise context.error(element, f"expected exactly one <{name}> inside")
    return children[0]


def _pattern(reader: ElementReader, default_entry: bool) -> tuple[str | None, str | None]:
    queue, topic = reader.optional("queue"), reader.optional("topic")
    if not default_entry and (queue is None) == (topic is None):
        raise reader.error('give exactly one of queue="pattern" or topic="pattern"')
    for name, value in (("queue", queue), ("topic", topic)):
        if value is not None and not value.strip():
            raise reader.error("empty destination pattern", name)
    return queue, topic


def read_destination_policy(context: LoadContext, element: Element) -> PolicyMap:
    policy_map = _only_child(context, element, "policyMap")
    reader = context.reader(policy_map)
    parts = reader.single_children({"policyEntries", "defaultEntry"})
    reader.finish()
    entries: list[PolicyEntry] = []
    if "policyEntries" in parts:
        wrapper = context.reader(parts["policyEntries"])
        entries = [_policy_entry(context, e, False) for e in wrapper.children({"policyEntry"})]
        wrapper.finish()
    default = None
    if "defaultEntry" in parts:
        default = _policy_entry(
            context, _only_child(context, parts["defaultEntry"], "policyEntry"), True
        )
    return PolicyMap(tuple(entries), default)


def _policy_entry(context: LoadContext, element: Element, default_entry: bool) -> PolicyEntry:
    reader = context.reader(element)
    queue, topic = _pattern(reader, default_entry)
    parts = reader.single_children(
        {"deadLetterStrategy", "pendingMessageLimitStrategy", "networkBridgeFilterFactory"}
    )
    strategy: DeadLetterStrategy = SharedDeadLetterStrategy()
    if "deadLetterStrategy" in parts:
        strategy = _dead_letter_strategy(context, parts["deadLetterStrategy"])
    # ActiveMQ spells it "inactiveTimoutBeforeGC"; the correct spelling is accepted too.
    inactive = reader.optional_integer("inactiveTimoutBeforeGC", minimum=0)
    inactive_correct = reader.optional_integer("inactiveTimeoutBeforeGC", minimum=0)
    entry = PolicyEntry(
        queue=queue,
        topic=topic,
        producer_flow_control=reader.boolean("producerFlowControl", True),
        memory_limit=reader.size("memoryLimit"),
        dead_letter_strategy=strategy,
        expire_messages_period_ms=reader.integer("expireMessagesPeriod", 30000, minimum=0),
        prioritized_messages=reader.boolean("prioritizedMessages", False),
        queue_prefetch=reader.optional_integer("queuePrefetch", minimum=0),
        topic_prefetch=reader.optional_integer("topicPrefetch", minimum=0),
        durable_topic_prefetch=reader.optional_integer("durableTopicPrefetch", minimum=0),
        enable_audit=reader.boolean("enableAudit", True),
        max_page_size=reader.integer("maxPageSize", 200, minimum=1),
        max_browse_page_size=reader.integer("maxBrowsePageSize", 400, minimum=1),
        use_cache=reader.boolean("useCache", True),
        optimized_dispatch=reader.boolean("optimizedDispatch", False),
        cursor_memory_high_water_mark=reader.integer("cursorMemoryHighWaterMark", 70, minimum=1),
        gc_inactive_destinations=reader.boolean("gcInactiveDestinations", False),
        inactive_timeout_before_gc_ms=next(
            (v for v in (inactive, inactive_correct) if v is not None), 60000
        ),
        advisory_for_consumed=reader.boolean("advisoryForConsumed", False),
        advisory_for_delivery=reader.boolean("advisoryForDelivery", False),
        advisory_for_slow_consumers=reader.boolean("advisoryForSlowConsumers", False),
        advisory_for_fast_producers=reader.boolean("advisoryForFastProducers", False),
        advisory_when_full=reader.boolean("advisoryWhenFull", False),
        send_advisory_if_no_consumers=reader.boolean("sendAdvisoryIfNoConsumers", False),
        pending_message_limit=_pending_limit(context, parts.get("pendingMessageLimitStrategy")),
        network_bridge_filter=_bridge_filter(context, parts.get("networkBridgeFilterFactory")),
        location=reader.location(),
    )
    reader.finish()
    return entry


def _dead_letter_strategy(context: LoadContext, element: Element) -> DeadLetterStrategy:
    outer = context.reader(element)
    kinds = outer.children(
        {
            "sharedDeadLetterStrategy",
            "individualDeadLetterStrategy",
            "discarding",
            "discardingDeadLetterStrategy",
        }
    )
    outer.finish()
    if len(kinds) != 1:
        raise context.error(element, "expected exactly one strategy inside <deadLetterStrategy>")
    strategy = kinds[0]
    reader = context.reader(strategy)
    expired = reader.boolean("processExpired", True)
    non_persistent = reader.boolean("processNonPersistent", False)
    expiration = reader.integer("expiration", 0, minimum=0)
    audit = reader.boolean("enableAudit", True)
    result: DeadLetterStrategy
    if strategy.name == "sharedDeadLetterStrategy":
        queue = "ActiveMQ.DLQ"
        wrapper = reader.single_children({"deadLetterQueue"}).get("deadLetterQueue")
        if wrapper is not None:
            queue_reader = context.reader(_only_child(context, wrapper, "queue"))
            queue = queue_reader.required("physicalName")
            queue_reader.finish()
        result = SharedDeadLetterStrategy(expired, non_persistent, expiration, audit, queue)
    elif strategy.name == "individualDeadLetterStrategy":
        reader.children(())
        result = IndividualDeadLetterStrategy(
            expired,
            non_persistent,
            expiration,
            audit,
            queue_prefix=reader.string("queuePrefix", "ActiveMQ.DLQ.Queue."),
            topic_prefix=reader.string("topicPrefix", "ActiveMQ.DLQ.Topic."),
            queue_suffix=reader.string("queueSuffix", ""),
            topic_suffix=reader.string("topicSuffix", ""),
            use_queue_for_queue_messages=reader.boolean("useQueueForQueueMessages", True),
            use_queue_for_topic_messages=reader.boolean("useQueueForTopicMessages", True),
            destination_per_durable_subscriber=reader.boolean(
                "destinationPerDurableSubscriber", False
            ),
        )
    else:
        reader.children(())
        result = DiscardingDeadLetterStrategy(expired, non_persistent, expiration, audit)
    reader.finish()
    return result


def _pending_limit(context: LoadContext, element: Element | None) -> int | None:
    if element is None:
        return None
    child = _only_child(context, element, "constantPendingMessageLimitStrategy")
    reader = context.reader(child)
    limit = reader.integer("limit", -1, minimum=-1)
    reader.children(())
    reader.finish()
    return None if limit < 0 else limit


def _bridge_filter(
    context: LoadContext, element: Element | None
) -> ConditionalNetworkBridgeFilterConfig | None:
    if element is None:
        return None
    child = _only_child(context, element, "conditionalNetworkBridgeFilterFactory")
    reader = context.reader(child)
    config = ConditionalNetworkBridgeFilterConfig(
        replay_when_no_consumers=reader.boolean("replayWhenNoConsumers", False),
        replay_delay_ms=reader.integer("replayDelay", 0, minimum=0),
        rate_limit=reader.integer("rateLimit", 0, minimum=0),
        rate_duration_ms=reader.integer("rateDuration", 1000, minimum=1),
        selector_aware=reader.boolean("selectorAware", False),
    )
    reader.children(())
    reader.finish()
    return config


def read_plugins(
    context: LoadContext, element: Element
) -> tuple[RedeliveryPluginConfig | None, MessageTraceConfig | None, SecurityConfig | None]:
    """`<plugins>`: the redelivery plugin, FerryMQ's message trace and the security plugins
    (`xml_security`); any other plugin is an error."""
    reader = context.reader(element)
    authentication = [c for c in element.children if c.name in AUTHENTICATION_PLUGINS]
    others = {
        "redeliveryPlugin",
        "messageTracePlugin",
        *(SECURITY_PLUGINS - AUTHENTICATION_PLUGINS),
    }
    plugins = reader.single_children(others | {c.name for c in authentication})
    reader.finish()
    redelivery = plugins.get("redeliveryPlugin")
    trace = plugins.get("messageTracePlugin")
    authorization = plugins.get("authorizationPlugin")
    security = None
    if authentication or authorization is not None:
        security = SecurityConfig(
            read_authentication(context, authentication),
            None if authorization is None else read_authorization(context, authorization),
        )
    return (
        None if redelivery is None else _redelivery_plugin(context, redelivery),
        None if trace is None else read_message_trace(context, trace),
        security,
    )


def _redelivery_plugin(context: LoadContext, element: Element) -> RedeliveryPluginConfig:
    reader = context.reader(element)
    entries: list[RedeliveryPolicyConfig] = []
    default = None
    outer = reader.single_children({"redeliveryPolicyMap"}).get("redeliveryPolicyMap")
    if outer is not None:
        policy_map = context.reader(_only_child(context, outer, "redeliveryPolicyMap"))
        parts = policy_map.single_children({"redeliveryPolicyEntries", "defaultEntry"})
        policy_map.finish()
        if "redeliveryPolicyEntries" in parts:
            wrapper = context.reader(parts["redeliveryPolicyEntries"])
            entries = [
                _redelivery(context, e, False) for e in wrapper.children({"redeliveryPolicy"})
            ]
            wrapper.finish()
        if "defaultEntry" in parts:
            default_element = _only_child(context, parts["defaultEntry"], "redeliveryPolicy")
            default = _redelivery(context, default_element, True)
    config = RedeliveryPluginConfig(
        fallback_to_dead_letter=reader.boolean("fallbackToDeadLetter", True),
        send_to_dlq_if_max_retries_exceeded=reader.boolean("sendToDlqIfMaxRetriesExceeded", True),
        entries=tuple(entries),
        default_entry=default,
        location=reader.location(),
    )
    reader.finish()
    return config


def _redelivery(
    context: LoadContext, element: Element, default_entry: bool
) -> RedeliveryPolicyConfig:
    reader = context.reader(element)
    queue, topic = _pattern(reader, default_entry)
    factor = reader.number("collisionAvoidanceFactor", 0.15, minimum=0.0)
    percent = reader.optional_integer("collisionAvoidancePercent", minimum=0)
    config = RedeliveryPolicyConfig(
        queue=queue,
        topic=topic,
        maximum_redeliveries=reader.integer("maximumRedeliveries", 6, minimum=-1),
        initial_redelivery_delay_ms=reader.integer("initialRedeliveryDelay", 1000, minimum=0),
        redelivery_delay_ms=reader.integer("redeliveryDelay", 1000, minimum=0),
        use_exponential_back_off=reader.boolean("useExponentialBackOff", False),
        back_off_multiplier=reader.number("backOffMultiplier", 5.0, minimum=1.0),
        maximum_redelivery_delay_ms=reader.integer("maximumRedeliveryDelay", -1, minimum=-1),
        use_collision_avoidance=reader.boolean("useCollisionAvoidance", False),
        collision_avoidance_factor=factor if percent is None else percent / 100,
        location=reader.location(),
    )
    reader.children(())
    reader.finish()
    return config
