"""``wss://``: STOMP over WebSocket over TLS, with the broker's ``<sslContext>`` key (ActiveMQ
documentation, "WebSockets", "Secure Web Sockets"): a client that trusts the CA talks STOMP,
one that does not is refused at the TLS handshake, and stomp.js under Node connects too."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidMessage
from websockets.typing import Subprotocol

from ferrymq.config.activemq_xml import parse_config
from ferrymq.testing import running_broker, without_admin
from ferrymq.testing.certificates import PASSWORD, Certificates, make_certificates
from tests.websocket.support import TIMEOUT_S

CONFIG = """<beans xmlns="http://www.springframework.org/schema/beans">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="localhost"
          persistent="false" dataDirectory="{data}">
    <sslContext>
      <sslContext keyStore="{key_store}" keyStorePassword="{password}"
                  trustStore="{trust_store}" trustStorePassword="{password}"/>
    </sslContext>
    <transportConnectors>
      <transportConnector name="secure_websocket" uri="wss://127.0.0.1:0{options}"/>
    </transportConnectors>
  </broker>
</beans>"""


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("certificates"))


@asynccontextmanager
async def wss_port(
    tmp_path: Path, certificates: Certificates, options: str = ""
) -> AsyncIterator[int]:
    xml = CONFIG.format(
        data=tmp_path / "data",
        key_store=certificates.server.p12,
        trust_store=certificates.ca_p12,
        password=PASSWORD,
        options=options,
    )
    async with running_broker(without_admin(parse_config(xml, "activemq.xml", {}))) as broker:
        yield broker.stomp_ports[0]


async def test_a_client_trusting_the_ca_speaks_stomp_over_wss(
    tmp_path: Path, certificates: Certificates
) -> None:
    trusted = ssl.create_default_context(cafile=str(certificates.ca_pem))
    async with (
        wss_port(tmp_path, certificates) as port,
        connect(
            f"wss://localhost:{port}/", ssl=trusted, subprotocols=[Subprotocol("v12.stomp")]
        ) as ws,
    ):
        assert ws.subprotocol == "v12.stomp"
        await ws.send("CONNECT\naccept-version:1.2\nhost:localhost\n\n\x00")
        assert str(await asyncio.wait_for(ws.recv(), TIMEOUT_S)).startswith("CONNECTED\n")
        await ws.send("SUBSCRIBE\nid:1\ndestination:/queue/secure\n\n\x00")
        await ws.send("SEND\ndestination:/queue/secure\n\nover TLS\x00")
        message = str(await asyncio.wait_for(ws.recv(), TIMEOUT_S))
        assert message.startswith("MESSAGE\n")
        assert message.endswith("\n\nover TLS\x00\n")


async def test_a_client_that_does_not_trust_the_broker_is_refused(
    tmp_path: Path, certificates: Certificates
) -> None:
    async with wss_port(tmp_path, certificates) as port:
        with pytest.raises(ssl.SSLCertVerificationError):
            await connect(f"wss://localhost:{port}/", ssl=ssl.create_default_context())


async def test_need_client_auth_wants_a_certificate_the_broker_trusts(
    tmp_path: Path, certificates: Certificates
) -> None:
    async with wss_port(tmp_path, certificates, "?needClientAuth=true") as port:
        url = f"wss://localhost:{port}/"
        anonymous = ssl.create_default_context(cafile=str(certificates.ca_pem))
        with pytest.raises((ssl.SSLError, ConnectionError, ConnectionClosed, InvalidMessage)):
            await _first_answer(url, anonymous)
        identified = ssl.create_default_context(cafile=str(certificates.ca_pem))
        identified.load_cert_chain(certificates.client.pem)
        assert (await _first_answer(url, identified)).startswith("CONNECTED\n")


async def _first_answer(url: str, context: ssl.SSLContext) -> str:
    """The broker's answer to a CONNECT over ``wss://`` with the client's TLS ``context``."""
    async with connect(url, ssl=context) as ws:
        await ws.send("CONNECT\naccept-version:1.2\nhost:localhost\n\n\x00")
        return str(await asyncio.wait_for(ws.recv(), TIMEOUT_S))


async def test_stompjs_under_node_connects_over_wss(
    tmp_path: Path, certificates: Certificates, stompjs: Path
) -> None:
    node = shutil.which("node")
    assert node is not None, "node is missing: install Debian's nodejs (make system-deps)"
    async with wss_port(tmp_path, certificates) as port:
        process = await asyncio.create_subprocess_exec(
            node,
            str(stompjs / "roundtrip.cjs"),
            f"wss://localhost:{port}/",
            "1",
            "0",
            cwd=stompjs,
            env={**os.environ, "NODE_EXTRA_CA_CERTS": str(certificates.ca_pem)},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0, (out, err)
    report = json.loads(out.decode().strip().splitlines()[-1])
    assert report["subprotocol"] == "v12.stomp", (report, err)
    assert [m["body"] for m in report["received"]] == ["node 0"]
