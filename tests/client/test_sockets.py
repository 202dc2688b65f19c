"""The one way a client opens its socket, for STOMP and AMQP alike: the URL's TCP options are
applied to the socket it opens (the AMQP transport once opened its own and applied none)."""

from __future__ import annotations

import asyncio
import socket

import pytest

from ferrymq.client import sockets
from ferrymq.client.errors import ConnectFailedError
from ferrymq.client.tcp_options import TcpOptions, tcp_options
from ferrymq.util.uri import URI, parse_uri


def options_of(url: str) -> TcpOptions:
    uri = parse_uri(url)
    assert isinstance(uri, URI)
    return tcp_options(uri)


@pytest.mark.parametrize("scheme", ["tcp", "amqp"])
@pytest.mark.parametrize(
    ("query", "no_delay", "keep_alive"), [("", 1, 0), ("?tcpNoDelay=false&keepAlive=true", 0, 1)]
)
async def test_the_urls_tcp_options_are_applied(
    scheme: str, query: str, no_delay: int, keep_alive: int
) -> None:
    accepted: list[asyncio.StreamWriter] = []
    server = await asyncio.start_server(lambda _, w: accepted.append(w), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        options = options_of(f"{scheme}://127.0.0.1:{port}{query}")
        _, writer = await sockets.open_socket("127.0.0.1", port, options)
        sock = writer.get_extra_info("socket")
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == no_delay
        assert bool(sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE)) == bool(keep_alive)
        writer.close()
        await writer.wait_closed()
    finally:
        for end in accepted:
            end.close()
        server.close()
        await server.wait_closed()


async def test_a_refused_preconnect_is_a_connect_failure() -> None:
    with socket.socket() as probe:  # bound, not listening: held, and connections are refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        url = f"amqp://127.0.0.1:{port}"
        with pytest.raises(ConnectFailedError):
            await sockets.preconnect(url, "127.0.0.1", port, options_of(url), 5)
