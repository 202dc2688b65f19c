"""broker.xml's `<addresses>` and `<address-settings>`, on FerryMQ's destinations and policies.

Artemis routes to addresses, each with anycast and multicast queues (ActiveMQ Artemis
documentation, "Address Model"); FerryMQ, like ActiveMQ 5.x, has queues and topics. An anycast
`<queue>` is a FerryMQ queue of the queue's name, remembered with the address it was declared
under (what a broker connection's `address-match` matches). A multicast address is a topic of the
address's name; each of its `<queue>`s is a durable subscription, named `clientId.subscription`
as Artemis names a JMS durable subscription's queue. They are created when the broker starts
(`BrokerConfig.startup_destinations`).

An `<address-setting match>` becomes a policy entry (dead-letter address) and a redelivery
entry (`max-delivery-attempts`, `redelivery-delay`) for both queues and topics of the match,
Artemis's wildcards (`#`, `*`, `.`) translated to FerryMQ's (`>`, `*`, `.`). Artemis merges
every matching setting, the more specific overriding the less; FerryMQ picks one entry per
destination, so each entry is written here with the values it inherits already filled in.
FerryMQ has one destination for dead and for expired messages: it keeps them rather than drop
them (docs/artemis-config.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from ferrymq.config.artemis_reading import children, finish, text_value
from ferrymq.config.errors import ConfigError
from ferrymq.config.model import StartupDestination
from ferrymq.config.policy import (
    DeadLetterStrategy,
    DiscardingDeadLetterStrategy,
    PolicyEntry,
    PolicyMap,
    RedeliveryPluginConfig,
    RedeliveryPolicyConfig,
    SharedDeadLetterStrategy,
)
from ferrymq.config.units import parse_int
from ferrymq.config.xml_document import Element, LoadContext

__all__ = ["AddressSettings", "read_address_settings", "read_addresses"]

_NOT_APPLIED = "an Artemis queue setting FerryMQ does not apply: ignored"
_QUEUE_OPTIONS = (
    "max-consumers", "purge-on-no-consumers", "exclusive", "group-rebalance",
    "group-rebalance-pause-dispatch", "group-buckets", "group-first-key", "last-value",
    "last-value-key", "non-destructive", "consumers-before-dispatch", "delay-before-dispatch",
    "ring-size", "enabled", "internal", "auto-delete", "auto-delete-delay",
    "auto-delete-message-count", "consumer-priority",
)  # fmt: skip
_QUEUE_ATTRIBUTES: Mapping[str, str] = MappingProxyType(dict.fromkeys(_QUEUE_OPTIONS, _NOT_APPLIED))
_QUEUE_CHILDREN = MappingProxyType({"user": "FerryMQ does not record who created a queue"})
_QUEUE_REFUSED = MappingProxyType(
    {"filter": "queue filters; subscribe with a selector instead (docs/artemis-config.md)"}
)
_SETTING = "an Artemis address setting FerryMQ does not apply: ignored"
_LIMITS = "FerryMQ's memory and store limits are <systemUsage>'s (activemq.xml): ignored"
_LIMIT_SETTINGS = (
    "max-size-bytes", "max-size-messages", "page-size-bytes", "address-full-policy",
    "page-max-cache-size", "max-read-page-bytes", "max-read-page-messages",
    "prefetch-page-bytes", "prefetch-page-messages", "max-size-bytes-reject-threshold",
)  # fmt: skip
_OTHER_SETTINGS = (
    "redelivery-delay-multiplier", "max-redelivery-delay",
    "redelivery-collision-avoidance-factor", "message-counter-history-day-limit",
    "auto-create-queues", "auto-create-addresses", "auto-create-jms-queues",
    "auto-create-jms-topics", "auto-delete-queues", "auto-delete-addresses",
    "auto-delete-created-queues", "auto-delete-queues-delay",
    "auto-delete-queues-message-count", "auto-delete-addresses-delay",
    "auto-create-dead-letter-resources", "auto-create-expiry-resources",
    "dead-letter-queue-prefix", "dead-letter-queue-suffix", "expiry-queue-prefix",
    "expiry-queue-suffix", "expiry-delay", "min-expiry-delay", "max-expiry-delay", "no-expiry",
    "last-value-queue", "default-last-value-queue", "default-last-value-key",
    "default-exclusive-queue", "default-consumers-before-dispatch",
    "default-delay-before-dispatch", "default-purge-on-no-consumers", "default-max-consumers",
    "default-queue-routing-type", "default-address-routing-type",
    "default-consumer-window-size", "default-ring-size", "retroactive-message-count",
    "send-to-dla-on-no-route", "slow-consumer-threshold", "slow-consumer-policy",
    "slow-consumer-check-period", "slow-consumer-threshold-measurement-unit",
    "management-browse-page-size", "management-message-attribute-size-limit",
    "enable-metrics", "config-delete-queues", "config-delete-addresses",
    "config-delete-diverts", "redistribution-delay", "enable-ingress-timestamp",
    "default-group-rebalance", "default-group-rebalance-pause-dispatch",
    "default-group-buckets", "default-group-first-key", "default-non-destructive",
    "default-consumer-priority",
)  # fmt: skip
_IGNORED_SETTINGS: Mapping[str, str] = MappingProxyType(
    {**dict.fromkeys(_LIMIT_SETTINGS, _LIMITS), **dict.fromkeys(_OTHER_SETTINGS, _SETTING)}
)
_READ_SETTINGS = (
    "dead-letter-address",
    "expiry-address",
    "max-delivery-attempts",
    "redelivery-delay",
)


def read_addresses(context: LoadContext, element: Element) -> list[StartupDestination]:
    """`<addresses>`: the queues and topics (with their durable subscriptions) to create."""
    reader = context.reader(element)
    found: list[StartupDestination] = []
    addresses: dict[str, int] = {}
    queues: dict[str, int] = {}
    for child in children(context, element, {"address"}):
        address_reader = context.reader(child)
        address = address_reader.required("name").strip()
        finish(address_reader)
        if address in addresses:
            message = f"address {address!r} is declared twice (line {addresses[address]})"
            context.report(context.error(child, message, "name"))
            continue
        addresses[address] = child.line
        for routing in children(context, child, {"anycast", "multicast"}):
            finish(context.reader(routing))
            names = [_queue(context, q, queues) for q in children(context, routing, {"queue"})]
            location = context.location(routing)
            if routing.name == "anycast":
                for name in names:
                    _differs(context, routing, address, name)
                    found.append(StartupDestination("queue", name, address, location=location))
            else:
                subscriptions = tuple(_subscription(context, routing, n) for n in names)
                found.append(StartupDestination("topic", address, None, subscriptions, location))
    finish(reader)
    return found


def _queue(context: LoadContext, element: Element, seen: dict[str, int]) -> str:
    reader = context.reader(element)
    name = reader.required("name").strip()
    for child in children(context, element, {"durable"}, _QUEUE_CHILDREN, _QUEUE_REFUSED):
        durable = text_value(context, child)
        if durable.strip().lower() == "false":
            reason = "FerryMQ keeps a queue's persistent messages in its store: durable=false"
            context.ignore(child, f"<queue name={name!r}> <durable>false</durable>", reason)
    finish(reader, _QUEUE_ATTRIBUTES)
    if name in seen:
        raise context.error(element, f"queue {name!r} is declared twice (line {seen[name]})")
    seen[name] = element.line
    return name


def _differs(context: LoadContext, element: Element, address: str, queue: str) -> None:
    if queue == address:
        return
    reason = (
        f"FerryMQ has no addresses: this is the queue {queue!r}, and a send to {address!r} "
        f"goes to a queue named {address!r}, not to it (broker connections' address-match "
        "still matches it by its address); the Artemis manual recommends equal names "
        '("Address Consideration")'
    )
    context.ignore(element, f'<address name="{address}"> <queue name="{queue}">', reason)


def _subscription(context: LoadContext, element: Element, name: str) -> tuple[str, str]:
    client_id, dot, subscription = name.partition(".")
    if not dot or not client_id or not subscription:
        message = (
            f"multicast queue {name!r}: FerryMQ makes it a durable subscription of the topic, "
            "named clientId.subscriptionName as Artemis names a JMS durable subscription; "
            'give it that form (e.g. name="app1.audit")'
        )
        raise context.error(element, message)
    return client_id, subscription


@dataclass(frozen=True)
class AddressSettings:
    """The policies `<address-settings>` gives (see the module docstring)."""

    policy: PolicyMap
    redelivery: RedeliveryPluginConfig | None


@dataclass(frozen=True)
class _Setting:
    match: str
    values: dict[str, str]
    element: Element


def read_address_settings(context: LoadContext, element: Element) -> AddressSettings:
    reader = context.reader(element)
    settings: list[_Setting] = []
    for child in children(context, element, {"address-setting"}):
        try:
            settings.append(_setting(context, child))
        except ConfigError as error:
            context.report(error)
    finish(reader)
    entries: list[PolicyEntry] = []
    redelivery: list[RedeliveryPolicyConfig] = []
    for setting in settings:
        values: dict[str, str] = {}
        for other in sorted(settings, key=lambda s: _specificity(s.match)):
            if other is not setting and _covers(other.match, setting.match):
                values.update(other.values)
        values.update(setting.values)
        try:
            queue_entry, policy = _entries(context, setting, values)
        except ConfigError as error:
            context.report(error)
            continue
        entries.extend((queue_entry, replace(queue_entry, queue=None, topic=queue_entry.queue)))
        redelivery.extend((policy, replace(policy, queue=None, topic=policy.queue)))
    plugin = None
    if settings:
        location = context.location(element)
        plugin = RedeliveryPluginConfig(entries=tuple(redelivery), location=location)
    return AddressSettings(PolicyMap(tuple(entries)), plugin)


def _setting(context: LoadContext, element: Element) -> _Setting:
    reader = context.reader(element)
    match = reader.required("match").strip()
    finish(reader)
    values: dict[str, str] = {}
    for child in children(context, element, _READ_SETTINGS, _IGNORED_SETTINGS):
        if child.name in values:
            raise context.error(child, f"<{child.name}> given twice in this address-setting")
        values[child.name] = text_value(context, child)
    _translate(context, element, match)  # an error now, with the element's line
    return _Setting(match, values, element)


def _entries(
    context: LoadContext, setting: _Setting, values: dict[str, str]
) -> tuple[PolicyEntry, RedeliveryPolicyConfig]:
    element = setting.element
    pattern = _translate(context, element, setting.match)
    attempts = _number(context, element, values, "max-delivery-attempts", 10)
    if attempts == 0 or attempts < -1:
        message = "<max-delivery-attempts> must be -1 (no limit) or at least 1"
        raise context.error(element, message)
    delay = _number(context, element, values, "redelivery-delay", 0)
    location = context.location(element)
    own = "dead-letter-address" in setting.values or "expiry-address" in setting.values
    strategy = _dead_letter(context, element, values, warn=own)
    entry = PolicyEntry(queue=pattern, dead_letter_strategy=strategy, location=location)
    redelivery = RedeliveryPolicyConfig(
        queue=pattern,
        maximum_redeliveries=-1 if attempts == -1 else attempts - 1,
        initial_redelivery_delay_ms=max(delay, 0),
        redelivery_delay_ms=max(delay, 0),
        location=location,
    )
    return entry, redelivery


def _dead_letter(
    context: LoadContext, element: Element, values: dict[str, str], *, warn: bool
) -> DeadLetterStrategy:
    """Warned about only where the addresses are written, not where they are inherited."""
    dead = values.get("dead-letter-address")
    expiry = values.get("expiry-address")
    if dead is None and expiry is None:  # Artemis drops both
        return DiscardingDeadLetterStrategy()
    if warn and dead is not None and expiry is not None and dead != expiry:
        reason = (
            f"FerryMQ has one destination for dead and expired messages: expired messages go "
            f"to the dead-letter address {dead!r}, not to {expiry!r}"
        )
        context.ignore(element, f"{_shown(element)} <expiry-address>", reason)
    if dead is None and warn:
        reason = (
            f"FerryMQ has one destination for dead and expired messages: messages that reach "
            f"max-delivery-attempts go to the expiry address {expiry!r} too, rather than "
            "being dropped"
        )
        context.ignore(element, _shown(element), reason)
    return SharedDeadLetterStrategy(
        dead_letter_queue=dead if dead is not None else expiry or "",
        process_expired=expiry is not None,
        process_non_persistent=True,  # Artemis dead-letters every message
    )


def _shown(element: Element) -> str:
    return f'<address-setting match="{element.attributes.get("match", "")}">'


def _number(
    context: LoadContext, element: Element, values: dict[str, str], name: str, default: int
) -> int:
    if name not in values:
        return default
    try:
        return parse_int(values[name])
    except ValueError as error:
        raise context.error(element, f"<{name}>: {error}") from None


def _translate(context: LoadContext, element: Element, match: str) -> str:
    """Artemis's `#` (any words) becomes FerryMQ's `>`, which may only end a pattern."""
    words = match.split(".")
    if "#" in words[:-1]:
        message = (
            f"match {match!r}: FerryMQ's wildcard for any words (>) may only end a pattern, "
            "so # is supported as the last word only"
        )
        raise context.error(element, message, "match")
    if any(not word for word in words):
        raise context.error(element, f"match {match!r} has an empty word", "match")
    return ".".join(">" if word == "#" else word for word in words)


def _specificity(match: str) -> tuple[int, int, int]:
    words = match.split(".")
    literals = sum(1 for w in words if w not in ("#", "*"))
    return literals, sum(1 for w in words if w == "*"), -words.count("#")


def _covers(general: str, specific: str) -> bool:
    """Whether every address `specific` matches is matched by `general` too."""
    g, s = general.split("."), specific.split(".")

    def walk(i: int, j: int) -> bool:
        if i == len(g):
            return j == len(s)
        if g[i] == "#":
            return walk(i + 1, j) or (j < len(s) and walk(i, j + 1))
        if j == len(s) or s[j] == "#":
            return False
        return (g[i] == "*" or g[i] == s[j]) and walk(i + 1, j + 1)

    return walk(0, 0)
