"""The JMS-to-JMS bridge slice (`<jmsBridgeConnectors>`) and the Spring beans it refers to.

Seed 001 chapter 10 configures bridges to another JMS provider inside activemq.xml, with the
remote connection factory or JNDI template as a Spring `<bean>`. FerryMQ parses all of it now; the
bridge itself comes in a later issue.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, TypeAlias

from ferrymq.config.errors import Location

__all__ = ["BeanValue", "JmsBridgeConfig", "JmsConnectorConfig", "SpringBean"]


@dataclass(frozen=True)
class SpringBean:
    """A Spring `<bean>` kept as data: its class and its `<property>` values."""

    bean_id: str | None
    class_name: str
    properties: Mapping[str, BeanValue] = field(
        default_factory=lambda: MappingProxyType({}), hash=False
    )
    """Property values: a string, a nested or referenced bean, `<props>` as a mapping, or a
    `<list>` as a tuple of strings."""
    location: Location | None = field(default=None, compare=False)


BeanValue: TypeAlias = str | SpringBean | Mapping[str, str] | tuple[str, ...]


@dataclass(frozen=True)
class JmsBridgeConfig:
    """One destination bridge: `<inboundQueueBridge>`, `<outboundTopicBridge>` and so on."""

    direction: Literal["inbound", "outbound"]
    """inbound: from the other provider into FerryMQ; outbound: the reverse."""
    kind: Literal["queue", "topic"]
    remote_name: str
    """`inboundQueueName` / `outboundQueueName` / `inboundTopicName` / `outboundTopicName`."""
    local_name: str
    """`localQueueName` / `localTopicName`. Default: the same as remote_name."""
    selector: str | None = None
    """`selector`: a JMS selector applied by the bridge's consumer."""
    do_handle_reply_to: bool = True
    """`doHandleReplyTo`: bridge JMSReplyTo destinations too. Default true."""
    consumer_name: str | None = None
    """`consumerName` (topics only): make the bridge's subscription durable under this name."""
    location: Location | None = field(default=None, compare=False)


@dataclass(frozen=True)
class JmsConnectorConfig:
    """`<jmsQueueConnector>` or `<jmsTopicConnector>`: a connection to another JMS provider."""

    kind: Literal["queue", "topic"]
    name: str | None = None
    """`name`, for logs and the admin API."""
    outbound_connection_factory: SpringBean | None = None
    """`outboundQueueConnectionFactory` / `outboundTopicConnectionFactory="#id"`, resolved."""
    outbound_connection_factory_name: str | None = None
    """`outbound...ConnectionFactoryName`: JNDI name looked up through jndi_outbound_template."""
    jndi_outbound_template: SpringBean | None = None
    """`jndiOutboundTemplate="#id"`, resolved (a `JndiTemplate` bean)."""
    local_connection_factory: SpringBean | None = None
    """`localQueueConnectionFactory` / `localTopicConnectionFactory="#id"`, resolved."""
    local_connection_factory_name: str | None = None
    """`localConnectionFactoryName`: JNDI name looked up through jndi_local_template."""
    jndi_local_template: SpringBean | None = None
    """`jndiLocalTemplate="#id"`, resolved."""
    local_client_id: str | None = None
    """`localClientId`."""
    outbound_client_id: str | None = None
    """`outboundClientId`."""
    local_username: str | None = None
    """`localUsername`."""
    local_password: str | None = field(default=None, repr=False)
    """`localPassword`."""
    outbound_username: str | None = None
    """`outboundUsername`."""
    outbound_password: str | None = field(default=None, repr=False)
    """`outboundPassword`."""
    inbound_message_convertor: str | None = None
    """`inboundMessageConvertor` (or `...Converter`): a bean reference or class name."""
    outbound_message_convertor: str | None = None
    """`outboundMessageConvertor` (or `...Converter`)."""
    prefer_jndi_destination_lookup: bool = False
    """`preferJndiDestinationLookup`: look destinations up in JNDI before creating them."""
    bridges: tuple[JmsBridgeConfig, ...] = ()
    """The inbound and outbound destination bridges, in file order."""
    location: Location | None = field(default=None, compare=False)
