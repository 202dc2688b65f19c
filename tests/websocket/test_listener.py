"""The ``ws://`` listener itself: ActiveMQ's configuration loads and is served, a frame may
arrive in several WebSocket fragments, a message beyond the WebSocket limit fails the
connection (1009), ``maximumConnections`` holds, and a plain HTTP request is answered."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidMessage

from ferrymq.config.activemq_xml import parse_config
from ferrymq.config.pending import pending_features
from ferrymq.testing import running_broker, without_admin
from tests.websocket.support import TIMEOUT_S, ws_broker

ACTIVEMQ_WS = """<beans xmlns="http://www.springframework.org/schema/beans">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="localhost"
          persistent="false">
    <transportConnectors>
      <transportConnector name="websocket" uri="ws://127.0.0.1:0?maximumConnections=1"/>
    </transportConnectors>
  </broker>
</beans>"""
"""ActiveMQ documentation, "WebSockets": its connector (port 0 here, and one connection)."""


async def test_activemqs_websocket_connector_loads_and_is_served(tmp_path: Path) -> None:
    config = parse_config(ACTIVEMQ_WS, "activemq.xml", {"activemq.data": str(tmp_path)})
    (connector,) = config.transport_connectors
    assert (connector.name, connector.scheme) == ("websocket", "ws")
    assert pending_features(config) == []
    async with running_broker(without_admin(config)) as broker:
        url = f"ws://127.0.0.1:{broker.stomp_ports[0]}"
        async with connect(url) as first:
            await first.send("CONNECT\naccept-version:1.2\nhost:x\n\n\x00")
            assert str(await asyncio.wait_for(first.recv(), TIMEOUT_S)).startswith("CONNECTED")
            # maximumConnections=1: a second socket is closed before its handshake.
            with pytest.raises(InvalidMessage):  # closed: no HTTP response at all
                await connect(url, open_timeout=TIMEOUT_S)


async def test_a_frame_in_several_fragments_is_one_frame(tmp_path: Path) -> None:
    async with ws_broker(tmp_path) as served, connect(served.ws_url) as ws:
        await ws.send(["CONNECT\naccept-", "version:1.2\nhost:x\n\n", "\x00"])
        assert str(await asyncio.wait_for(ws.recv(), TIMEOUT_S)).startswith("CONNECTED\n")


async def test_a_message_beyond_the_websocket_limit_fails_the_connection(tmp_path: Path) -> None:
    # The WebSocket limit is the frame limit plus 1 MiB (docs/websocket.md).
    async with (
        ws_broker(tmp_path, "?wireFormat.maxDataLength=1000") as served,
        connect(served.ws_url, max_size=None) as ws,
    ):
        await ws.send("CONNECT\naccept-version:1.2\nhost:x\n\n\x00")
        assert str(await asyncio.wait_for(ws.recv(), TIMEOUT_S)).startswith("CONNECTED\n")
        await ws.send(b"SEND\ndestination:/queue/q\n\n" + b"x" * (2 * 1024 * 1024) + b"\x00")
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(ws.recv(), TIMEOUT_S)
        assert ws.close_code == 1009


async def test_a_plain_http_request_is_told_to_upgrade(tmp_path: Path) -> None:
    async with ws_broker(tmp_path) as served:
        reader, writer = await asyncio.open_connection("127.0.0.1", served.ws_port)
        writer.write(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        answer = await asyncio.wait_for(reader.read(), TIMEOUT_S)
        writer.close()
        assert answer.startswith(b"HTTP/1.1 426 Upgrade Required\r\n")
