"""docs/security.md's examples load as printed (issue 16, item 6).

Each section's titled blocks (activemq.xml and the properties and login.config files next to
it) are written into a folder of their own; the certificates they name are made by running the
page's own ``openssl`` commands; ``ferrymq check-config activemq.xml`` must then load them with
no error.  The users of the examples log in with the passwords the page states, so a hash or a
placeholder that does not resolve to them fails here too.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import ssl
import subprocess
from pathlib import Path

import pytest
import websockets
from websockets.typing import Subprotocol

from ferrymq.admin_view import AdminView
from ferrymq.cli.main import main
from ferrymq.client import ConnectFailedError, connect
from ferrymq.config import load_config
from ferrymq.config.cli import config_from_flags
from ferrymq.core.destination import Destination, DestinationType
from ferrymq.security.api import AuthenticationError, Credentials, Operation
from ferrymq.security.build import security_for
from ferrymq.service.exposure import exposure_warnings
from ferrymq.testing import running_broker, without_admin
from tests.docs.markdown import ROOT, Block, fenced_blocks

PAGE = ROOT / "docs" / "security.md"
CERTIFICATES = "Certificates for a test setup"
HASHED = "Hashed passwords"
JAAS = "Users in properties files (JAAS)"


def sections() -> dict[str, list[Block]]:
    found: dict[str, list[Block]] = {}
    for block in fenced_blocks(PAGE):
        found.setdefault(block.heading, []).append(block)
    return found


def configured_sections() -> list[str]:
    return [h for h, blocks in sections().items() if any(b.title == "activemq.xml" for b in blocks)]


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The page's openssl commands, run as printed."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed")
    folder = tmp_path_factory.mktemp("certificates")
    (script,) = [b for b in sections()[CERTIFICATES] if b.lang == "sh"]
    done = subprocess.run(
        ["bash", "-e", "-c", script.text],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return folder


def write_section(folder: Path, heading: str, certificates: Path) -> Path:
    """The section's files (and the certificates) in ``folder``; the activemq.xml path."""
    for made in certificates.iterdir():
        shutil.copy(made, folder / made.name)
    for block in sections()[heading]:
        if block.title and block.lang != "sh":
            (folder / block.title).write_text(block.text)
    return folder / "activemq.xml"


def check_config(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    code = main(["check-config", str(path)])
    captured = capsys.readouterr()
    assert code == 0, captured.out + captured.err
    assert "0 errors" in captured.out, captured.out
    return captured.out


def login(path: Path, user: str, password: str) -> frozenset[str]:
    authenticator, _ = security_for(load_config(path))
    assert authenticator is not None, f"{path}: no authentication configured"
    return authenticator.authenticate(Credentials(login=user, passcode=password)).groups


def test_the_page_has_an_example_for_every_element() -> None:
    text = PAGE.read_text()
    for element in (
        "<simpleAuthenticationPlugin",
        "<jaasAuthenticationPlugin",
        "<jaasCertificateAuthenticationPlugin",
        "TextFileCertificateLoginModule",
        "<authorizationPlugin>",
        "<tempDestinationAuthorizationEntry",
        "ActiveMQ.Advisory.>",
        "<sslContext",
        "stomp+ssl://",
        "needClientAuth",
        "credentials.properties",
        "{PBKDF2-SHA256}",
        "(websocket.md)",
        "--admin-user",
        "FERRYMQ_ADMIN_PASSWORD",
        "LDAP",
        "Kerberos",
    ):
        assert element in text, f"docs/security.md says nothing of {element}"
    assert len(configured_sections()) >= 5, configured_sections()


@pytest.mark.parametrize("heading", configured_sections())
def test_each_example_loads(
    heading: str, tmp_path: Path, certificates: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    check_config(write_section(tmp_path, heading, certificates), capsys)


def test_the_simple_example_resolves_its_credentials_file(
    tmp_path: Path, certificates: Path
) -> None:
    path = write_section(tmp_path, "Users in activemq.xml", certificates)
    assert login(path, "admin", "change-me-admin") == {"admins", "users"}
    assert login(path, "guest", "change-me-guest") == {"guests"}
    with pytest.raises(AuthenticationError):
        login(path, "admin", "${activemq.password}")


def test_the_jaas_example_and_its_hashed_variant_log_in(
    tmp_path: Path, certificates: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_section(tmp_path, JAAS, certificates)
    assert login(path, "user", "change-me-user") == {"users"}
    (hashed,) = [b for b in sections()[HASHED] if b.title == "users.properties"]
    (tmp_path / "users.properties").write_text(hashed.text)
    check_config(path, capsys)
    assert login(path, "admin", "change-me-admin") == {"admins", "users"}
    assert login(path, "user", "change-me-user") == {"users"}
    with pytest.raises(AuthenticationError):
        login(path, "user", "change-me-admin")


def test_the_startup_warning_is_quoted_as_the_broker_says_it(tmp_path: Path) -> None:
    config = config_from_flags(None, tmp_path, [], "off", False, config_path=_openwire(tmp_path))
    (line,) = exposure_warnings(config, authenticated=False)
    assert f"WARNING ferrymq.broker: {line}\n" in PAGE.read_text()


def _openwire(folder: Path) -> Path:
    path = folder / "activemq.xml"
    path.write_text(
        '<broker xmlns="http://activemq.apache.org/schema/core"><transportConnectors>'
        '<transportConnector name="openwire" uri="tcp://0.0.0.0:61616"/>'
        "</transportConnectors></broker>"
    )
    return path


_JAAS_PLUGIN = '<jaasAuthenticationPlugin configuration="activemq"/>'


@pytest.mark.parametrize(
    ("login_config", "plugins"),
    [
        ("activemq { org.apache.activemq.jaas.LDAPLoginModule required; };", _JAAS_PLUGIN),
        ("activemq { com.sun.security.auth.module.Krb5LoginModule required; };", _JAAS_PLUGIN),
        ("", '<jaasDualAuthenticationPlugin configuration="activemq"/>'),
        ("", "<authorizationPlugin><map><cachedLDAPAuthorizationMap/></map></authorizationPlugin>"),
    ],
    ids=["ldap", "kerberos", "dual", "ldap-authorization"],
)
def test_what_is_not_supported_is_refused_naming_the_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], login_config: str, plugins: str
) -> None:
    (tmp_path / "login.config").write_text(login_config)
    path = tmp_path / "activemq.xml"
    path.write_text(
        f'<broker xmlns="http://activemq.apache.org/schema/core"><plugins>{plugins}</plugins>'
        "</broker>"
    )
    code = main(["check-config", str(path)])
    captured = capsys.readouterr()
    assert code != 0
    assert "docs/security.md" in captured.out + captured.err


def _served(path: Path) -> Path:
    """The example's listeners on 127.0.0.1 and a free port, everything else as printed."""
    text = re.sub(r"//0\.0\.0\.0:\d+", "//127.0.0.1:0", path.read_text())
    path.write_text(text)
    return path


async def test_the_tls_example_serves_the_page_s_certificates(
    tmp_path: Path, certificates: Path
) -> None:
    path = _served(write_section(tmp_path, "Client certificates", certificates))
    async with running_broker(without_admin(load_config(path))) as broker:
        port = broker.service.ports[0]
        trust = f"trustStore={tmp_path / 'ca.pem'}"
        own = f"keyStore={tmp_path / 'client.p12'}&keyStorePassword=changeit"
        # The client URL of the page, with the test's port.
        connection = await connect(f"ssl://localhost:{port}?{trust}&{own}")
        # users-dn.properties maps the certificate's subject to user "client", group users.
        users = [(c.user, c.groups) for c in AdminView(broker).connection_statistics()]
        await connection.close()
        assert users == [("client", ("users",))]
        with pytest.raises(ConnectFailedError):  # needClientAuth: no certificate, no session
            await connect(f"ssl://localhost:{port}?{trust}", connect_timeout=10)


def test_the_authorization_example_means_what_the_page_says(
    tmp_path: Path, certificates: Path
) -> None:
    path = write_section(tmp_path, "Authorization", certificates)
    authenticator, authorizer = security_for(load_config(path))
    assert authenticator is not None
    assert authorizer is not None

    def may(user: str, operation: Operation, destination: Destination) -> bool:
        password = f"change-me-{user}"
        subject = authenticator.authenticate(Credentials(login=user, passcode=password))
        return authorizer.allowed(subject, operation, destination)

    users_orders = Destination.queue("USERS.orders")
    # Union: queue=">" (admins) and queue="USERS.>" (users) both match USERS.orders.
    assert may("admin", Operation.READ, users_orders)
    assert may("user", Operation.READ, users_orders)
    assert not may("guest", Operation.READ, users_orders)
    assert not may("user", Operation.WRITE, Destination.queue("ADMIN.orders"))
    assert may("user", Operation.WRITE, Destination.queue("GUEST.inbox"))
    assert not may("guest", Operation.READ, Destination.topic("prices"))
    advisory = Destination.topic("ActiveMQ.Advisory.Connection")
    assert may("guest", Operation.READ, advisory)
    temporary = Destination(DestinationType.TEMP_QUEUE, "ID:reply-1")
    assert may("user", Operation.ADMIN, temporary)
    assert not may("guest", Operation.ADMIN, temporary)


async def _stomp_over_wss(url: str, ca: Path, passcode: str) -> str:
    """CONNECT over ``wss://`` as stomp.js sends it; the command of the broker's answer."""
    context = ssl.create_default_context(cafile=str(ca))
    async with websockets.connect(url, ssl=context, subprotocols=[Subprotocol("v12.stomp")]) as ws:
        await ws.send(
            f"CONNECT\naccept-version:1.2\nhost:localhost\nlogin:user\npasscode:{passcode}\n\n\0"
        )
        answer = await asyncio.wait_for(ws.recv(), 10)
    text = answer if isinstance(answer, str) else answer.decode()
    return text.split("\n", 1)[0]


async def test_the_websocket_example_asks_for_the_same_logins(
    tmp_path: Path, certificates: Path
) -> None:
    path = _served(write_section(tmp_path, "WebSocket", certificates))
    async with running_broker(without_admin(load_config(path))) as broker:
        url = f"wss://localhost:{broker.service.ports[0]}/"
        assert await _stomp_over_wss(url, tmp_path / "ca.pem", "change-me-user") == "CONNECTED"
        assert await _stomp_over_wss(url, tmp_path / "ca.pem", "wrong") == "ERROR"


async def test_the_tls_listeners_example_serves_both_listeners(
    tmp_path: Path, certificates: Path
) -> None:
    path = _served(write_section(tmp_path, "TLS", certificates))
    async with running_broker(without_admin(load_config(path))) as broker:
        for port in broker.service.ports:  # ssl:// and stomp+ssl:// (wantClientAuth)
            url = f"ssl://localhost:{port}?trustStore={tmp_path / 'ca.pem'}"
            connection = await connect(url, connect_timeout=10)
            await connection.close()
        assert len(broker.service.ports) == 2
