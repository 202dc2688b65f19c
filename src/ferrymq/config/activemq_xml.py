"""Loading ActiveMQ's activemq.xml dialect into a `BrokerConfig`.

Accepted documents: a Spring `<beans>` root holding one `<broker>` (any namespace prefix) plus
`<bean>` definitions, or a bare `<broker>` root. Children may come in any order (ActiveMQ's schema
wanted them alphabetical). Spring `${name}` placeholders are resolved from the properties given;
`activemq.base`, `activemq.home` and `activemq.conf` default to the file's directory and
`activemq.data` to FerryMQ's default data directory, "data". An unknown element, attribute,
placeholder or bean class, or a value that does not parse, is a `ConfigError` naming file, line,
element and attribute.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from ferrymq.config.errors import ConfigError
from ferrymq.config.model import (
    BrokerConfig,
    IgnoredElement,
    ManagementContextConfig,
    MasterConnectorConfig,
    ServicesConfig,
    SystemUsageConfig,
)
from ferrymq.config.persistence import KahaDBConfig, PersistenceConfig
from ferrymq.config.policy import PolicyMap
from ferrymq.config.spring import (
    HARMLESS_BEAN_CLASSES,
    admin_from_beans,
    check_beans,
    register_bean,
)
from ferrymq.config.xml_bridge import read_jms_bridge_connectors
from ferrymq.config.xml_document import Element, ElementReader, LoadContext, read_document
from ferrymq.config.xml_network import read_network_connectors
from ferrymq.config.xml_persistence import read_persistence_adapter
from ferrymq.config.xml_policy import read_destination_policy, read_plugins
from ferrymq.config.xml_transport import read_transport_connectors

__all__ = ["load_config", "parse_config"]

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
}
_JETTY_IMPORT = re.compile(r"(.*/)?jetty\.xml")


def load_config(path: Path, properties: Mapping[str, str] | None = None) -> BrokerConfig:
    """Load an activemq.xml file. Relative paths inside stay relative to the working directory,
    as in ActiveMQ; `${activemq.conf}` and friends point at the file's directory."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ConfigError(str(path), None, "", None, f"cannot read: {error.strerror}") from None
    return _load(data, str(path), properties, path.parent.resolve())


def parse_config(
    text: str, source: str = "<string>", properties: Mapping[str, str] | None = None
) -> BrokerConfig:
    """Parse activemq.xml text; `source` names it in errors."""
    return _load(text, source, properties, Path.cwd())


def _load(
    data: bytes | str, source: str, properties: Mapping[str, str] | None, base: Path
) -> BrokerConfig:
    values = {
        "activemq.base": str(base),
        "activemq.home": str(base),
        "activemq.conf": str(base),
        "activemq.data": "data",
    }
    values.update(properties or {})
    context = LoadContext(source, values)
    root = read_document(data, source)
    ignored: list[IgnoredElement] = []
    beans: list[Element] = []
    if root.name == "broker":
        broker = root
    elif root.name == "beans":
        broker, beans = _beans(context, root, ignored)
    else:
        raise context.error(root, "expected <beans> or <broker> as the document root")
    config = _broker(context, broker, ignored)
    for element, reason in check_beans(context, beans):
        ignored.append(IgnoredElement(context.location(element), element.describe("class"), reason))
    admin = admin_from_beans(context, beans) or config.admin
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
            register_bean(context, child)
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
    resource = reader.required("resource")
    reader.finish()
    if not _JETTY_IMPORT.fullmatch(resource):
        message = "imports are not followed; put this configuration in the broker's file"
        raise reader.error(message, "resource")
    reason = "ActiveMQ's web console is not loaded; FerryMQ's admin API replaces it"
    return IgnoredElement(reader.location(), element.describe("resource"), reason)


def _broker(context: LoadContext, element: Element, ignored: list[IgnoredElement]) -> BrokerConfig:
    reader = context.reader(element)
    parts = reader.single_children(_BROKER_CHILDREN)
    persistent = reader.boolean("persistent", True)
    broker_name = reader.string("brokerName", "localhost").strip()
    if not broker_name:
        raise reader.error("the broker name must not be empty", "brokerName")
    persistence: PersistenceConfig | None = KahaDBConfig() if persistent else None
    if "persistenceAdapter" in parts:
        adapter = read_persistence_adapter(context, parts["persistenceAdapter"])
        if persistent:
            persistence = adapter
        else:
            reason = 'persistent="false": messages are kept in memory and this store is unused'
            location = context.location(parts["persistenceAdapter"])
            ignored.append(IgnoredElement(location, "<persistenceAdapter>", reason))
    if "shutdownHooks" in parts:
        ignored.extend(_shutdown_hooks(context, parts["shutdownHooks"]))
    redelivery, message_trace = (
        read_plugins(context, parts["plugins"]) if "plugins" in parts else (None, None)
    )
    config = BrokerConfig(
        broker_name=broker_name,
        broker_id=reader.optional("brokerId"),
        persistent=persistent,
        data_directory=reader.path("dataDirectory") or Path("data"),
        use_jmx=reader.boolean("useJmx", True),
        advisory_support=reader.boolean("advisorySupport", True),
        scheduler_support=reader.boolean("schedulerSupport", False),
        scheduler_directory=reader.path("schedulerDirectory"),
        start=reader.boolean("start", True),
        use_shutdown_hook=reader.boolean("useShutdownHook", True),
        delete_all_messages_on_startup=reader.boolean("deleteAllMessagesOnStartup", False),
        network_connector_start_async=reader.boolean("networkConnectorStartAsync", False),
        use_virtual_dest_subs=reader.boolean("useVirtualDestSubs", False),
        bean_id=reader.optional("id"),
        transport_connectors=tuple(
            read_transport_connectors(context, parts["transportConnectors"])
            if "transportConnectors" in parts
            else ()
        ),
        network_connectors=tuple(
            read_network_connectors(context, parts["networkConnectors"])
            if "networkConnectors" in parts
            else ()
        ),
        persistence=persistence,
        system_usage=_system_usage(context, parts.get("systemUsage")),
        destination_policy=(
            read_destination_policy(context, parts["destinationPolicy"])
            if "destinationPolicy" in parts
            else PolicyMap()
        ),
        redelivery_policies=redelivery,
        message_trace=message_trace,
        services=_services(context, reader, parts.get("services")),
        jms_bridge_connectors=tuple(
            read_jms_bridge_connectors(context, parts["jmsBridgeConnectors"])
            if "jmsBridgeConnectors" in parts
            else ()
        ),
        management_context=_management(context, parts.get("managementContext")),
        source=context.source,
        location=reader.location(),
    )
    reader.finish()
    return config


def _shutdown_hooks(context: LoadContext, element: Element) -> list[IgnoredElement]:
    reader = context.reader(element)
    result = []
    for bean in reader.children({"bean"}):
        class_name = bean.attributes.get("class", "")
        if class_name not in HARMLESS_BEAN_CLASSES:
            raise context.error(bean, f"unknown shutdown hook class {class_name!r}", "class")
        reason = HARMLESS_BEAN_CLASSES[class_name]
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


def _system_usage(context: LoadContext, element: Element | None) -> SystemUsageConfig:
    if element is None:
        return SystemUsageConfig()
    outer = context.reader(element)
    inner_elements = outer.children({"systemUsage"})
    outer.finish()
    if len(inner_elements) != 1:
        raise context.error(element, "expected one <systemUsage> inside <systemUsage>")
    reader = context.reader(inner_elements[0])
    parts = reader.single_children({"memoryUsage", "storeUsage", "tempUsage"})
    defaults = SystemUsageConfig()
    limits: dict[str, int | None] = {}
    percent: int | None = None
    for name in ("memoryUsage", "storeUsage", "tempUsage"):
        if name not in parts:
            continue
        wrapper = context.reader(parts[name])
        usage_elements = wrapper.children({name})
        wrapper.finish()
        if len(usage_elements) != 1:
            raise context.error(parts[name], f"expected one <{name}> inside <{name}>")
        usage = context.reader(usage_elements[0])
        limits[name] = usage.size("limit")
        if name == "memoryUsage":
            percent = usage.optional_integer("percentOfJvmHeap", minimum=1)
            if percent is not None and percent > 100:
                raise usage.error("a percentage must be at most 100", "percentOfJvmHeap")
        usage.children(())
        usage.finish()
    config = SystemUsageConfig(
        memory_limit=_or(limits.get("memoryUsage"), defaults.memory_limit),
        memory_percent_of_ram=percent,
        store_limit=_or(limits.get("storeUsage"), defaults.store_limit),
        temp_limit=_or(limits.get("tempUsage"), defaults.temp_limit),
        send_fail_if_no_space=reader.boolean("sendFailIfNoSpace", False),
        send_fail_if_no_space_after_timeout_ms=reader.optional_integer(
            "sendFailIfNoSpaceAfterTimeout", minimum=0
        ),
        location=context.location(element),
    )
    reader.finish()
    return config


def _or(value: int | None, default: int) -> int:
    return default if value is None else value


def _management(context: LoadContext, element: Element | None) -> ManagementContextConfig | None:
    if element is None:
        return None
    outer = context.reader(element)
    inner = outer.children({"managementContext"})
    outer.finish()
    if len(inner) != 1:
        raise context.error(element, "expected one <managementContext> inside <managementContext>")
    reader = context.reader(inner[0])
    config = ManagementContextConfig(
        create_connector=reader.boolean("createConnector", True),
        connector_port=reader.integer("connectorPort", 1099, minimum=0),
        location=reader.location(),
    )
    reader.children(())
    reader.finish()
    return config
