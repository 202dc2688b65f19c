"""STOMP command and header names, written once.

The names are those of the STOMP 1.2 specification plus ActiveMQ's dialect (its ``Stomp.java``
constants and the ``activemq.*`` consumer options), so the broker, the client and the tests all
spell them the same way.
"""

from __future__ import annotations

from typing import Final

# Protocol versions, oldest first. ActiveMQ lists them newest first in its ERROR text.
V1_0: Final = "1.0"
V1_1: Final = "1.1"
V1_2: Final = "1.2"
SUPPORTED_VERSIONS: Final = (V1_0, V1_1, V1_2)

# Client commands (STOMP 1.2 "Client Frames").
CONNECT: Final = "CONNECT"
STOMP: Final = "STOMP"
SEND: Final = "SEND"
SUBSCRIBE: Final = "SUBSCRIBE"
UNSUBSCRIBE: Final = "UNSUBSCRIBE"
ACK: Final = "ACK"
NACK: Final = "NACK"
BEGIN: Final = "BEGIN"
COMMIT: Final = "COMMIT"
ABORT: Final = "ABORT"
DISCONNECT: Final = "DISCONNECT"
CLIENT_COMMANDS: Final = frozenset(
    {CONNECT, STOMP, SEND, SUBSCRIBE, UNSUBSCRIBE, ACK, NACK, BEGIN, COMMIT, ABORT, DISCONNECT}
)

# Server commands (STOMP 1.2 "Server Frames").
CONNECTED: Final = "CONNECTED"
MESSAGE: Final = "MESSAGE"
RECEIPT: Final = "RECEIPT"
ERROR: Final = "ERROR"
SERVER_COMMANDS: Final = frozenset({CONNECTED, MESSAGE, RECEIPT, ERROR})

ALL_COMMANDS: Final = CLIENT_COMMANDS | SERVER_COMMANDS

# Frames whose headers are never escaped (STOMP 1.2 "Value Encoding"; ActiveMQ
# Stomp11Test.testConnectedNeverEncoded). They also decide the version, so the parser pauses
# after them.
UNESCAPED_COMMANDS: Final = frozenset({CONNECT, STOMP, CONNECTED})

# Standard headers (STOMP 1.2 "Standard Headers" and the per-frame sections).
CONTENT_LENGTH: Final = "content-length"
CONTENT_TYPE: Final = "content-type"
RECEIPT_HEADER: Final = "receipt"
RECEIPT_ID: Final = "receipt-id"
ACCEPT_VERSION: Final = "accept-version"
HOST: Final = "host"
LOGIN: Final = "login"
PASSCODE: Final = "passcode"
HEART_BEAT: Final = "heart-beat"
VERSION: Final = "version"
SESSION: Final = "session"
SERVER: Final = "server"
DESTINATION: Final = "destination"
TRANSACTION: Final = "transaction"
ID: Final = "id"
ACK_HEADER: Final = "ack"
MESSAGE_ID: Final = "message-id"
SUBSCRIPTION: Final = "subscription"
MESSAGE_HEADER: Final = "message"
REDELIVERED: Final = "redelivered"
JMSX_DELIVERY_COUNT: Final = "JMSXDeliveryCount"
"""How often this message was delivered (FerryMQ adds it to every MESSAGE, as JMS does)."""

# ActiveMQ CONNECT/CONNECTED extras (ProtocolConverter.onStompConnect).
CLIENT_ID: Final = "client-id"
REQUEST_ID: Final = "request-id"
RESPONSE_ID: Final = "response-id"

# ACK modes (STOMP 1.2 "SUBSCRIBE ack Header").
ACK_AUTO: Final = "auto"
ACK_CLIENT: Final = "client"
ACK_CLIENT_INDIVIDUAL: Final = "client-individual"
ACK_MODES: Final = frozenset({ACK_AUTO, ACK_CLIENT, ACK_CLIENT_INDIVIDUAL})

# ActiveMQ message headers (LegacyFrameTranslator, copyStandardHeadersFromFrameToMessage).
PERSISTENT: Final = "persistent"
PRIORITY: Final = "priority"
EXPIRES: Final = "expires"
TIMESTAMP: Final = "timestamp"
TYPE: Final = "type"
JMSX_GROUP_ID: Final = "JMSXGroupID"
JMSX_GROUP_SEQ: Final = "JMSXGroupSeq"
BROKER_PATH: Final = "JMSActiveMQBrokerPath"
"""The ids of the brokers a message crossed, comma-separated, origin first (DESIGN.md)."""
REPLY_TO: Final = "reply-to"
CORRELATION_ID: Final = "correlation-id"
TRANSFORMATION: Final = "transformation"
ORIGINAL_DESTINATION: Final = "original-destination"

# ActiveMQ SUBSCRIBE headers (ProtocolConverter.onStompSubscribe, ConsumerInfo introspection).
SELECTOR: Final = "selector"
BROWSER: Final = "browser"
ACTIVEMQ_PREFETCH_SIZE: Final = "activemq.prefetchSize"
ACTIVEMQ_SUBSCRIPTION_NAME: Final = "activemq.subscriptionName"
ACTIVEMQ_EXCLUSIVE: Final = "activemq.exclusive"
ACTIVEMQ_PRIORITY: Final = "activemq.priority"
ACTIVEMQ_NO_LOCAL: Final = "activemq.noLocal"
ACTIVEMQ_RETROACTIVE: Final = "activemq.retroactive"

# FerryMQ's own headers carry the ``ferrymq.`` prefix (DESIGN.md "Decisions already made").
FERRYMQ_PRODUCER_MESSAGE_ID: Final = "ferrymq.producer-message-id"

# FerryMQ's dynamic-failover extension (seed 000 §2.1.2 over STOMP). A client that wants the
# broker's cluster list sends FERRYMQ_CLUSTER_UPDATES:true on CONNECT; the broker answers with
# FERRYMQ_CLUSTER_BROKERS on CONNECTED and later sends MESSAGE frames on the reserved
# subscription id CLUSTER_UPDATES_SUBSCRIPTION. A client that did not ask never gets them.
FERRYMQ_CLUSTER_UPDATES: Final = "ferrymq.cluster-updates"
FERRYMQ_CLUSTER_BROKERS: Final = "ferrymq.cluster-brokers"
FERRYMQ_REBALANCE: Final = "ferrymq.rebalance"
FERRYMQ_RECONNECT_TO: Final = "ferrymq.reconnect-to"
CLUSTER_UPDATES_SUBSCRIPTION: Final = "ferrymq.cluster-updates"

# FerryMQ's pure master/slave replication (seed 002): a slave's CONNECT carries
# FERRYMQ_REPLICATION:true; the master streams store batches as MESSAGE frames on the reserved
# subscription REPLICATION_SUBSCRIPTION, numbered by FERRYMQ_BATCH, the first of a snapshot
# marked FERRYMQ_REPLICATION_RESET; the slave ACKs each batch once durable.
FERRYMQ_REPLICATION: Final = "ferrymq.replication"
FERRYMQ_REPLICA: Final = "ferrymq.replica"
FERRYMQ_BATCH: Final = "ferrymq.batch"
FERRYMQ_REPLICATION_RESET: Final = "ferrymq.replication-reset"
REPLICATION_SUBSCRIPTION: Final = "ferrymq.replication"

# FerryMQ's network-of-brokers extension (seed 001; ActiveMQ's BrokerInfo and network
# ConsumerInfo over STOMP). A bridge's CONNECT names itself with FERRYMQ_NETWORK_BRIDGE (the
# connector's name) and its broker with FERRYMQ_BROKER_ID / FERRYMQ_BROKER_NAME; the broker's
# CONNECTED answers with its own id and name. Only on such a connection: a SUBSCRIBE may be a
# demand subscription (FERRYMQ_NETWORK_SUBSCRIPTION:true, the consumer's broker path in
# FERRYMQ_CONSUMER_PATH, the broker it forwards to in FERRYMQ_FORWARD_TO, the hop limit in
# FERRYMQ_MESSAGE_TTL, the real consumers it stands for in FERRYMQ_NETWORK_CONSUMER_IDS), and a
# SEND keeps the ``message-id`` it carries (a forwarded message keeps its id across the
# network); either may name a remote temporary destination, which is mirrored for as long as
# the connection lives (bridgeTempDestinations).
FERRYMQ_NETWORK_BRIDGE: Final = "ferrymq.network-bridge"
FERRYMQ_BROKER_ID: Final = "ferrymq.broker-id"
FERRYMQ_BROKER_NAME: Final = "ferrymq.broker-name"
# Dynamic failover (service.cluster): a bridge connection says which URL failover clients use
# for the broker on its other side (FERRYMQ_BROKER_URL; the broker answers with its own on
# CONNECTED), and FERRYMQ_CLUSTER_PEER:true asks the receiving broker to count that broker as a
# peer of its cluster (the bridge's own side, and the remote side of a duplex bridge).
FERRYMQ_BROKER_URL: Final = "ferrymq.broker-url"
FERRYMQ_CLUSTER_PEER: Final = "ferrymq.cluster-peer"
# The bridge is duplex: the receiving broker lists it among its own network bridges, as
# ActiveMQ lists the responder side of a duplex bridge (its duplexNetworkConnectors).
FERRYMQ_DUPLEX: Final = "ferrymq.duplex"
FERRYMQ_NETWORK_SUBSCRIPTION: Final = "ferrymq.network-subscription"
FERRYMQ_CONSUMER_PATH: Final = "ferrymq.consumer-broker-path"
FERRYMQ_FORWARD_TO: Final = "ferrymq.forward-to"
FERRYMQ_MESSAGE_TTL: Final = "ferrymq.message-ttl"
FERRYMQ_NETWORK_CONSUMER_IDS: Final = "ferrymq.network-consumer-ids"
# The connector's excludedDestinations / dynamicallyIncludedDestinations, as comma-separated
# ``queue://NAME`` / ``topic://NAME`` patterns, applied to each message of a demand subscription.
FERRYMQ_NETWORK_EXCLUDED: Final = "ferrymq.network-excluded"
FERRYMQ_NETWORK_INCLUDED: Final = "ferrymq.network-included"

# Headers of a MESSAGE frame that describe one delivery, not the message: a bridge that sends a
# received message on (a network bridge, a broker connection's sender) drops them.
DELIVERY_HEADERS: Final = frozenset(
    {
        SUBSCRIPTION,
        ACK_HEADER,
        REDELIVERED,
        CONTENT_LENGTH,
        DESTINATION,
        RECEIPT_HEADER,
        TRANSACTION,
        JMSX_DELIVERY_COUNT,
    }
)
