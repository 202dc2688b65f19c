"""Opening a client's socket to one broker, whatever protocol then speaks on it.

A ``tcp://`` (STOMP) and an ``amqp://`` transport open their socket the same way: within the
URL's ``connectionTimeout``, over TLS when the URL says so (a failed handshake told in one line),
with ``tcpNoDelay`` and ``keepAlive`` applied; a failover standby opens it ahead of time
(``preconnect``), which reports a failure as ``ConnectFailedError`` so failover moves on.
"""

from __future__ import annotations

import asyncio
import socket
import ssl

from ferrymq.client.errors import ConnectFailedError
from ferrymq.client.tcp_options import TcpOptions
from ferrymq.client.tls import handshake_failure

Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def open_socket(host: str, port: int, options: TcpOptions) -> Streams:
    # asyncio.timeout, not wait_for: on 3.11 wait_for swallows a cancellation that arrives
    # as the connection completes, and a cancelled standby keeper then never ended.
    async with asyncio.timeout(options.connection_timeout_s):
        try:
            reader, writer = await asyncio.open_connection(host, port, ssl=options.ssl_context)
        except ssl.SSLError as exc:
            raise OSError(0, handshake_failure(exc)) from exc
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, int(options.tcp_no_delay))
        if options.keep_alive:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    return reader, writer


async def preconnect(
    url: str, host: str, port: int, options: TcpOptions, timeout_s: float
) -> Streams:
    """The socket alone, opened ahead of the protocol's handshake (a failover standby)."""
    try:
        async with asyncio.timeout(timeout_s):
            return await open_socket(host, port, options)
    except TimeoutError:
        raise ConnectFailedError("timed out opening the TCP connection", url=url) from None
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise ConnectFailedError(reason, url=url) from exc
