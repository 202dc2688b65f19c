"""`<systemUsage>` and `<managementContext>` of activemq.xml."""

from __future__ import annotations

from ferrymq.config.model import ManagementContextConfig, SystemUsageConfig
from ferrymq.config.xml_document import Element, LoadContext

__all__ = ["read_management_context", "read_system_usage"]


def read_system_usage(context: LoadContext, element: Element | None) -> SystemUsageConfig:
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


def read_management_context(
    context: LoadContext, element: Element | None
) -> ManagementContextConfig | None:
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
