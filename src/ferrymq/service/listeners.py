"""The broker's transport connectors, each served by the protocol adapter its scheme names.

ActiveMQ's ``TransportConnector``: a listener on an address, a name, options (discoveryUri,
updateClusterClients, maximumConnections), and the protocol it speaks, chosen by the URI's
scheme (``tcp://``, ``stomp://``, ``nio://`` speak STOMP in FerryMQ, so the seeds' connectors
work unchanged; ``amqp://`` will name the AMQP 1.0 adapter).  ``vm://`` connections of this
process are served the same way, over one end of a socket pair.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Collection, Sequence
from typing import Protocol

from ferrymq.config.model import TransportConnectorConfig
from ferrymq.service.connection import BrokerConnection
from ferrymq.transport.connection import TransportConnection
from ferrymq.transport.tcp import TcpListener

log = logging.getLogger(__name__)


class ListenerError(Exception):
    """A listener that cannot be started (its scheme, its options); says which and why."""


class ProtocolAdapter(Protocol):
    """A wire protocol the broker serves (``ferrymq.adapters``), chosen by URI scheme."""

    @property
    def name(self) -> str:
        """The protocol's name in logs ("STOMP", "AMQP")."""

    @property
    def schemes(self) -> Collection[str]:
        """The transport connector schemes it serves, as ActiveMQ names them; "vm" for the
        in-process connections of ``vm://``."""

    def accept(self, connector: TransportConnectorConfig | None) -> BrokerConnection:
        """A connection for a socket accepted by ``connector`` (None: ``vm://``), with its
        protocol converter attached."""


def published_url(listener: TcpListener, scheme: str = "tcp") -> str:
    """The URL clients should use for a listener: its address, or the host name when it is
    bound to every interface (ActiveMQ's default publishedAddressPolicy)."""
    host = listener.host
    if host in ("0.0.0.0", "::", ""):
        host = socket.gethostname()
    return f"{scheme}://{host}:{listener.port}"


class Listeners:
    """The listeners one broker serves, with their configuration, in start order."""

    def __init__(self, adapters: Sequence[ProtocolAdapter]) -> None:
        self._adapters = {scheme: adapter for adapter in adapters for scheme in adapter.schemes}
        self.served: list[tuple[TransportConnectorConfig, TcpListener]] = []
        """Each configured listener with its configuration (discoveryUri, cluster updates)."""

    @property
    def listeners(self) -> list[TcpListener]:
        return [listener for _, listener in self.served]

    @property
    def ports(self) -> list[int]:
        return [listener.port for _, listener in self.served]

    def adapter(self, scheme: str) -> ProtocolAdapter:
        adapter = self._adapters.get(scheme)
        if adapter is None:
            served = {a.name: [s for s in a.schemes if s != "vm"] for a in self._adapters.values()}
            offered = "; ".join(
                f"{name} on {', '.join(s + '://' for s in schemes)}"
                for name, schemes in served.items()
            )
            raise ListenerError(
                f"scheme {scheme}:// is not supported yet (FerryMQ serves {offered})"
            )
        return adapter

    async def start(self, connector: TransportConnectorConfig) -> TcpListener:
        try:
            adapter = self.adapter(connector.scheme)
        except ListenerError as exc:
            raise ListenerError(f"transport connector {connector.display_name}: {exc}") from None
        listener = TcpListener(
            connector.host or "0.0.0.0",
            connector.port,
            lambda: adapter.accept(connector),
            maximum_connections=connector.maximum_connections,
            name=connector.display_name,
        )
        await listener.start()
        self.served.append((connector, listener))
        log.info(
            "listening for %s on %s:%d (%s)",
            adapter.name,
            listener.host,
            listener.port,
            connector.uri,
        )
        return listener

    async def stop(self) -> None:
        for _, listener in reversed(self.served):
            await listener.stop()
        self.served.clear()

    async def open_vm_socket(self) -> socket.socket:
        """``vm://``: serve one end of a socket pair as a connection, return the other."""
        handler = self.adapter("vm").accept(None)
        ours, theirs = socket.socketpair()
        try:
            await asyncio.get_running_loop().connect_accepted_socket(
                lambda: TransportConnection(handler), ours
            )
        except BaseException:
            ours.close()
            theirs.close()
            raise
        return theirs

    def cluster_url(self) -> str | None:
        """The URL failover clients use for this broker, given to peers over bridges: the
        first listener that updates cluster clients, else the first (ActiveMQ's
        ``getDefaultSocketURIString``)."""
        for connector, listener in self.served:
            if connector.update_cluster_clients or connector.rebalance_cluster_clients:
                return published_url(listener, connector.scheme)
        if self.served:
            connector, listener = self.served[0]
            return published_url(listener, connector.scheme)
        return None
