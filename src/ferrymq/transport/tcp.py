"""TCP listeners: accept sockets and give each a ``TransportConnection`` and a handler."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable

from ferrymq.transport.connection import ConnectionHandler, TransportConnection

log = logging.getLogger(__name__)


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
    ) -> None:
        self.host = host
        self.requested_port = port
        self.name = name
        self._handler_factory = handler_factory
        self._maximum_connections = maximum_connections
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
        listener = self

        class _Tracked(TransportConnection):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                sock = transport.get_extra_info("socket")
                if sock is not None:
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                limit = listener._maximum_connections
                if limit is not None and len(listener.connections) >= limit:
                    listener.refused += 1
                    log.warning(
                        "%s: refusing connection, maximumConnections=%d reached",
                        listener.name,
                        limit,
                    )
                    transport.close()
                    return
                listener.accepted += 1
                listener.connections.add(self)
                super().connection_made(transport)

            def connection_lost(self, exc: Exception | None) -> None:
                if self in listener.connections:
                    listener.connections.discard(self)
                    super().connection_lost(exc)

        return _Tracked(self._handler_factory())

    async def stop(self) -> None:
        """Stop accepting, then drop every connection this listener accepted."""
        if self._server is not None:
            self._server.close()
        for connection in list(self.connections):
            connection.close()
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"
