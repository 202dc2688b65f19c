"""ActiveMQ 5.x's configuration vocabulary: what is valid ActiveMQ, and why FerryMQ ignores it.

The rule (docs/configuration.md): anything valid in ActiveMQ 5.x's schema loads. What FerryMQ
reads, it honours; a valid setting it does not read is accepted with one warning saying why it
is ignored; a name that is not ActiveMQ at all (a typo) is an error with a did-you-mean. The
names come from `activemq_names.json`, generated from ActiveMQ's own `activemq.xsd` by
`tools/activemq_schema_names.py`. Transport URI options are not in that schema; their names come
from the ActiveMQ documentation, "TCP Transport Reference" and "Configuring Wire Formats".

A few valid settings are refused instead (`REFUSED`): ignoring them would run a broker that does
less than its file promises in a way nobody would notice, such as one without the
authentication its file asks for.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Collection, Mapping
from functools import cache
from importlib import resources
from types import MappingProxyType

__all__ = [
    "REFUSED",
    "SPRING_NAMES",
    "TRANSPORT_OPTIONS",
    "UNSERVED_LISTENERS",
    "attribute_reason",
    "child_reason",
    "closest",
    "is_activemq_attribute",
    "is_activemq_child",
    "is_transport_option",
    "known_attributes",
    "known_children",
    "transport_option_names",
]

SPRING_NAMES = frozenset(
    {"bean", "property", "value", "ref", "idref", "list", "set", "map", "entry", "props", "prop",
     "null", "constructor-arg", "description", "key"}
)  # fmt: skip
"""Spring's bean-definition elements, which XBean admits inside every ActiveMQ element."""

_DUAL_AUTHENTICATION = (
    "FerryMQ has no dual (password or certificate) authentication yet, and will not run a broker "
    "without the security this file asks for: use <jaasAuthenticationPlugin> or "
    "<jaasCertificateAuthenticationPlugin> (docs/security.md)"
)
REFUSED: Mapping[str, str] = MappingProxyType(
    {"jaasDualAuthenticationPlugin": _DUAL_AUTHENTICATION}
)
"""Valid ActiveMQ elements that are refused, with the reason."""

_JMX = "JMX is not supported; FerryMQ's admin API (HTTP, JSON, /metrics) serves the same"
_KAHADB = "KahaDB tuning: FerryMQ's embedded store is SQLite, which keeps its own journal and index"
_CURSOR = "message cursors: FerryMQ pages every queue and subscription from its store by itself"
_SPRING = "Spring bean property: FerryMQ reads the settings it knows from attributes, not beans"
_SPRING_BEAN = "a Spring bean definition: FerryMQ is not a Spring container and does not create it"
_NOT_YET = "valid ActiveMQ 5.x, not implemented by FerryMQ: ignored"

_CHILD_REASONS: Mapping[str, str] = MappingProxyType(
    {
        "managementContext/*": _JMX,
        "kahaDB/*": _KAHADB,
        "policyEntry/pendingSubscriberPolicy": _CURSOR,
        "policyEntry/pendingQueuePolicy": _CURSOR,
        "policyEntry/pendingDurableSubscriberPolicy": _CURSOR,
        "policyEntry/dispatchPolicy": (
            "FerryMQ dispatches each topic message to every subscriber in one order already"
        ),
        "policyEntry/subscriptionRecoveryPolicy": "retroactive consumers are not supported yet",
        "policyEntry/messageEvictionStrategy": _NOT_YET,
        "broker/ioExceptionHandler": "FerryMQ stops the broker on a store I/O error",
        "broker/destinationInterceptors": (
            "virtual and composite destinations are not supported yet"
        ),
        "broker/destinations": "FerryMQ creates destinations on first use",
        "broker/proxyConnectors": "proxy connectors are not supported",
        "plugins/*": "this broker plugin is not implemented by FerryMQ",
        "*/property": _SPRING,
    }
)

_ATTRIBUTE_REASONS: Mapping[str, str] = MappingProxyType(
    {
        "managementContext@*": _JMX,
        "kahaDB@*": _KAHADB,
        "amqPersistenceAdapter@*": _KAHADB,
        "journalPersistenceAdapterFactory@*": (
            "journal tuning: FerryMQ's embedded store is SQLite, which keeps its own journal"
        ),
        "storeUsage@name": "a usage's name labels it in JMX; FerryMQ has no JMX",
        "memoryUsage@name": "a usage's name labels it in JMX; FerryMQ has no JMX",
        "tempUsage@name": "a usage's name labels it in JMX; FerryMQ has no JMX",
        "jdbcPersistenceAdapter@dataDirectory": (
            "the JDBC store keeps everything in its database; ActiveMQ's data directory for it "
            "is unused"
        ),
        "broker@enableStatistics": "FerryMQ always keeps destination statistics (admin API)",
        "broker@useJmx": _JMX,
        "broker@brokerObjectName": _JMX,
        "broker@splitSystemUsageForProducersConsumers": "FerryMQ has one memory limit",
    }
)

TRANSPORT_OPTIONS = frozenset(
    {
        # "TCP Transport Reference": the socket and the transport, on a listener's URI (most are
        # written transport.X there).
        "backlog", "closeAsync", "connectionTimeout", "daemon", "diffServ", "dynamicManagement",
        "ioBufferSize", "jmxPort", "keepAlive", "logWriterName", "maximumConnections",
        "minmumWireFormatVersion", "socketBufferSize", "soLinger", "soTimeout", "soWriteTimeout",
        "stackSize", "startLogging", "tcpNoDelay", "threadName", "trace", "trafficClass",
        "typeOfService", "useInactivityMonitor", "useKeepAlive", "useLocalHost",
        "useQueueForAccept", "maxReconnectAttempts", "transformer", "defaultHeartBeat",
        "hbGracePeriodMultiplier", "needClientAuth", "wantClientAuth", "verifyHostName",
        "subscriptionStrategy", "publishDollarTopics", "activemq.prefetch",
        "inactivityMonitor.initialDelayTime", "inactivityMonitor.readCheckTime",
        # "Configuring Wire Formats": OpenWire's negotiated options (wireFormat.X).
        "cacheEnabled", "cacheSize", "maxInactivityDuration", "maxInactivityDurationInitalDelay",
        "maxFrameSize", "maxDataLength", "prefixPacketSize", "sizePrefixDisabled",
        "stackTraceEnabled", "tcpNoDelayEnabled", "tightEncodingEnabled", "host",
    }
)  # fmt: skip
"""ActiveMQ's transport and wire-format option names (after `transport.` / `wireFormat.`)."""

_SCHEMES_NOT_SERVED = (
    ("the HTTPS tunnel transport is not served; this listener is not opened", ("https",)),
    (
        "MQTT is not served by FerryMQ; this listener is not opened",
        ("mqtt", "mqtt+nio", "mqtt+ssl", "mqtt+nio+ssl", "mqtt+ws", "mqtt+wss"),
    ),
    (
        "AMQP over WebSocket is not served yet (amqp:// and amqp+ssl:// are); this listener is "
        "not opened",
        ("amqp+ws", "amqp+wss"),
    ),
    ("the HTTP tunnel transport is not served; this listener is not opened", ("http",)),
    ("the UDP transport is not served; this listener is not opened", ("udp",)),
)
UNSERVED_LISTENERS: Mapping[str, str] = MappingProxyType(
    {scheme: reason for reason, schemes in _SCHEMES_NOT_SERVED for scheme in schemes}
)
"""ActiveMQ listener schemes FerryMQ accepts in a file but does not open, with the reason."""


_Names = Mapping[str, frozenset[str]]


@cache
def _names() -> tuple[_Names, _Names, _Names]:
    """(attributes by element, properties by element, content by property name)."""
    text = resources.files("ferrymq.config").joinpath("activemq_names.json").read_text("utf-8")
    elements = json.loads(text)["elements"]
    attributes = {name: frozenset(e["attributes"]) for name, e in elements.items()}
    properties = {name: frozenset(e["children"]) for name, e in elements.items()}
    content: dict[str, set[str]] = {}
    for element in elements.values():
        for prop, allowed in element["children"].items():
            content.setdefault(prop, set()).update(allowed)
    return attributes, properties, {k: frozenset(v) for k, v in content.items()}


def is_activemq_child(parent: str, child: str) -> bool:
    """Whether `<child>` may appear inside `<parent>` in some ActiveMQ 5.x file."""
    if child in SPRING_NAMES:
        return True
    _, properties, content = _names()
    if child in properties.get(parent, ()):
        return True
    allowed = content.get(parent, frozenset())
    return child in allowed or "*" in allowed


def is_activemq_attribute(element: str, attribute: str) -> bool:
    """Whether `attribute` is one of `<element>`'s attributes in ActiveMQ 5.x."""
    return attribute in _names()[0].get(element, ())


def known_children(parent: str) -> frozenset[str]:
    """ActiveMQ's names for what `<parent>` may hold (for did-you-mean)."""
    _, properties, content = _names()
    found = properties.get(parent, frozenset()) | content.get(parent, frozenset())
    return frozenset(name for name in found if name not in ("*", "#bean"))


def known_attributes(element: str) -> frozenset[str]:
    return _names()[0].get(element, frozenset())


def is_transport_option(option: str) -> bool:
    """`transport.closeAsync`, `wireFormat.cacheEnabled`, `soTimeout` ... (ActiveMQ's names)."""
    base = option.split(".", 1)[1] if option.startswith(("transport.", "wireFormat.")) else option
    return base in TRANSPORT_OPTIONS or option in TRANSPORT_OPTIONS


def transport_option_names() -> frozenset[str]:
    """Every spelling a listener URI may use (for did-you-mean)."""
    return TRANSPORT_OPTIONS | {f"transport.{o}" for o in TRANSPORT_OPTIONS}


def child_reason(parent: str, child: str) -> str:
    """Why a valid ActiveMQ element inside `<parent>` is ignored."""
    for key in (f"{parent}/{child}", f"{parent}/*", f"*/{child}"):
        if key in _CHILD_REASONS:
            return _CHILD_REASONS[key]
    if child in SPRING_NAMES:
        return _SPRING if child == "property" else _SPRING_BEAN
    return _NOT_YET


def attribute_reason(element: str, attribute: str) -> str:
    """Why a valid ActiveMQ attribute of `<element>` is ignored."""
    for key in (f"{element}@{attribute}", f"{element}@*"):
        if key in _ATTRIBUTE_REASONS:
            return _ATTRIBUTE_REASONS[key]
    return _NOT_YET


def closest(name: str, candidates: Collection[str]) -> str | None:
    """The candidate `name` is most likely a misspelling of, if any is close."""
    found = difflib.get_close_matches(name, sorted(candidates), n=1)
    if found:
        return found[0]
    lowered = {c.lower(): c for c in candidates}
    return lowered.get(name.lower())
