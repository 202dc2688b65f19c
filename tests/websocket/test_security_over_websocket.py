"""Authentication applies over WebSocket unchanged (issue 16, item 4: "the same
authentication"): a wrong password gets the same ERROR as over TCP and the socket closes, a
good login connects, and the connection is listed with its user and the client's address."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from ferrymq.config.activemq_xml import parse_config
from ferrymq.testing import running_broker, without_admin
from tests.websocket.support import TIMEOUT_S, TcpStomp

SECURED = """<beans xmlns="http://www.springframework.org/schema/beans">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="secured"
          persistent="false" dataDirectory="{data}">
    <plugins>
      <simpleAuthenticationPlugin><users>
        <authenticationUser username="user" password="password" groups="users"/>
      </users></simpleAuthenticationPlugin>
    </plugins>
    <transportConnectors>
      <transportConnector name="stomp" uri="stomp://127.0.0.1:0"/>
      <transportConnector name="websocket" uri="ws://127.0.0.1:0"/>
    </transportConnectors>
  </broker>
</beans>"""


def _connect_frame(passcode: str) -> str:
    return f"CONNECT\naccept-version:1.2\nhost:x\nlogin:user\npasscode:{passcode}\n\n\x00"


async def test_a_login_over_websocket_is_checked_as_over_tcp(tmp_path: Path) -> None:
    config = parse_config(SECURED.format(data=tmp_path / "data"), "activemq.xml", {})
    async with running_broker(without_admin(config)) as broker:
        tcp_port, ws_port = broker.stomp_ports
        reader, writer = await asyncio.open_connection("127.0.0.1", tcp_port)
        tcp = TcpStomp(reader, writer)
        tcp.send(_connect_frame("wrong")[:-1])
        over_tcp = await tcp.frame()
        await tcp.close()

        async with connect(f"ws://127.0.0.1:{ws_port}/") as ws:
            await ws.send(_connect_frame("wrong"))
            over_ws = str(await asyncio.wait_for(ws.recv(), TIMEOUT_S))
            with pytest.raises(ConnectionClosed):
                await asyncio.wait_for(ws.recv(), TIMEOUT_S)
        assert over_ws.startswith("ERROR\n")
        assert over_ws.encode() == over_tcp + b"\n"

        async with connect(f"ws://127.0.0.1:{ws_port}/") as ws:
            await ws.send(_connect_frame("password"))
            assert str(await asyncio.wait_for(ws.recv(), TIMEOUT_S)).startswith("CONNECTED\n")
            (listed,) = [c for c in broker.service.registry if c.connected]
            assert listed.connector == "websocket"
            assert listed.transport is not None
            assert listed.transport.remote_address == f"127.0.0.1:{ws.local_address[1]}"
