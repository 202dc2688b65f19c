"""Loading ActiveMQ's activemq.xml dialect into a `BrokerConfig`.

Accepted documents: a Spring `<beans>` root holding one `<broker>` (any namespace prefix) plus
`<bean>` definitions, or a bare `<broker>` root; a `<configuration>` root is ActiveMQ Artemis's
broker.xml (`artemis_xml`). Children may come in any order (ActiveMQ's schema
wanted them alphabetical). Spring `${name}` placeholders are resolved from the files that
placeholder configurer beans list (`placeholders`) and from the properties given;
`activemq.base`, `activemq.home` and `activemq.conf` default to the file's directory and
`activemq.data` to FerryMQ's default data directory, "data". An unknown element, attribute,
placeholder, or a value that does not parse, is a `ConfigError` naming file, line, element and
attribute. A valid ActiveMQ 5.x setting that FerryMQ does not act on is accepted and reported in
`BrokerConfig.ignored` with the reason (`schema`, docs/configuration.md). `check_config` reads a
whole file and lists every problem instead of stopping at the first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TypeVar

from ferrymq.config.artemis_xml import ARTEMIS_FRAGMENTS, read_broker_xml
from ferrymq.config.broker_connections import AmqpConnectionConfig
from ferrymq.config.errors import ConfigError
from ferrymq.config.model import (
    BrokerConfig,
    IgnoredElement,
    MasterConnectorConfig,
    MessageTraceConfig,
    ServicesConfig,
    SystemUsageConfig,
)
from ferrymq.config.pending import pending_features
from ferrymq.config.persistence import KahaDBConfig, PersistenceConfig
from ferrymq.config.placeholders import read_placeholder_files
from ferrymq.config.policy import PolicyMap, RedeliveryPluginConfig
from ferrymq.config.security import SecurityConfig
from ferrymq.config.spring import (
    HARMLESS_BEAN_CLASSES,
    admin_from_beans,
    check_beans,
    register_bean,
)
from ferrymq.config.xml_bridge import read_jms_bridge_connectors
from ferrymq.config.xml_broker_connections import (
    check_advisories,
    check_sender_receiver_loops,
    read_broker_connections,
)
from ferrymq.config.xml_document import Element, ElementReader, LoadContext, read_document
from ferrymq.config.xml_network import read_network_connectors
from ferrymq.config.xml_persistence import read_persistence_adapter, read_persistence_factory
from ferrymq.config.xml_policy import read_destination_policy, read_plugins
from ferrymq.config.xml_tls import read_ssl_context
from ferrymq.config.xml_transport import read_transport_connectors
from ferrymq.config.xml_usage import read_management_context, read_system_usage

__all__ = ["CheckResult", "check_config", "load_config", "parse_config"]

_T = TypeVar("_T")

_BROKER_CHILDREN = {
    "transportConnectors",
    "networkConnectors",
    "persistenceAdapter",
    "systemUsage",
    "destinationPolicy",
    "plugins",
    "services",
    "jmsBridgeConnectors",
    "managementContext",
    "shutdownHooks",
    "persistenceFactory",
    "sslContext",
    "broker-connections",  # FerryMQ: Artemis's AMQP broker connections (docs/artemis-config.md)
}
_JETTY_IMPORT = re.compile(r"(.*/)?jetty[\w-]*\.xml")
_CAMEL_IMPORT = re.compile(r"(.*/)?camel[\w-]*\.xml")


@dataclass(frozen=True)
class CheckResult:
    """Everything `check_config` found: errors (the broker would not start) and the settings
    it would ignore, each line starting with `file:line`. `config` is None when errors exist."""

    errors: tuple[ConfigError, ...]
    warnings: tuple[str, ...]
    """What the broker would report at start as ignored or not yet done."""
    config: BrokerConfig | None


def load_config(path: Path, properties: Mapping[str, str] | None = None) -> BrokerConfig:
    """Load an activemq.xml file. Relative paths inside stay relative to the working directory,
    as in ActiveMQ; `${activemq.conf}` and friends point at the file's directory."""
    return _load(_read_file(path), str(path), properties, path.parent.resolve())


def check_config(path: Path, properties: Mapping[str, str] | None = None) -> CheckResult:
    """Read the whole file, gathering every error rather than stopping at the first."""
    context = _context(str(path), properties, path.parent.resolve(), collect=True)
    try:
        config = _read_config(context, _read_file(path))
    except ConfigError as error:  # one that leaves nothing further to read
        context.errors.append(error)
        config = None
    errors = sorted(context.errors, key=lambda e: e.line or 0)
    if config is not None:  # read to the end: its errors are gathered, its warnings known
        warnings = pending_features(config)
    else:
        ignored = sorted(context.ignored, key=lambda i: i.location.line or 0)
        warnings = [str(i) for i in ignored]
    return CheckResult(tuple(errors), tuple(warnings), None if errors else config)


def parse_config(
    text: str, source: str = "<string>", properties: Mapping[str, str] | None = None
) -> BrokerConfig:
    """Parse activemq.xml text; `source` names it in errors."""
    return _load(text, source, properties, Path.cwd())


def _read_file(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise ConfigError(str(path), None, "", None, f"cannot read: {error.strerror}") from None


def _context(
    source: str, properties: Mapping[str, str] | None, base: Path, *, collect: bool = False
) -> LoadContext:
    values = {
        "activemq.base": str(base),
        "activemq.home": str(base),
        "activemq.conf": str(base),
        "activemq.data": "data",
    }
    values.update(properties or {})
    return LoadContext(source, values, collect=collect)


def _load(
    data: bytes | str, source: str, properties: Mapping[str, str] | None, base: Path
) -> BrokerConfig:
    return _read_config(_context(source, properties, base), data)


def _read_config(context: LoadContext, data: bytes | str) -> BrokerConfig:
    source = context.source
    root = read_document(data, source)
    ignored: list[IgnoredElement] = []
    beans: list[Element] = []
    if root.name == "broker":
        broker = root
    elif root.name == "beans":
        broker, beans = _beans(context, root, ignored)
        context.attempt(lambda: read_placeholder_files(context, beans, ignored), None)
    elif root.name in ("configuration", "core"):  # ActiveMQ Artemis's broker.xml
        config = read_broker_xml(context, root)
        ordered = tuple(sorted(context.ignored, key=lambda i: i.location.line or 0))
        return replace(config, ignored=ordered)
    elif root.name in ARTEMIS_FRAGMENTS:
        message = (
            f"<{root.name}> is a part of ActiveMQ Artemis's broker.xml: put it inside "
            "<configuration><core>...</core></configuration> (docs/artemis-config.md)"
        )
        raise context.error(root, message)
    else:
        raise context.error(root, "expected <beans> or <broker> as the document root")
    config = _broker(context, broker, ignored)
    no_beans: list[tuple[Element, str]] = []
    checked = context.attempt(lambda: check_beans(context, beans), no_beans)
    for element, reason in checked:
        ignored.append(IgnoredElement(context.location(element), element.describe("class"), reason))
    admin = context.attempt(lambda: admin_from_beans(context, beans), None) or config.admin
    ignored.extend(context.ignored)
    ordered = tuple(sorted(ignored, key=lambda i: i.location.line or 0))
    return replace(config, admin=admin, ignored=ordered)


def _beans(
    context: LoadContext, root: Element, ignored: list[IgnoredElement]
) -> tuple[Element, list[Element]]:
    reader = context.reader(root)
    for attribute in ("default-lazy-init", "default-autowire"):
        reader.optional(attribute)
    brokers: list[Element] = []
    beans: list[Element] = []
    for child in reader.children({"broker", "bean", "import", "camelContext"}):
        if child.name == "broker":
            brokers.append(child)
        elif child.name == "bean":
            context.attempt(partial(register_bean, context, child), None)
            beans.append(child)
        elif child.name == "import":
            ignored.append(_import(context, child))
        else:
            message = (
                "Camel routes do not belong in the broker's file (seed 001 chapter 10 deploys "
                "them separately); FerryMQ does not run Camel"
            )
            raise context.error(child, message)
    reader.finish()
    if not brokers:
        raise context.error(root, "no <broker> element in this file")
    if len(brokers) > 1:
        raise context.error(
            brokers[1], f"a second <broker> (the first is on line {brokers[0].line})"
        )
    return brokers[0], beans


def _import(context: LoadContext, element: Element) -> IgnoredElement:
    reader = context.reader(element)
    resource = reader.string("resource", "")
    reader.finish()
    if _JETTY_IMPORT.fullmatch(resource):
        reason = "ActiveMQ's web console is not loaded; FerryMQ's admin API replaces it"
    elif _CAMEL_IMPORT.fullmatch(resource):
        reason = "FerryMQ does not run Camel routes; the imported file is not read"
    else:
        reason = (
            "imported files are not read: FerryMQ reads only this file, so put broker settings "
            "in it"
        )
    return IgnoredElement(reader.location(), element.describe("resource"), reason)


def _broker(context: LoadContext, element: Element, ignored: list[IgnoredElement]) -> BrokerConfig:
    reader = context.reader(element)
    parts = reader.single_children(_BROKER_CHILDREN)
    persistent = reader.boolean("persistent", True)
    broker_name = reader.string("brokerName", "localhost").strip()
    if not broker_name:
        context.report(reader.error("the broker name must not be empty", "brokerName"))
        broker_name = "localhost"
    if "shutdownHooks" in parts:
        hooks = parts["shutdownHooks"]
        ignored.extend(context.attempt(lambda: _shutdown_hooks(context, hooks), []))
    no_plugins: tuple[
        RedeliveryPluginConfig | None, MessageTraceConfig | None, SecurityConfig | None
    ] = (None, None, None)
    redelivery, message_trace, security = context.read_part(
        parts, "plugins", read_plugins, no_plugins
    )
    start = reader.boolean("start", True)
    if not start:
        reason = (
            'start="false" leaves starting to the application that embeds ActiveMQ; '
            "`ferrymq broker` starts the broker it is given"
        )
        ignored.append(IgnoredElement(reader.location(), '<broker start="false">', reason))
    config = BrokerConfig(
        broker_name=broker_name,
        broker_id=reader.optional("brokerId"),
        persistent=persistent,
        data_directory=reader.path("dataDirectory") or Path("data"),
        use_jmx=reader.boolean("useJmx", True),
        advisory_support=reader.boolean("advisorySupport", True),
        scheduler_support=reader.boolean("schedulerSupport", False),
        scheduler_directory=reader.path("schedulerDirectory"),
        start=start,
        use_shutdown_hook=reader.boolean("useShutdownHook", True),
        delete_all_messages_on_startup=reader.boolean("deleteAllMessagesOnStartup", False),
        network_connector_start_async=reader.boolean("networkConnectorStartAsync", False),
        use_virtual_dest_subs=reader.boolean("useVirtualDestSubs", False),
        bean_id=reader.optional("id"),
        transport_connectors=tuple(
            context.read_part(parts, "transportConnectors", read_transport_connectors, [])
        ),
        network_connectors=tuple(
            context.read_part(parts, "networkConnectors", read_network_connectors, [])
        ),
        persistence=_persistence(context, parts, persistent, ignored),
        system_usage=context.attempt(
            lambda: read_system_usage(context, parts.get("systemUsage")),
            SystemUsageConfig(),
        ),
        destination_policy=context.read_part(
            parts, "destinationPolicy", read_destination_policy, PolicyMap()
        ),
        redelivery_policies=redelivery,
        message_trace=message_trace,
        security=security,
        services=context.attempt(
            lambda: _services(context, reader, parts.get("services")),
            ServicesConfig(),
        ),
        jms_bridge_connectors=tuple(
            context.read_part(parts, "jmsBridgeConnectors", read_jms_bridge_connectors, [])
        ),
        broker_connections=_broker_connections(
            context, parts, reader.boolean("advisorySupport", True)
        ),
        management_context=context.attempt(
            lambda: read_management_context(context, parts.get("managementContext")), None
        ),
        ssl_context=context.read_part(parts, "sslContext", read_ssl_context, None),
        source=context.source,
        location=reader.location(),
    )
    reader.finish()
    return config


def _broker_connections(
    context: LoadContext, parts: Mapping[str, Element], advisory_support: bool
) -> tuple[AmqpConnectionConfig, ...]:
    """FerryMQ's extension: Artemis's `<broker-connections>` inside `<broker>`; a queue's
    address is its name (activemq.xml has no addresses). Its senders, receivers, peers and
    federations need the broker's advisories (broker.xml has no way to turn them off)."""
    none: list[AmqpConnectionConfig] = []
    found = tuple(context.read_part(parts, "broker-connections", read_broker_connections, none))
    context.attempt(lambda: check_sender_receiver_loops(context, found, str), None)
    context.attempt(lambda: check_advisories(context, found, advisory_support), None)
    return found


def _persistence(
    context: LoadContext,
    parts: Mapping[str, Element],
    persistent: bool,
    ignored: list[IgnoredElement],
) -> PersistenceConfig | None:
    default: PersistenceConfig | None = KahaDBConfig() if persistent else None
    if "persistenceAdapter" in parts:
        adapter = context.read_part(parts, "persistenceAdapter", read_persistence_adapter, default)
        chosen, element = adapter, parts["persistenceAdapter"]
        if "persistenceFactory" in parts:
            reason = "the <persistenceAdapter> of this broker is used instead"
            location = context.location(parts["persistenceFactory"])
            ignored.append(IgnoredElement(location, "<persistenceFactory>", reason))
    elif "persistenceFactory" in parts:
        chosen = context.read_part(parts, "persistenceFactory", read_persistence_factory, default)
        element = parts["persistenceFactory"]
    else:
        return default
    if persistent:
        return chosen
    reason = 'persistent="false": messages are kept in memory and this store is unused'
    ignored.append(IgnoredElement(context.location(element), f"<{element.name}>", reason))
    return None


def _shutdown_hooks(context: LoadContext, element: Element) -> list[IgnoredElement]:
    reader = context.reader(element)
    result = []
    for bean in reader.children({"bean"}):
        class_name = bean.attributes.get("class", "")
        reason = HARMLESS_BEAN_CLASSES.get(
            class_name, "a shutdown hook bean: FerryMQ runs no Spring beans when it stops"
        )
        result.append(IgnoredElement(context.location(bean), bean.describe("class"), reason))
    reader.finish()
    return result


def _services(
    context: LoadContext, broker: ElementReader, element: Element | None
) -> ServicesConfig:
    """Pure master/slave (seed 002 chapter 4): `<services><masterConnector>` on the slave, or the
    broker's `masterConnectorURI`; waitForSlave and the shutdown flags are broker attributes."""
    attribute_uri = broker.uri("masterConnectorURI", "the master's tcp://host:port")
    master = None
    if attribute_uri is not None:
        master = MasterConnectorConfig(attribute_uri[0], location=broker.location())
    if element is not None:
        reader = context.reader(element)
        connectors = reader.children({"masterConnector"})
        reader.finish()
        if len(connectors) > 1 or (connectors and master is not None):
            raise context.error(element, "a slave has one master: give one masterConnector")
        if connectors:
            connector = context.reader(connectors[0])
            remote = connector.uri("remoteURI", "the master's tcp://host:port")
            if remote is None:
                raise connector.error("required attribute is missing", "remoteURI")
            master = MasterConnectorConfig(
                remote_uri=remote[0],
                user_name=connector.optional("userName"),
                password=connector.optional("password"),
                location=connector.location(),
            )
            connector.children(())
            connector.finish()
    return ServicesConfig(
        master_connector=master,
        wait_for_slave=broker.boolean("waitForSlave", False),
        shutdown_on_slave_failure=broker.boolean("shutdownOnSlaveFailure", False),
        shutdown_on_master_failure=broker.boolean("shutdownOnMasterFailure", False),
    )
