"""FerryMQ's client library: asyncio-first, with a blocking facade in ``ferrymq.client.blocking``.

``conn = await ferrymq.client.connect("tcp://127.0.0.1:61613")``; the URL's scheme picks the
transport (``registry``): one broker (``tcp:``, ``stomp:``), or a list to fail over between
(``failover:``, ``discovery:``, ``masterslave:``; see ``ferrymq.client.failover``).
"""

from ferrymq.client.commands import ConnectionInfo
from ferrymq.client.connection import Connection, ConnectionState, ConnectionStatistics
from ferrymq.client.discovery import DiscoveryAgent, DiscoveryListener, StaticDiscoveryAgent
from ferrymq.client.errors import (
    BrokerErrorFrame,
    BrokerURLError,
    ClientError,
    ConnectAttempt,
    ConnectFailedError,
    ConnectionClosed,
    FailoverTimeoutError,
    SubscriptionClosedError,
    TransactionRolledBack,
    UsageError,
)
from ferrymq.client.factory import Connecting, connect
from ferrymq.client.message import Message
from ferrymq.client.subscription import Subscription
from ferrymq.client.transaction import Transaction, TransactionState
from ferrymq.client.transport import Transport, TransportListener, TransportStatistics

__all__ = [
    "BrokerErrorFrame",
    "BrokerURLError",
    "ClientError",
    "ConnectAttempt",
    "ConnectFailedError",
    "Connecting",
    "Connection",
    "ConnectionClosed",
    "ConnectionInfo",
    "ConnectionState",
    "ConnectionStatistics",
    "DiscoveryAgent",
    "DiscoveryListener",
    "FailoverTimeoutError",
    "Message",
    "StaticDiscoveryAgent",
    "Subscription",
    "SubscriptionClosedError",
    "Transaction",
    "TransactionRolledBack",
    "TransactionState",
    "Transport",
    "TransportListener",
    "TransportStatistics",
    "UsageError",
    "connect",
]
