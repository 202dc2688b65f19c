"""Spring `<bean>` definitions in activemq.xml: data sources, bridge factories, harmless extras.

ActiveMQ's file is a Spring context, so it may hold any bean. FerryMQ accepts three kinds:

* beans the broker refers to with `"#id"` (a JDBC `dataSource`, a JMS bridge's connection
  factory or JNDI template), read into `SpringBean` / `DataSourceConfig`;
* JDBC data sources (`DATA_SOURCE_CLASSES`) and ActiveMQ's `WebConsolePort` (its host and port
  become the admin API's), even when nothing refers to them;
* the harmless classes in `HARMLESS_BEAN_CLASSES`, ignored and reported with the reason.

Any other bean is accepted and reported as not created, with the reason (docs/configuration.md):
FerryMQ is not a Spring container, and saying so is what keeps the file honest.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ferrymq.config.bridge import BeanValue, SpringBean
from ferrymq.config.model import AdminConfig
from ferrymq.config.persistence import DataSourceConfig
from ferrymq.config.placeholders import PLACEHOLDER_CONFIGURERS
from ferrymq.config.xml_document import Element, ElementReader, LoadContext
from ferrymq.util.text import is_decimal

__all__ = [
    "DATA_SOURCE_CLASSES",
    "HARMLESS_BEAN_CLASSES",
    "WEB_CONSOLE_PORT_CLASS",
    "admin_from_beans",
    "bean_reference",
    "check_beans",
    "data_source",
    "register_bean",
]

HARMLESS_BEAN_CLASSES: Mapping[str, str] = MappingProxyType(
    {
        "io.fabric8.mq.fabric.ConfigurationProperties": "Fuse Fabric's property source (seed 001)",
        "org.apache.activemq.hooks.SpringContextHook": (
            "a Spring shutdown hook; FerryMQ stops cleanly on SIGTERM by itself"
        ),
        "io.fabric8.insight.log.log4j.Log4jLogQuery": "the log viewer of older ActiveMQ consoles",
    }
)
"""Bean classes that are accepted and ignored, with the reason reported at start."""

DATA_SOURCE_CLASSES = frozenset(
    {
        "org.apache.commons.dbcp.BasicDataSource",
        "org.apache.commons.dbcp2.BasicDataSource",
        "org.apache.tomcat.jdbc.pool.DataSource",
        "com.zaxxer.hikari.HikariDataSource",
        "org.postgresql.ds.PGSimpleDataSource",
        "org.postgresql.ds.PGPoolingDataSource",
    }
)
"""JDBC data source classes accepted even when no adapter refers to them."""

WEB_CONSOLE_PORT_CLASS = "org.apache.activemq.web.WebConsolePort"

_POOL_REASON = (
    "a connection pool setting: FerryMQ's database store opens its own connections (one writer,"
    " one for the lock), so pool settings have no effect"
)
_UNUSED_DATA_SOURCE = "no persistence adapter refers to this data source, so it is not used"
_NOT_CREATED = (
    "FerryMQ is not a Spring container and does not create this bean; it uses only data "
    'sources and beans the broker refers to with "#id"'
)

_BEAN_ATTRIBUTES = ("destroy-method", "init-method", "lazy-init", "scope", "depends-on", "name")


def register_bean(context: LoadContext, element: Element) -> None:
    """Remember a top-level `<bean>` by id so `"#id"` references can find it."""
    bean_id = element.attributes.get("id")
    if bean_id is None:
        return
    if bean_id in context.beans:
        first = context.beans[bean_id].line
        raise context.error(
            element, f"bean id {bean_id!r} is defined twice (first on line {first})"
        )
    context.beans[bean_id] = element


def read_bean(context: LoadContext, element: Element, depth: int = 0) -> SpringBean:
    """A `<bean>` with its `<property>` values, references resolved."""
    if depth > 16:
        raise context.error(element, "bean references nest too deeply (a reference cycle?)")
    reader = context.reader(element)
    bean_id = reader.optional("id")
    class_name = reader.required("class")
    for name in _BEAN_ATTRIBUTES:
        reader.optional(name)
    properties: dict[str, BeanValue] = {}
    for child in reader.children({"property"}):
        name, value = _property(context, child, depth)
        if name in properties:
            raise context.error(child, f"property {name!r} is set twice", "name")
        properties[name] = value
    reader.finish()
    return SpringBean(bean_id, class_name, MappingProxyType(properties), reader.location())


def _property(context: LoadContext, element: Element, depth: int) -> tuple[str, BeanValue]:
    reader = context.reader(element)
    name = reader.required("name")
    value = reader.optional("value")
    ref = reader.optional("ref")
    children = reader.children({"value", "bean", "ref", "props", "list"})
    reader.finish()
    given = (value is not None) + (ref is not None) + len(children)
    if given != 1:
        raise context.error(
            element, "a property needs exactly one of value, ref or a child element"
        )
    if value is not None:
        return name, value
    if ref is not None:
        return name, _referenced(context, element, "ref", ref, depth)
    child = children[0]
    return name, _property_child(context, child, depth)


def _property_child(context: LoadContext, child: Element, depth: int) -> BeanValue:
    reader = context.reader(child)
    if child.name == "bean":
        return read_bean(context, child, depth + 1)
    if child.name == "value":
        text = reader.text()
        reader.finish()
        return text
    if child.name == "ref":
        target = reader.required("bean")
        reader.finish()
        return _referenced(context, child, "bean", target, depth)
    if child.name == "list":
        values: list[str] = []
        for item in reader.children({"value"}):
            item_reader = context.reader(item)
            values.append(item_reader.text())
            item_reader.finish()
        reader.finish()
        return tuple(values)
    props: dict[str, str] = {}
    for prop in reader.children({"prop"}):
        prop_reader = context.reader(prop)
        props[prop_reader.required("key")] = prop_reader.text()
        prop_reader.finish()
    reader.finish()
    return MappingProxyType(props)


def _referenced(
    context: LoadContext, element: Element, attribute: str, bean_id: str, depth: int
) -> SpringBean:
    target = context.beans.get(bean_id)
    if target is None:
        raise context.error(element, f"no <bean id={bean_id!r}> in this file", attribute)
    context.referenced_beans.add(bean_id)
    return read_bean(context, target, depth + 1)


def bean_reference(reader: ElementReader, attribute: str) -> SpringBean | None:
    """Resolve an XBean reference attribute such as `dataSource="#oracle-ds"`."""
    value = reader.optional(attribute)
    if value is None:
        return None
    if not value.startswith("#") or len(value) < 2:
        raise reader.error(f'expected a bean reference such as "#{value or "id"}"', attribute)
    return _referenced(reader.context, reader.element, attribute, value[1:], 0)


def data_source(reader: ElementReader, attribute: str) -> DataSourceConfig | None:
    """`dataSource="#id"` as a `DataSourceConfig` (url, driver, credentials, other properties)."""
    bean = bean_reference(reader, attribute)
    if bean is None:
        return None
    values = {k: v for k, v in bean.properties.items() if isinstance(v, str)}
    nested = sorted(k for k, v in bean.properties.items() if not isinstance(v, str))
    if nested:
        message = f"data source bean {bean.bean_id!r}: property {nested[0]} must be a plain value"
        raise reader.error(message, attribute)
    url = values.pop("url", None) or values.pop("jdbcUrl", None)
    if url is None and "serverName" in values:  # PGSimpleDataSource style
        host = values.pop("serverName")
        port = values.pop("portNumber", "5432")
        url = f"jdbc:postgresql://{host}:{port}/{values.pop('databaseName', '')}"
    username = values.pop("username", None) or values.pop("user", None)
    driver = values.pop("driverClassName", None)
    password = values.pop("password", None)
    target = reader.context.beans.get(bean.bean_id or "")
    embedded = bean.class_name.startswith("org.apache.derby.")  # reported by the adapter
    for name in sorted(values):
        if target is not None and not embedded:
            reader.context.ignore(target, f'<property name="{name}">', _POOL_REASON)
    return DataSourceConfig(
        bean_id=bean.bean_id or "",
        class_name=bean.class_name,
        url=url,
        driver_class_name=driver,
        username=username,
        password=password,
        properties=MappingProxyType(values),
    )


def admin_from_beans(context: LoadContext, elements: list[Element]) -> AdminConfig | None:
    """ActiveMQ's `WebConsolePort` bean (jetty.xml) gives the console's host and port."""
    for element in elements:
        if element.attributes.get("class") == WEB_CONSOLE_PORT_CLASS:
            bean = read_bean(context, element)
            host = bean.properties.get("host", "127.0.0.1")
            port = bean.properties.get("port", "8161")
            if not isinstance(host, str) or not isinstance(port, str) or not is_decimal(port):
                raise context.error(element, "WebConsolePort needs a host and a numeric port")
            return AdminConfig(enabled=True, host=host, port=int(port))
    return None


def check_beans(context: LoadContext, elements: list[Element]) -> list[tuple[Element, str]]:
    """Validate the top-level beans; return the ignored ones with the reason to report."""
    ignored: list[tuple[Element, str]] = []
    for element in elements:
        class_name = element.attributes.get("class")
        if class_name is None:
            raise context.error(element, "a <bean> needs a class", "class")
        if class_name in PLACEHOLDER_CONFIGURERS:  # read by `placeholders`
            continue
        if class_name in HARMLESS_BEAN_CLASSES:
            ignored.append((element, HARMLESS_BEAN_CLASSES[class_name]))
            continue
        referenced = element.attributes.get("id") in context.referenced_beans
        if class_name in DATA_SOURCE_CLASSES or class_name == WEB_CONSOLE_PORT_CLASS:
            read_bean(context, element)  # validate it even when unused
            if class_name in DATA_SOURCE_CLASSES and not referenced:
                ignored.append((element, _UNUSED_DATA_SOURCE))
            continue
        if not referenced:
            ignored.append((element, _NOT_CREATED))
    return ignored
