"""Which web pages may open a WebSocket to the broker (the ``Origin`` check, docs/websocket.md):
a browser's handshake names its page's origin, a non-browser client names none. A broker that
lets a page in without a secret it would have to know (no authentication, anonymous access, a
client certificate) serves no page unless ``allowedOrigins`` names it; a broker that asks for
a password serves any page, as ActiveMQ does; a request without ``Origin`` is always served."""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus
from websockets.typing import Origin

from ferrymq.cli.main import main
from ferrymq.config.activemq_xml import parse_config
from ferrymq.config.cli import config_from_flags
from ferrymq.service.listeners import login_without_secret, origin_policy
from ferrymq.testing import running_broker, without_admin
from ferrymq.testing.certificates import PASSWORD, Certificates, make_certificates
from tests.websocket.support import TIMEOUT_S, ws_broker

CONNECT = "CONNECT\naccept-version:1.2\nhost:localhost\n{login}\n\x00"
EVIL = Origin("https://evil.example")


async def answer(url: str, origin: Origin | None = None, login: str = "", **kw: Any) -> str:
    """The broker's answer to a CONNECT sent from a page of ``origin`` (None: not a browser);
    ``refused 403: <body>`` when the handshake is refused."""
    try:
        async with connect(url, origin=origin, open_timeout=TIMEOUT_S, **kw) as ws:
            await ws.send(CONNECT.format(login=login))
            return str(await asyncio.wait_for(ws.recv(), TIMEOUT_S))
    except InvalidStatus as refused:
        response = refused.response
        return f"refused {response.status_code}: {response.body.decode()}"


@asynccontextmanager
async def ws_only(tmp_path: Path, options: str) -> AsyncIterator[str]:
    """A broker without authentication serving one ``ws://`` listener with ``options``."""
    listen = [f"ws://127.0.0.1:0{options}"]
    config = config_from_flags("localhost", tmp_path / "data", listen, "off", False)
    async with running_broker(config) as broker:
        yield f"ws://127.0.0.1:{broker.stomp_ports[0]}/"


async def test_without_authentication_no_page_is_served_by_default(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "ferrymq.transport.websocket")
    async with ws_broker(tmp_path) as served:
        assert (await answer(served.ws_url)).startswith("CONNECTED\n")
        refused = await answer(served.ws_url, EVIL)
        assert refused.startswith("refused 403: Origin 'https://evil.example' is not allowed")
        assert "allowedOrigins" in refused
        assert (await answer(served.ws_url, Origin("null"))).startswith("refused 403")
    assert "refused (403): Origin 'https://evil.example'" in caplog.text


async def test_allowed_origins_names_the_pages_served(tmp_path: Path) -> None:
    options = "?allowedOrigins=http://app.example:8080, https://other.example"
    async with ws_only(tmp_path, options) as url:
        for page in ("HTTP://APP.example:8080", "https://other.example:443"):
            assert (await answer(url, Origin(page))).startswith("CONNECTED\n"), page
        for page in ("http://app.example:8081", "https://app.example:8080", "null"):
            assert (await answer(url, Origin(page))).startswith("refused 403"), page
        assert (await answer(url)).startswith("CONNECTED\n")


async def test_a_star_serves_every_page(tmp_path: Path) -> None:
    async with ws_only(tmp_path, "?allowedOrigins=*") as url:
        for page in (EVIL, Origin("null")):
            assert (await answer(url, page)).startswith("CONNECTED\n"), page


SIMPLE = """<beans xmlns="http://www.springframework.org/schema/beans">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="b" persistent="false"
          dataDirectory="{data}">
    <plugins>
      <simpleAuthenticationPlugin anonymousAccessAllowed="{anonymous}"><users>
        <authenticationUser username="user" password="s3cret" groups="users"/>
      </users></simpleAuthenticationPlugin>
    </plugins>
    <transportConnectors>
      <transportConnector name="websocket" uri="ws://127.0.0.1:0{options}"/>
    </transportConnectors>
  </broker>
</beans>"""


@asynccontextmanager
async def simple_broker(tmp_path: Path, anonymous: bool, options: str = "") -> AsyncIterator[str]:
    xml = SIMPLE.format(data=tmp_path / "data", anonymous=str(anonymous).lower(), options=options)
    async with running_broker(without_admin(parse_config(xml, "activemq.xml", {}))) as broker:
        yield f"ws://127.0.0.1:{broker.stomp_ports[0]}/"


async def test_a_broker_asking_for_a_password_serves_any_page(tmp_path: Path) -> None:
    async with simple_broker(tmp_path, anonymous=False) as url:
        assert (await answer(url, EVIL)).startswith("ERROR\n"), "a page still needs the password"
        good = await answer(url, EVIL, "login:user\npasscode:s3cret\n")
        assert good.startswith("CONNECTED\n")
    async with simple_broker(tmp_path, anonymous=False, options="?allowedOrigins=") as url:
        assert (await answer(url, EVIL)).startswith("refused 403"), "allowedOrigins= serves none"


async def test_anonymous_access_serves_no_page_by_default(tmp_path: Path) -> None:
    async with simple_broker(tmp_path, anonymous=True) as url:
        assert (await answer(url, EVIL)).startswith("refused 403")
        assert (await answer(url)).startswith("CONNECTED\n")


CERTIFICATE_LOGIN = """<beans xmlns="http://www.springframework.org/schema/beans">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="b" persistent="false"
          dataDirectory="{data}">
    <sslContext>
      <sslContext keyStore="{key_store}" keyStorePassword="{password}"
                  trustStore="{trust_store}" trustStorePassword="{password}"/>
    </sslContext>
    <plugins><jaasCertificateAuthenticationPlugin configuration="activemq"/></plugins>
    <transportConnectors>
      <transportConnector name="wss" uri="wss://127.0.0.1:0?needClientAuth=true"/>
    </transportConnectors>
  </broker>
</beans>"""


async def test_certificate_login_serves_no_page_by_default(tmp_path: Path) -> None:
    """The browser would present the user's certificate to any page's connection."""
    certificates: Certificates = make_certificates(tmp_path / "certificates")
    (tmp_path / "login.config").write_text(
        "activemq {\n  org.apache.activemq.jaas.TextFileCertificateLoginModule required\n"
        '  org.apache.activemq.jaas.textfiledn.user="dns.properties"\n'
        '  org.apache.activemq.jaas.textfiledn.group="groups.properties";\n};\n',
        encoding="utf-8",
    )
    (tmp_path / "dns.properties").write_text(
        f"browser={certificates.client.subject}\n", encoding="utf-8"
    )
    (tmp_path / "groups.properties").write_text("users=browser\n", encoding="utf-8")
    xml = CERTIFICATE_LOGIN.format(
        data=tmp_path / "data",
        key_store=certificates.server.p12,
        trust_store=certificates.ca_p12,
        password=PASSWORD,
    )
    config = parse_config(xml, "activemq.xml", {"activemq.conf": str(tmp_path)})
    context = ssl.create_default_context(cafile=str(certificates.ca_pem))
    context.load_cert_chain(certificates.client.pem)
    async with running_broker(without_admin(config)) as broker:
        url = f"wss://localhost:{broker.stomp_ports[0]}/"
        assert (await answer(url, ssl=context)).startswith("CONNECTED\n")
        assert (await answer(url, EVIL, ssl=context)).startswith("refused 403")


CHECKED = """<beans xmlns="http://www.springframework.org/schema/beans">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="b">
    <transportConnectors>
      <transportConnector uri="{uri}"/>
    </transportConnectors>
  </broker>
</beans>"""


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        (
            "ws://127.0.0.1:0?allowedOrigins=app.example",
            "URI option allowedOrigins: 'app.example' is not an origin: use scheme://host[:port]",
        ),
        (
            "ws://127.0.0.1:0?allowedOrigins=https://app.example/index.html",
            "it has more than scheme://host[:port]",
        ),
        (
            "stomp://127.0.0.1:0?allowedOrigins=*",
            "URI option allowedOrigins applies to ws:// and wss:// listeners only",
        ),
    ],
)
def test_a_wrong_allowed_origins_is_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], uri: str, expected: str
) -> None:
    path = tmp_path / "activemq.xml"
    path.write_text(CHECKED.format(uri=uri), encoding="utf-8")
    assert main(["check-config", str(path)]) == 1
    captured = capsys.readouterr()
    assert expected in captured.out + captured.err
    assert "Traceback" not in captured.out + captured.err


PROPERTIES_MODULE = (
    "org.apache.activemq.jaas.PropertiesLoginModule sufficient\n"
    '  org.apache.activemq.jaas.properties.user="users.properties"\n'
    '  org.apache.activemq.jaas.properties.group="groups.properties";'
)
GUEST_MODULE = "org.apache.activemq.jaas.GuestLoginModule sufficient credentialsInvalidate=true;"


@pytest.mark.parametrize(
    ("modules", "pages_served"),
    [((PROPERTIES_MODULE,), True), ((PROPERTIES_MODULE, GUEST_MODULE), False)],
    ids=["passwords", "passwords-then-guest"],
)
def test_a_jaas_guest_module_counts_as_no_secret(
    tmp_path: Path, modules: tuple[str, ...], pages_served: bool
) -> None:
    (tmp_path / "login.config").write_text(
        "activemq {\n" + "\n".join(modules) + "\n};\n", encoding="utf-8"
    )
    (tmp_path / "users.properties").write_text("user=s3cret\n", encoding="utf-8")
    (tmp_path / "groups.properties").write_text("users=user\n", encoding="utf-8")
    xml = (
        "<broker><plugins><jaasAuthenticationPlugin configuration='activemq'/></plugins>"
        "<transportConnectors><transportConnector uri='ws://127.0.0.1:0'/>"
        "</transportConnectors></broker>"
    )
    config = parse_config(xml, "activemq.xml", {"activemq.conf": str(tmp_path)})
    (connector,) = config.transport_connectors
    policy = origin_policy(connector, login_without_secret(config.security))
    assert policy.allows(EVIL) is pages_served
    assert policy.allows(None), "a client that is not a browser is always served"
