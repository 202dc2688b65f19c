"""Networks of brokers: network connectors and their demand-forwarding bridges (seed 001)."""

from ferrymq.network.bridge import BridgeFailedError, DemandForwardingBridge
from ferrymq.network.connector import NetworkConnector, NetworkConnectorError
from ferrymq.network.link import LocalBroker, NetworkBridge, NetworkLoopError
from ferrymq.network.service import NetworkService

__all__ = [
    "BridgeFailedError",
    "DemandForwardingBridge",
    "LocalBroker",
    "NetworkBridge",
    "NetworkConnector",
    "NetworkConnectorError",
    "NetworkLoopError",
    "NetworkService",
]
