"""`<jmsBridgeConnectors>` (seed 001 section 10.3 and its configuration reference 10.3.10)."""

from __future__ import annotations

from typing import Literal

from ferrymq.config.bridge import JmsBridgeConfig, JmsConnectorConfig
from ferrymq.config.spring import bean_reference
from ferrymq.config.xml_document import Element, ElementReader, LoadContext

__all__ = ["read_jms_bridge_connectors"]

_Kind = Literal["queue", "topic"]
_Direction = Literal["inbound", "outbound"]


def read_jms_bridge_connectors(context: LoadContext, element: Element) -> list[JmsConnectorConfig]:
    reader = context.reader(element)
    connectors = [
        _connector(context, child, "queue" if child.name == "jmsQueueConnector" else "topic")
        for child in reader.children({"jmsQueueConnector", "jmsTopicConnector"})
    ]
    reader.finish()
    return connectors


def _convertor(reader: ElementReader, direction: str) -> str | None:
    # The seed spells it "Convertor" (queue connector) and "Converter" (topic connector).
    first = reader.optional(f"{direction}MessageConvertor")
    second = reader.optional(f"{direction}MessageConverter")
    if first is not None and second is not None:
        raise reader.error(
            "give only one of ...Convertor and ...Converter", f"{direction}MessageConverter"
        )
    return first if first is not None else second


def _connector(context: LoadContext, element: Element, kind: _Kind) -> JmsConnectorConfig:
    reader = context.reader(element)
    noun = "Queue" if kind == "queue" else "Topic"
    directions: tuple[_Direction, ...] = ("inbound", "outbound")
    lists = {f"{d}{noun}Bridges": d for d in directions}
    bridges: list[JmsBridgeConfig] = []
    for wrapper in reader.children(lists):
        bridges.extend(_bridges(context, wrapper, lists[wrapper.name], kind))
    reader.optional("id")
    for attribute in (f"outbound{noun}Connection", f"local{noun}Connection"):
        if reader.optional(attribute) is not None:
            raise reader.error("give a connection factory, not a connection", attribute)
    config = JmsConnectorConfig(
        kind=kind,
        name=reader.optional("name"),
        outbound_connection_factory=bean_reference(reader, f"outbound{noun}ConnectionFactory"),
        outbound_connection_factory_name=reader.optional(f"outbound{noun}ConnectionFactoryName"),
        jndi_outbound_template=bean_reference(reader, "jndiOutboundTemplate"),
        local_connection_factory=bean_reference(reader, f"local{noun}ConnectionFactory"),
        local_connection_factory_name=reader.optional("localConnectionFactoryName"),
        jndi_local_template=bean_reference(reader, "jndiLocalTemplate"),
        local_client_id=reader.optional("localClientId"),
        outbound_client_id=reader.optional("outboundClientId"),
        local_username=reader.optional("localUsername"),
        local_password=reader.optional("localPassword"),
        outbound_username=reader.optional("outboundUsername"),
        outbound_password=reader.optional("outboundPassword"),
        inbound_message_convertor=_convertor(reader, "inbound"),
        outbound_message_convertor=_convertor(reader, "outbound"),
        prefer_jndi_destination_lookup=reader.boolean("preferJndiDestinationLookup", False),
        bridges=tuple(bridges),
        location=reader.location(),
    )
    reader.finish()
    return config


def _bridges(
    context: LoadContext, element: Element, direction: _Direction, kind: _Kind
) -> list[JmsBridgeConfig]:
    noun = "Queue" if kind == "queue" else "Topic"
    item = f"{direction}{noun}Bridge"
    reader = context.reader(element)
    result = []
    for child in reader.children({item}):
        bridge = context.reader(child)
        remote = bridge.required(f"{direction}{noun}Name")
        bridge.optional("id")
        config = JmsBridgeConfig(
            direction=direction,
            kind=kind,
            remote_name=remote,
            local_name=bridge.string(f"local{noun}Name", remote),
            selector=bridge.optional("selector"),
            do_handle_reply_to=bridge.boolean("doHandleReplyTo", True),
            consumer_name=bridge.optional("consumerName") if kind == "topic" else None,
            location=bridge.location(),
        )
        bridge.children(())
        bridge.finish()
        result.append(config)
    reader.finish()
    return result
