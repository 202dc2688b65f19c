"""The table of seed examples: what each one is, and the model values it must load into.

Keys are (seed, line where the example starts). `expect` maps a model path to a value, e.g.
`"network_connectors[0].network_ttl": 3`. `TYPOS` and `SUPPLIED` are the only repairs beyond
`seed_xml.normalise`; test_seed_examples.py explains and checks each.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ferrymq.config import DestinationRef, SharedFileLockerConfig
from ferrymq.util.uri import parse_uri

__all__ = ["ARTEMIS", "CASES", "NOT_BROKER", "PROPERTIES", "SUPPLIED", "TYPOS", "Case"]

PROPERTIES = {"broker-name": "fabricBroker", "data": "/var/fabric/data"}
"""Values for the fabric examples' `${broker-name}` and `${data}` (seed 001 section 10.3)."""

NOT_BROKER = "not a broker configuration (Camel, seed 001 chapter 10)"
ARTEMIS = "ActiveMQ Artemis broker.xml (seed 004): a fragment of <configuration><core>"


@dataclass(frozen=True)
class Case:
    seed: str
    line: int
    label: str
    expect: dict[str, Any] = field(default_factory=dict)
    rejected: str | None = None


def _q(name: str) -> DestinationRef:
    return DestinationRef("queue", name)


def _t(name: str) -> DestinationRef:
    return DestinationRef("topic", name)


NC0 = "network_connectors[0]"
TC0 = "transport_connectors[0]"
JB0 = "jms_bridge_connectors[0]"
_LINK_B = {f"{NC0}.name": "linkToBrokerB", f"{NC0}.network_ttl": 3}
_LINK_B_URI = {**_LINK_B, f"{NC0}.uri": "static:(tcp://localhost:61002)"}
_DISCOVERY = {
    f"{TC0}.name": "openwire",
    f"{TC0}.port": 61716,
    f"{TC0}.discovery_uri": parse_uri("multicast://default"),
}
_NE_GROUP = {**_DISCOVERY, f"{TC0}.discovery_uri": parse_uri("multicast://NEGroup")}
_SHARED_DIR = Path("/sharedFileSystem/sharedBrokerData")
_KAHA_5000 = {
    "persistence.directory": _SHARED_DIR,
    "persistence.lock_keep_alive_period_ms": 5000,
    "store_directory": _SHARED_DIR,
}
_KAHA_LOCKER = {**_KAHA_5000, "persistence.locker": SharedFileLockerConfig(10000, False)}
_ORACLE = {
    "broker_name": "brokerA",
    "persistence.data_source.bean_id": "oracle-ds",
    "persistence.data_source.class_name": "org.apache.commons.dbcp.BasicDataSource",
    "persistence.data_source.url": "jdbc:oracle:thin:@localhost:1521:AMQDB",
    "persistence.data_source.driver_class_name": "oracle.jdbc.driver.OracleDriver",
    "persistence.data_source.username": "scott",
    "persistence.data_source.password": "tiger",
    "persistence.data_source.properties": {"poolPreparedStatements": "true"},
    "persistence.data_source.is_postgresql": False,
    "persistence.lock_keep_alive_period_ms": 30000,
}
_INCLUDED = {f"{NC0}.dynamically_included_destinations": (_q("TRADE.STOCK.>"), _t("PRICE.STOCK.>"))}
_EXCLUDED = {
    f"{NC0}.excluded_destinations": (_q("TRADE.STOCK.NYSE.*"), _t("PRICE.STOCK.NYSE.*")),
}
_MQ_FACTORY = "com.ibm.mq.jms.MQQueueConnectionFactory"
_CONVERTOR = "org.apache.activemq.network.jms.SimpleJmsMessageConvertor"
_JNDI = "org.springframework.jndi.JndiTemplate"

# fmt: off
CASES = [
    # Seed 000: JBoss A-MQ 6.2, Fault Tolerant Messaging.
    Case("000", 257, "Example 2.2 broker for dynamic failover", {
        f"{NC0}.name": "NC", f"{NC0}.parsed_uri": parse_uri("multicast://default"),
        f"{TC0}.uri": "tcp://0.0.0.0:61616",
        f"{TC0}.discovery_uri": parse_uri("multicast://default"),
        f"{TC0}.update_cluster_clients": True, f"{TC0}.update_cluster_filter": ("A.*", "B.*")}),
    Case("000", 434, "Example 2.10 discovery agent on a broker", _DISCOVERY),
    Case("000", 565, "Example 2.16 multicast discovery agent", _DISCOVERY),
    Case("000", 623, "Example 2.19 zeroconf needs a multicast agent", _NE_GROUP),
    Case("000", 730, "section 3.1 lockKeepAlivePeriod", _KAHA_5000),
    Case("000", 761, "Example 3.1 shared file system", _KAHA_LOCKER),
    Case("000", 837, "Example 3.3 JDBC master-slave", _ORACLE),
    # The seed writes "{activemq.data}" without the "$": a literal directory name.
    Case("000", 876, "section 3.2 note schedulerDirectory", {
        "scheduler_support": True,
        "scheduler_directory": Path("{activemq.data}/broker/scheduler")}),
    Case("000", 940, "Example 4.1 network connector to a master-slave group", {
        f"{NC0}.name": "linkToCluster",
        f"{NC0}.uri": "masterslave:(tcp://masterHost:61002,tcp://slaveHost:61002)",
        f"{NC0}.parsed_uri.components[1].host": "slaveHost"}),
    # Seed 001: Red Hat AMQ 6.3, Using Networks of Brokers.
    Case("001", 200, "Example 2.1 single connector", {
        "broker_name": "brokerA", "broker_id": "A", **_LINK_B_URI, f"{TC0}.port": 61001}),
    Case("001", 273, "Example 2.2 two way connector", {
        "broker_name": "brokerB", "broker_id": "B", f"{NC0}.name": "linkToBrokerA",
        f"{NC0}.message_ttl": 3, f"{NC0}.consumer_ttl": 3, f"{TC0}.port": 61002}),
    Case("001", 303, "Example 2.3 duplex connector", {**_LINK_B, f"{NC0}.duplex": True}),
    Case("001", 334, "Figure 2.4 multiple connectors", {
        f"{NC0}.name": "link01ToBrokerB", "network_connectors[1].name": "link02ToBrokerB",
        "network_connectors[2].name": "link03ToBrokerB", "network_connectors[2].network_ttl": 3}),
    Case("001", 412, "section static propagation", {
        **_LINK_B, f"{NC0}.statically_included_destinations": (_q("TEST.FOO"),)}),
    Case("001", 484, "section broker ID", {"broker_name": "brokerA", "broker_id": "A"}),
    Case("001", 553, "Example 4.1 inclusive filtering", {**_LINK_B, **_INCLUDED}),
    Case("001", 584, "Example 4.2 exclusive filtering", {**_LINK_B, **_EXCLUDED}),
    Case("001", 603, "Example 4.3 inclusive and exclusive", {**_LINK_B, **_INCLUDED, **_EXCLUDED}),
    Case("001", 658, "Example 5.1 no conduit subscriptions", {
        **_LINK_B, f"{NC0}.conduit_subscriptions": False}),
    Case("001", 779, "Example 7.1 shortest route", {
        **_LINK_B, f"{NC0}.decrease_network_consumer_priority": True}),
    Case("001", 836, "Example 7.2 suppress duplicate queue subscriptions", {
        f"{NC0}.suppress_duplicate_queue_subscriptions": True, f"{NC0}.network_ttl": 1}),
    Case("001", 850, "Example 7.3 broker ID", {"broker_name": "brokerA", "broker_id": "A"}),
    Case("001", 902, "Example 8.1 discovery agent on a broker", _DISCOVERY),
    Case("001", 1039, "Example 8.7 multicast discovery agent", _DISCOVERY),
    Case("001", 1097, "Example 8.10 zeroconf needs a multicast agent", _NE_GROUP),
    Case("001", 1305, "Example 9.1 no conduit subscriptions", {
        **_LINK_B, f"{NC0}.conduit_subscriptions": False}),
    Case("001", 1344, "Example 9.2 separate topics and queues", {
        f"{NC0}.name": "queuesOnly", f"{NC0}.conduit_subscriptions": False,
        f"{NC0}.dynamically_included_destinations": (_q(">"),),
        "network_connectors[1].name": "topicsOnly",
        "network_connectors[1].conduit_subscriptions": True,
        "network_connectors[1].dynamically_included_destinations": (_t(">"),)}),
    Case("001", 1464, "Example 10.1 VM connector for an embedded Camel bridge", {
        "broker_name": "fabricBroker", "data_directory": Path("/var/fabric/data"),
        "start": False, f"{TC0}.maximum_connections": 1000, f"{TC0}.port": 0,
        "transport_connectors[1].scheme": "vm", "transport_connectors[1].host": "local"}),
    Case("001", 1507, "section Camel Spring XML example", rejected=NOT_BROKER),
    Case("001", 1601, "section Camel connection factory bean", rejected=NOT_BROKER),
    Case("001", 1641, "section Camel JNDI look-up", rejected=NOT_BROKER),
    Case("001", 1726, "section Camel route syntax", rejected=NOT_BROKER),
    Case("001", 1739, "section Camel sample routes", rejected=NOT_BROKER),
    Case("001", 1813, "Example 10.2 embedded native JMS-to-JMS bridge", {
        "broker_name": "localBroker", "bean_id": "localbroker", "persistent": False,
        "persistence": None, f"{JB0}.kind": "queue", "jms_bridge_connectors[1].kind": "topic",
        f"{TC0}.port": 61234}),
    Case("001", 1890, "section 10.3 connection factory bean", {
        f"{JB0}.outbound_connection_factory.class_name": _MQ_FACTORY,
        f"{JB0}.outbound_connection_factory.properties": {
            "transportType": "1", "hostName": "localhost", "port": "1414",
            "queueManager": "QM_TEST"}}),
    Case("001", 1927, "section 10.3 connection factory from JNDI", {
        f"{JB0}.outbound_connection_factory_name": "cn=MQQueueCF",
        f"{JB0}.jndi_outbound_template.class_name": _JNDI,
        f"{JB0}.jndi_outbound_template.properties": {"environment": {
            "java.naming.factory.initial": "com.sun.jndi.LdapCtxFactory",
            "java.naming.provider.url": "ldap://server.company.com/o=company_us,c=us"}}}),
    Case("001", 1977, "section inbound queue bridges", {
        f"{JB0}.bridges[0].remote_name": "QueueA", f"{JB0}.bridges[0].local_name": "QueueA",
        f"{JB0}.bridges[0].direction": "inbound"}),
    Case("001", 1987, "section inbound queue bridges, local name", {
        f"{JB0}.bridges[0].local_name": "org.activemq.example.QueueA"}),
    Case("001", 2003, "section outbound queue bridges", {
        f"{JB0}.bridges[0].remote_name": "QueueX", f"{JB0}.bridges[0].direction": "outbound"}),
    Case("001", 2013, "section outbound queue bridges, local name", {
        f"{JB0}.bridges[0].local_name": "org.activemq.example.QueueX"}),
    Case("001", 2029, "Example 10.3 sample queue bridges", {
        f"{JB0}.bridges[2].remote_name": "QueueC", f"{JB0}.bridges[5].remote_name": "QueueZ",
        f"{JB0}.bridges[5].direction": "outbound",
        f"{JB0}.outbound_connection_factory.class_name": _MQ_FACTORY}),
    Case("001", 2074, "section inbound topic bridges", {
        f"{JB0}.kind": "topic", f"{JB0}.bridges[0].remote_name": "TopicA"}),
    Case("001", 2084, "section inbound topic bridges, local name", {
        f"{JB0}.bridges[0].local_name": "org.activemq.example.TopicA"}),
    Case("001", 2100, "section outbound topic bridges", {
        f"{JB0}.bridges[0].remote_name": "TopicX", f"{JB0}.bridges[0].kind": "topic"}),
    Case("001", 2112, "section outbound topic bridges, local name", {
        f"{JB0}.bridges[0].local_name": "org.activemq.example.TopicX"}),
    Case("001", 2128, "Example 10.4 sample topic bridges", {
        f"{JB0}.kind": "topic", f"{JB0}.bridges[3].remote_name": "TopicX",
        f"{JB0}.bridges[3].direction": "outbound"}),
    Case("001", 2186, "section 10.3 deploying the bridge in a fabric", {
        "broker_name": "fabricBroker", "start": False, "ignored[0].location.line": 4}),
    # The seed drops the "$" of "${broker-name}": a literal broker name.
    Case("001", 2227, "Example 10.5 ActiveMQ-to-WebSphere MQ", {
        "broker_name": "{broker-name}", f"{JB0}.bridges[1].remote_name": "QueueX",
        f"{JB0}.outbound_connection_factory.bean_id": "remoteFactory"}),
    Case("001", 2446, "section 10.3 message convertors", {
        f"{JB0}.inbound_message_convertor": _CONVERTOR,
        f"{JB0}.outbound_message_convertor": _CONVERTOR,
        f"{JB0}.bridges[1].remote_name": "QueueX"}),
    # Seed 002: Fuse Message Broker 4.4.1.
    Case("002", 26, "Example 1.1 broker for dynamic failover", {
        f"{TC0}.update_cluster_clients": True, f"{TC0}.update_cluster_filter": ("A.*", "B.*"),
        f"{NC0}.uri": "multicast://default"}),
    Case("002", 51, "Example 1.3 discoverable TCP connector", _DISCOVERY),
    Case("002", 105, "section discovery agents, one endpoint", _DISCOVERY),
    Case("002", 116, "section discovery agents, Openwire and Stomp", {
        **_DISCOVERY, "transport_connectors[1].name": "stomp",
        "transport_connectors[1].uri": "stomp://localhost:61613"}),
    Case("002", 220, "Example 2.1 single connector", {"broker_name": "brokerA", **_LINK_B_URI}),
    Case("002", 250, "Example 2.2 two way connector", {
        "broker_name": "brokerB", f"{NC0}.name": "linkToBrokerA"}),
    Case("002", 269, "Example 2.3 duplex connector", {**_LINK_B, f"{NC0}.duplex": True}),
    Case("002", 280, "Figure 2.4 multiple connectors", {
        "network_connectors[1].name": "link02ToBrokerB",
        "network_connectors[2].name": "link03ToBrokerB"}),
    Case("002", 418, "section static propagation", {
        f"{NC0}.statically_included_destinations": (_q("TEST.FOO"),)}),
    Case("002", 487, "section broker ID", {"broker_name": "brokerA", "broker_id": "A"}),
    Case("002", 527, "Example 2.4 filtered destinations", {**_LINK_B, **_INCLUDED, **_EXCLUDED}),
    Case("002", 573, "Figure 2.18 decreaseNetworkConsumerPriority", {
        **_LINK_B, f"{NC0}.decrease_network_consumer_priority": True}),
    Case("002", 611, "Figure 2.19 suppressDuplicateQueueSubscriptions", {
        f"{NC0}.decrease_network_consumer_priority": True,
        f"{NC0}.suppress_duplicate_queue_subscriptions": True}),
    Case("002", 630, "section broker ID and duplicate routes", {"broker_id": "A"}),
    Case("002", 650, "section disabling conduit subscriptions", {
        **_LINK_B, f"{NC0}.conduit_subscriptions": False}),
    Case("002", 680, "Example 2.5 separate topics and queues", {
        f"{NC0}.dynamically_included_destinations": (_q(">"),),
        "network_connectors[1].dynamically_included_destinations": (_t(">"),),
        "network_connectors[1].conduit_subscriptions": True}),
    Case("002", 757, "Example 4.2 pure master-slave master", {
        "broker_name": "master", "services.wait_for_slave": True,
        "services.shutdown_on_slave_failure": False, f"{TC0}.uri": "tcp://masterhost:61616"}),
    Case("002", 779, "Example 4.3 pure master-slave slave", {
        "broker_name": "slave", "services.master_connector.remote_uri": "tcp://localhost:62001",
        "services.master_connector.user_name": "James",
        "services.master_connector.password": "Cheese"}),
    Case("002", 801, "Example 4.4 alternative slave configuration", {
        "services.master_connector.remote_uri": "tcp://masterhost:62001",
        "services.shutdown_on_master_failure": False}),
    Case("002", 841, "Example 4.5 shared file cluster", {"persistence.directory": _SHARED_DIR}),
    Case("002", 844, "Example 4.6 AMQ persistence adapter", {
        "persistence.directory": _SHARED_DIR, "persistence.adapter": "amqPersistenceAdapter"}),
    Case("002", 869, "Example 4.7 JDBC master-slave", _ORACLE),
    Case("002", 927, "Example 4.8 network connector to a master-slave cluster", {
        f"{NC0}.name": "linkToCluster", f"{NC0}.parsed_uri.components[0].scheme": "failover",
        f"{NC0}.parsed_uri.components[0].options": {"maxReconnectAttempts": "0"}}),
    # Seed 003: the Master/Slave chapter.
    Case("003", 48, "section file locking requirements", _KAHA_5000),
    Case("003", 75, "Example 3.1 shared file system, damaged", _KAHA_LOCKER),
    # Seed 004: the ActiveMQ Artemis manual, Broker Connections (broker.xml fragments).
    *(Case("004", line, label, rejected=ARTEMIS) for line, label in (
        (16, "broker-connections element"), (27, "AMQP server connection"),
        (78, "alternate hosts"), (139, "mirror"), (150, "dual mirror, broker A"),
        (174, "disaster recovery, DC1"), (183, "disaster recovery, DC2"), (215, "sender"),
        (222, "sender addresses"), (238, "receiver"), (244, "receiver addresses"),
        (272, "peer"), (277, "peer addresses"), (307, "distinct queue names"),
        (312, "distinct queue names, addresses"), (328, "federation, local queues"),
        (354, "federation, remote queues"), (391, "federation, address policy"))),
]

TYPOS: dict[tuple[str, int], list[tuple[str, str, str]]] = {
    ("001", 603): [
        ('"TRADE.STOCK.>/>', '"TRADE.STOCK.>"/>', "closing quote lost; seed 002 Ex. 2.4 has it"),
        ('"PRICE.STOCK.>/>', '"PRICE.STOCK.>"/>', "closing quote lost; seed 002 Ex. 2.4 has it"),
    ],
    ("001", 1344): [
        ('<queue physicalName=""/>', '<queue physicalName=">"/>', "'>' lost; seed 002 Ex. 2.5"),
        ('<topic physicalName=""/>', '<topic physicalName=">"/>', "'>' lost; seed 002 Ex. 2.5"),
    ],
    ("001", 2003): [("</inboundQueueBridges>", "</outboundQueueBridges>", "end tag mismatch")],
    ("001", 2446): [
        ('Convertor"\n    "\n', 'Convertor"\n', "a stray quote on a line of its own"),
        ('Convertor"\n    r">', 'Convertor">', 'a stray "r" before the closing ">"'),
    ],
    ("002", 26): [('"*A*,*B*"', '"A.*,B.*"', "not regexes; seed 000 Ex. 2.2 prints A.*,B.*")],
}
"""(seed, line) -> [(as printed, repaired, why)]."""
# fmt: on

SUPPLIED = {("001", 2029), ("001", 2128), ("001", 2446)}
"""Examples whose "..." omits the remoteFactory bean of the example at seed 001 line 1890."""
