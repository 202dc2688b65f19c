"""Loading ActiveMQ Artemis's broker.xml into the same `BrokerConfig` as activemq.xml.

A document whose root is `<configuration>` (Artemis's `urn:activemq` namespace) is broker.xml,
wherever a configuration is loaded (`activemq_xml._read_config` hands it here). The subset read
is what the ActiveMQ Artemis documentation's "Broker Connections" chapter needs and an Artemis
user writes with it: `<core>`'s `name`, `persistence-enabled`, the journal directory (FerryMQ's
SQLite store lives there; paging, bindings and large messages live in the same store),
`<acceptors>` (`artemis_acceptors`), `<addresses>` and `<address-settings>`
(`artemis_addresses`), `security-enabled` and `<security-settings>` with the JAAS users files
next to broker.xml (`artemis_security`) and `<broker-connections>` (`xml_broker_connections`).
The rules are activemq.xml's: an unknown element or attribute is an error with file, line and
a did-you-mean; a valid Artemis setting FerryMQ does not act on is one warning saying why; one
that would make the broker silently do less than the file says (HA, clustering) is refused.
docs/artemis-config.md lists it all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from types import MappingProxyType
from typing import TypeVar

from ferrymq.config.artemis_acceptors import read_acceptors
from ferrymq.config.artemis_addresses import AddressSettings, read_address_settings, read_addresses
from ferrymq.config.artemis_reading import children, finish, text_value
from ferrymq.config.artemis_security import read_security
from ferrymq.config.broker_connections import AmqpConnectionConfig
from ferrymq.config.model import BrokerConfig, StartupDestination
from ferrymq.config.persistence import KahaDBConfig
from ferrymq.config.policy import PolicyMap
from ferrymq.config.units import parse_bool
from ferrymq.config.xml_broker_connections import (
    check_sender_receiver_loops,
    read_broker_connections,
)
from ferrymq.config.xml_document import Element, LoadContext

__all__ = ["ARTEMIS_FRAGMENTS", "DEFAULT_JOURNAL_DIRECTORY", "read_broker_xml"]

_T = TypeVar("_T")

DEFAULT_JOURNAL_DIRECTORY = Path("data/journal")
"""Artemis's default `journal-directory`; FerryMQ's SQLite store goes there."""
ARTEMIS_FRAGMENTS = frozenset(
    {
        "broker-connections", "broker-connection", "addresses", "address-settings",
        "acceptors", "connectors", "security-settings",
    }
)  # fmt: skip
"""Parts of `<core>` that are not a whole broker.xml when given as the document's root."""

_JOURNAL = (
    "FerryMQ's store is SQLite in the journal-directory, which keeps its own journal: ignored"
)
_STORE_PART = (
    "FerryMQ keeps {what} in its SQLite store in the journal-directory: this directory is unused"
)
_NO_JMX = "FerryMQ has no JMX; its admin API (HTTP, JSON, /metrics) serves the same: ignored"
_TUNING = "an Artemis broker setting with no meaning for FerryMQ: ignored"
_CORE_TUNING = (
    "disk-scan-period", "max-disk-usage", "min-disk-free", "global-max-size",
    "global-max-messages", "page-sync-timeout", "thread-pool-max-size",
    "scheduled-thread-pool-max-size", "graceful-shutdown-enabled", "graceful-shutdown-timeout",
    "critical-analyzer", "critical-analyzer-timeout", "critical-analyzer-check-period",
    "critical-analyzer-policy", "message-counter-enabled", "message-counter-sample-period",
    "message-counter-max-day-history", "message-expiry-scan-period",
    "message-expiry-thread-priority", "address-queue-scan-period", "id-cache-size",
    "persist-id-cache", "persist-delivery-count-before-delivery", "populate-validated-user",
    "reject-empty-validated-user", "connection-ttl-override", "connection-ttl-check-interval",
    "async-connection-execution-enabled", "transaction-timeout",
    "transaction-timeout-scan-period", "server-dump-interval", "memory-warning-threshold",
    "memory-measure-interval", "system-property-prefix", "internal-naming-prefix",
    "amqp-use-core-subscription-naming", "log-delegate-factory-class-name",
    "resolve-protocols", "network-check-list", "network-check-period",
    "network-check-timeout", "network-check-NIC", "network-check-URL-list",
    "network-check-ping-command", "network-check-ping6-command",
    "security-invalidation-interval", "authentication-cache-size",
    "authorization-cache-size", "resource-limit-settings", "grouping-handler",
    "max-redelivery-records", "mirror-ack-manager-queue-attempts",
    "mirror-ack-manager-page-attempts", "mirror-ack-manager-retry-delay",
    "mirror-page-transaction", "metrics", "metrics-plugin", "broker-plugins",
    "remoting-incoming-interceptors", "remoting-outgoing-interceptors",
)  # fmt: skip
_JOURNAL_TUNING = (
    "journal-type", "journal-datasync", "journal-min-files", "journal-pool-files",
    "journal-file-size", "journal-buffer-timeout", "journal-buffer-size", "journal-max-io",
    "journal-compact-min-files", "journal-compact-percentage", "journal-sync-transactional",
    "journal-sync-non-transactional", "journal-lock-acquisition-timeout",
    "journal-device-block-size", "journal-file-open-timeout", "create-journal-dir",
    "create-bindings-dir", "journal-retention-directory", "journal-max-atomic-delete-size",
)  # fmt: skip
_IGNORED: Mapping[str, str] = MappingProxyType(
    {
        **dict.fromkeys(_CORE_TUNING, _TUNING),
        **dict.fromkeys(_JOURNAL_TUNING, _JOURNAL),
        "jmx-management-enabled": _NO_JMX,
        "jmx-domain": _NO_JMX,
        "jmx-use-broker-name": _NO_JMX,
        "management-address": _NO_JMX,
        "management-notification-address": _NO_JMX,
        "connectors": (
            "Artemis connectors serve cluster connections and core bridges, which FerryMQ "
            "does not read: ignored"
        ),
    }
)
_REFUSED: Mapping[str, str] = MappingProxyType(
    {
        "ha-policy": "Artemis HA policies; use FerryMQ's master/slave (docs/master-slave.md)",
        "cluster-connections": "Artemis clusters; use activemq.xml's networkConnectors",
        "discovery-groups": "Artemis discovery groups; use activemq.xml's networkConnectors",
        "broadcast-groups": "Artemis broadcast groups; use activemq.xml's discoveryUri",
        "diverts": "Artemis diverts",
        "bridges": "Artemis core bridges; use <broker-connections> <sender>/<receiver>",
        "federations": "Artemis core federation; use <broker-connections> <federation>",
        "connection-routers": "Artemis connection routers",
        "store": "Artemis's database store; use activemq.xml's <jdbcPersistenceAdapter>",
        "wildcard-addresses": "custom wildcard characters; FerryMQ's are . * and #",
        "mask-password": "masked passwords; give them in clear or as ${placeholders}",
        "password-codec": "masked passwords; give them in clear or as ${placeholders}",
    }
)
_READ = {
    "name", "persistence-enabled", "journal-directory", "paging-directory",
    "bindings-directory", "large-messages-directory", "security-enabled", "acceptors",
    "addresses", "address-settings", "broker-connections", "security-settings",
}  # fmt: skip
_STORE_PARTS = {
    "paging-directory": "paged messages",
    "bindings-directory": "addresses and queues (bindings)",
    "large-messages-directory": "large messages",
}


def read_broker_xml(context: LoadContext, root: Element) -> BrokerConfig:
    """The broker of a `<configuration>` (its `<core>`, or its own children if it has none)."""
    reader = context.reader(root)
    cores = [c for c in root.children if c.name == "core"]
    if not cores:
        core = root
    else:
        children(context, root, {"core"}, {"jms": "Artemis 1.x's JMS configuration: ignored"})
        finish(reader)
        if len(cores) > 1:
            message = f"a second <core> (the first is on line {cores[0].line})"
            raise context.error(cores[1], message)
        core = cores[0]
        finish(context.reader(core))
    return _core(context, core)


def _core(context: LoadContext, core: Element) -> BrokerConfig:
    parts = _parts(context, core)
    values = {
        name: context.attempt(partial(text_value, context, element), "")
        for name, element in parts.items()
        if name not in _SECTIONS
    }
    enabled = _boolean(context, parts, values, "security-enabled", True)
    security = context.attempt(
        lambda: read_security(
            context, enabled, parts.get("security-enabled"), parts.get("security-settings")
        ),
        None,
    )
    persistent = _boolean(context, parts, values, "persistence-enabled", True)
    no_destinations: list[StartupDestination] = []
    destinations = tuple(context.read_part(parts, "addresses", read_addresses, no_destinations))
    no_settings = AddressSettings(PolicyMap(), None)
    settings = context.read_part(parts, "address-settings", read_address_settings, no_settings)
    no_connections: list[AmqpConnectionConfig] = []
    connections = tuple(
        context.read_part(parts, "broker-connections", read_broker_connections, no_connections)
    )
    address_of = _addresses(destinations)
    context.attempt(lambda: check_sender_receiver_loops(context, connections, address_of), None)
    return BrokerConfig(
        broker_name=values.get("name") or "localhost",
        persistent=persistent,
        persistence=_store(context, core, parts, values) if persistent else None,
        transport_connectors=tuple(context.read_part(parts, "acceptors", read_acceptors, [])),
        destination_policy=settings.policy,
        redelivery_policies=settings.redelivery,
        startup_destinations=destinations,
        broker_connections=connections,
        security=security,
        source=context.source,
        location=context.location(core),
    )


def _parts(context: LoadContext, core: Element) -> dict[str, Element]:
    parts: dict[str, Element] = {}
    for child in children(context, core, {*_READ, _MISSPELT}, _IGNORED, _REFUSED):
        if child.name == _MISSPELT:
            context.ignore(child, f"<{_MISSPELT}>", _MISSPELT_REASON)
            child = Element("broker-connections", child.attributes, child.line, child.children)
        if child.name in parts:
            message = f"<{child.name}> given twice (first on line {parts[child.name].line})"
            context.report(context.error(child, message))
            continue
        parts[child.name] = child
    return parts


def _store(
    context: LoadContext, core: Element, parts: Mapping[str, Element], values: Mapping[str, str]
) -> KahaDBConfig:
    """FerryMQ's SQLite store, in the journal directory; the other directories are unused."""
    for name, what in _STORE_PARTS.items():
        if name in parts:
            context.ignore(parts[name], f"<{name}>", _STORE_PART.format(what=what))
    journal = values.get("journal-directory")
    # Artemis's default is data/journal; `ferrymq broker --data-dir` moves "data" (activemq.data).
    data = context.properties.get("activemq.data")
    default = Path(data) / "journal" if data else DEFAULT_JOURNAL_DIRECTORY
    directory = Path(journal) if journal else default
    where = context.location(parts.get("journal-directory", core))
    return KahaDBConfig(directory=directory, location=where)


_MISSPELT = "broker-connection"
_MISSPELT_REASON = (
    "read as <broker-connections>, the element's name in Artemis's schema (the Artemis "
    'manual\'s "Store and Forward Queue" example spells it without the s)'
)
_SECTIONS = {
    "acceptors", "addresses", "address-settings", "broker-connections", "security-settings",
}  # fmt: skip


def _addresses(destinations: tuple[StartupDestination, ...]) -> Callable[[str], str]:
    """A queue's address: the one `<addresses>` declares it under, else its own name."""
    known = {d.name: d.matched_address for d in destinations if d.kind == "queue"}
    return lambda queue: known.get(queue, queue)


def _boolean(
    context: LoadContext,
    parts: Mapping[str, Element],
    values: Mapping[str, str],
    name: str,
    default: bool,
) -> bool:
    if not values.get(name):
        return default
    try:
        return parse_bool(values[name])
    except ValueError as error:
        context.report(context.error(parts[name], f"<{name}>: {error}"))
        return default
