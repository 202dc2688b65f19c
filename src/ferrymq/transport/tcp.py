"""TCP listeners: accept sockets and give each a ``TransportConnection`` and a handler."""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from collections.abc import Callable
from typing import TypeVar

from ferrymq.transport.connection import ConnectionHandler, TransportConnection
from ferrymq.util.aio import wait_event

C = TypeVar("C", bound=TransportConnection)

log = logging.getLogger(__name__)

TLS_CLOSE_WAIT_S = 1.0
"""How long a stopping TLS listener waits for its peers to finish closing."""


class TransportListenError(OSError):
    """A listener could not bind; the message names the address."""


class TcpListener:
    """Listens on ``host:port`` (port 0 picks a free port; read ``port`` after ``start``)."""

    def __init__(
        self,
        host: str,
        port: int,
        handler_factory: Callable[[], ConnectionHandler],
        *,
        maximum_connections: int | None = None,
        name: str = "",
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.host = host
        self.requested_port = port
        self.name = name
        self._handler_factory = handler_factory
        self._maximum_connections = maximum_connections
        self._ssl_context = ssl_context
        self._drained = asyncio.Event()
        """Set when the last tracked connection is gone (a stopping TLS listener waits)."""
        """A TLS listener's context (``transport.tls.server_context``); None: plain TCP."""
        self._server: asyncio.Server | None = None
        self.port = port
        self.connections: set[TransportConnection] = set()
        self.accepted = 0
        self.refused = 0

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            self._server = await loop.create_server(
                self._protocol_factory,
                self.host,
                self.requested_port,
                reuse_address=True,
                backlog=512,
                ssl=self._ssl_context,
            )
        except OSError as exc:
            raise TransportListenError(
                exc.errno, f"cannot listen on {self.host}:{self.requested_port}: {exc.strerror}"
            ) from exc
        sockets = self._server.sockets
        self.port = sockets[0].getsockname()[1]
        for sock in sockets:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _protocol_factory(self) -> TransportConnection:
        return self._tracked(TransportConnection)(self._handler_factory())

    def _tracked(self, base: type[C]) -> type[C]:
        """``base`` counted against ``maximumConnections`` while it is connected."""
        listener = self

        class _Tracked(base):  # type: ignore[valid-type,misc]
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                if listener.admit(self, transport):
                    super().connection_made(transport)

            def connection_lost(self, exc: Exception | None) -> None:
                if listener.release(self):
                    super().connection_lost(exc)

        return _Tracked

    def admit(self, connection: TransportConnection, transport: asyncio.BaseTransport) -> bool:
        """Track an accepted socket, or close it when ``maximumConnections`` is reached (a
        listener whose connections are another ``TransportConnection`` class calls this from
        their ``connection_made``)."""
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        limit = self._maximum_connections
        if limit is not None and len(self.connections) >= limit:
            self.refused += 1
            log.warning("%s: refusing connection, maximumConnections=%d reached", self.name, limit)
            transport.close()
            return False
        self.accepted += 1
        self.connections.add(connection)
        return True

    def release(self, connection: TransportConnection) -> bool:
        """Forget a closed connection; False when it was never admitted."""
        if connection not in self.connections:
            return False
        self.connections.discard(connection)
        if not self.connections:
            self._drained.set()
        return True

    async def stop(self) -> None:
        """Stop accepting, then drop every connection this listener accepted."""
        if self._server is not None:
            self._server.close()
        for connection in list(self.connections):
            connection.close()
        if self._ssl_context is not None:
            await self._finish_tls_closes()
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    async def _finish_tls_closes(self) -> None:
        """A TLS close waits for the peer's close_notify: give peers a moment, then drop the
        sockets of those that do not answer, so none outlives the listener."""
        if self.connections:
            self._drained.clear()
            await wait_event(self._drained, TLS_CLOSE_WAIT_S)
        for connection in list(self.connections):
            connection.abort()

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"
