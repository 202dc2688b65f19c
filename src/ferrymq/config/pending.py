"""What a loaded configuration asks for that the broker does not do (yet), for the start-up log.

The loader parses every element of the seeds into the model, including features whose behaviour
comes in later issues, so that those issues only add behaviour. `PENDING` is the one list of such
features: an issue that builds one deletes its entry, and its line disappears from the log.
Together with `BrokerConfig.ignored`, nothing in a file is silently without effect.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import TypeGuard

from ferrymq.config.errors import Location
from ferrymq.config.model import BrokerConfig
from ferrymq.config.network import NetworkConnectorConfig
from ferrymq.config.persistence import (
    DatabaseLockerConfig,
    JdbcPersistenceConfig,
    KahaDBConfig,
    LeaseDatabaseLockerConfig,
)
from ferrymq.config.policy import RedeliveryPluginConfig

__all__ = ["PENDING", "pending_features"]

_OPENWIRE_SCHEMES = frozenset({"tcp", "nio", "auto", "auto+nio"})
"""Schemes on which ActiveMQ serves OpenWire, and FerryMQ STOMP."""

PENDING: Mapping[str, str] = MappingProxyType(
    {
        "network-no-effect": "has no effect in FerryMQ (docs/networks.md says why)",
        "network-durable": (
            "syncDurableSubs is not supported: a durable demand whose remote subscription was "
            "deleted while the bridge was down is kept until deleted by hand"
        ),
        "jms-bridge": "JMS-to-JMS bridges are not supported yet",
        "database-locker": (
            "<database-locker> runs as a lease-database-locker: a row lock held by a "
            "never-ending transaction cannot fence a deposed master's writes"
        ),
        "kahadb-database-locker": (
            "a database locker for a kahaDB store is not supported: use the shared-file locker"
        ),
        "redelivery-plugin": (
            "redelivery delays are not applied yet (maximumRedeliveries is honoured)"
        ),
        "scheduler-directory": (
            "schedulerDirectory is ignored: scheduled messages live in the message store, so "
            "a master/slave group shares them"
        ),
        "network-bridge-filter": "conditionalNetworkBridgeFilterFactory is not supported yet",
        "jmx": "JMX is not supported; FerryMQ's admin API serves the same information",
        "kahadb-journal": "ignored: SQLite in WAL mode keeps its own journal and indexes",
        "amq-adapter": "stored like <kahaDB>: SQLite in the same directory",
        "percent-of-heap": "FerryMQ has no JVM heap: read as a percent of physical RAM",
        "openwire-listener": (
            "FerryMQ serves STOMP on this listener until OpenWire exists; Java OpenWire clients "
            "(ActiveMQ's JMS client) cannot connect to it"
        ),
        "network-dispatch-sync": (
            "ignored: a FerryMQ bridge always dispatches asynchronously, in order, and removes a "
            "message only once the remote broker confirmed it"
        ),
        "network-failed-forward-advisory": (
            "ignored: FerryMQ publishes no advisory for a failed forward; the bridge retries it"
        ),
        "network-id-seed": (
            "ignored: FerryMQ always builds a bridge's consumer ids from the broker's id"
        ),
    }
)
"""Feature key -> what the broker says about it. Later issues remove keys as they build them."""


def pending_features(config: BrokerConfig) -> list[str]:
    """One line per element the broker will not honour as written, in file order:
    `activemq.xml:14: <networkConnector name="linkToCluster">: network connectors are ...`."""
    found = [
        (location, element, PENDING[key])
        for key, location, element in _uses(config)
        if key in PENDING
    ]
    found.extend((i.location, i.element, i.reason) for i in config.ignored)
    found.sort(key=lambda item: (item[0] is not None and item[0].line) or 0)
    return [
        f"{_where(location, config)}: {element}: {message}" for location, element, message in found
    ]


def _where(location: Location | None, config: BrokerConfig) -> str:
    if location is not None:
        return str(location)
    return config.source or "configuration"


def _uses(config: BrokerConfig) -> Iterator[tuple[str, Location | None, str]]:
    broker = f'<broker brokerName="{config.broker_name}">'
    for network in config.network_connectors:
        element = f'<networkConnector name="{network.name}">'
        if network.sync_durable_subs:
            yield "network-durable", network.location, element
        for attribute, value in (
            ("destinationFilter", network.destination_filter is not None),
            ("useVirtualDestSubs", network.use_virtual_dest_subs),
            ("useCompression", network.use_compression),
            ("remoteUserName", network.remote_user_name is not None),
            ("advisoryAckPercentage", network.advisory_ack_percentage != 75),
        ):
            if value:
                yield "network-no-effect", network.location, f"{element} {attribute}"
        yield from _network_ignored(network, element)
    for listener in config.transport_connectors:
        element = f'<transportConnector uri="{listener.uri}">'
        scheme = listener.scheme.lower()
        if scheme in _OPENWIRE_SCHEMES and (listener.name or "").lower() == "openwire":
            named = f'<transportConnector name="{listener.name}" uri="{listener.uri}">'
            yield "openwire-listener", listener.location, named
    for bridge in config.jms_bridge_connectors:
        tag = "jmsQueueConnector" if bridge.kind == "queue" else "jmsTopicConnector"
        yield "jms-bridge", bridge.location, f"<{tag}>"
    services = config.services
    if services.wait_for_slave or services.shutdown_on_slave_failure:
        yield "pure-master-slave", config.location, broker
    yield from _store_uses(config)
    if _delays_redelivery(config.redelivery_policies):
        yield "redelivery-plugin", config.redelivery_policies.location, "<redeliveryPlugin>"
    if config.scheduler_directory is not None:
        yield "scheduler-directory", config.location, broker
    for entry in config.destination_policy.entries:
        if entry.network_bridge_filter is not None:
            pattern = (
                f'queue="{entry.queue}"' if entry.queue is not None else f'topic="{entry.topic}"'
            )
            yield "network-bridge-filter", entry.location, f"<policyEntry {pattern}>"
    if config.management_context is not None:
        yield "jmx", config.management_context.location, "<managementContext>"
    if config.system_usage.memory_percent_of_ram is not None:
        location = config.system_usage.location
        yield "percent-of-heap", location, "<memoryUsage percentOfJvmHeap>"


def _network_ignored(
    network: NetworkConnectorConfig, element: str
) -> Iterator[tuple[str, Location | None, str]]:
    """Network connector settings that are parsed and, set away from the default, not done."""
    for key, attribute, value in (
        ("network-dispatch-sync", 'dispatchAsync="false"', not network.dispatch_async),
        (
            "network-failed-forward-advisory",
            'advisoryForFailedForward="true"',
            network.advisory_for_failed_forward,
        ),
        (
            "network-id-seed",
            'useBrokerNamesAsIdSeed="false"',
            not network.use_broker_names_as_id_seed,
        ),
    ):
        if value:
            yield key, network.location, f"{element} {attribute}"


def _store_uses(config: BrokerConfig) -> Iterator[tuple[str, Location | None, str]]:
    store = config.persistence
    if isinstance(store, KahaDBConfig):
        if store.adapter == "amqPersistenceAdapter":
            yield "amq-adapter", store.location, "<amqPersistenceAdapter>"
        ignored = store.ignored_options()
        if ignored:
            yield "kahadb-journal", store.location, f"<kahaDB {' '.join(ignored)}>"
    if isinstance(store, JdbcPersistenceConfig) and isinstance(store.locker, DatabaseLockerConfig):
        yield "database-locker", store.location, "<locker>"
    if isinstance(store, KahaDBConfig) and isinstance(
        store.locker, DatabaseLockerConfig | LeaseDatabaseLockerConfig
    ):
        yield "kahadb-database-locker", store.location, "<locker>"


def _delays_redelivery(plugin: RedeliveryPluginConfig | None) -> TypeGuard[RedeliveryPluginConfig]:
    """Whether a redelivery policy asks for a delay, which is what is not applied yet (a
    broker.xml's address settings without `redelivery-delay` ask for none)."""
    if plugin is None:
        return False
    entries = [*plugin.entries, *([plugin.default_entry] if plugin.default_entry else [])]
    return any(e.initial_redelivery_delay_ms > 0 or e.redelivery_delay_ms > 0 for e in entries)
