"""SASL and authorization seen by python-qpid-proton: PLAIN checked by the broker's
authentication, a wrong password, ANONYMOUS and a client that skips SASL refused when
authentication is configured, an unauthorized address refused on its link while the
connection goes on, and EXTERNAL with a TLS client certificate on ``amqp+ssl://``."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from proton import ConnectionException, Message, SSLDomain
from proton.utils import LinkDetached

from ferrymq.config.activemq_xml import load_config
from ferrymq.config.model import AdminConfig
from ferrymq.testing import BrokerThread
from ferrymq.testing.certificates import PASSWORD, Certificates, make_certificates
from tests.amqp.proton_support import (
    AUTHORIZATION,
    USERS,
    amqp_broker,
    attach,
    blocking,
    message_from,
    region_of,
    url,
)

PLAIN = {"allowed_mechs": "PLAIN", "allow_insecure_mechs": True}


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[BrokerThread]:
    plugins = USERS.format(anonymous="") + AUTHORIZATION
    with amqp_broker(tmp_path, plugins=plugins) as thread:
        yield thread


def _user_of(served: BrokerThread) -> set[str | None]:
    region = region_of(served)
    return served.call(lambda: {c.user for c in region.connections.values()})


def test_plain_logs_in_with_the_brokers_users(secured: BrokerThread) -> None:
    with blocking(url(secured, "user", "password"), **PLAIN) as connection:
        connection.create_sender("queue://USERS.in").send(Message(body="hello"))
        receiver = connection.create_receiver("queue://USERS.in")
        assert receiver.receive(timeout=10).body == "hello"
        receiver.accept()
        assert _user_of(secured) == {"user"}


@pytest.mark.parametrize(
    ("credentials", "options"),
    [
        (("user", "wrong"), PLAIN),
        (("nobody", "password"), PLAIN),
        ((None, None), {"allowed_mechs": "ANONYMOUS"}),
        ((None, None), {"sasl_enabled": False}),
    ],
    ids=["wrong-password", "unknown-user", "anonymous", "no-sasl"],
)
def test_a_client_without_valid_credentials_is_refused(
    secured: BrokerThread, credentials: tuple[str | None, str | None], options: dict[str, object]
) -> None:
    with pytest.raises(ConnectionException), blocking(url(secured, *credentials), **options):
        pass
    with blocking(url(secured, "user", "password"), **PLAIN) as connection:
        connection.create_sender("queue://USERS.in").send(Message(body="yes"))


def test_anonymous_is_served_when_anonymous_access_is_allowed(tmp_path: Path) -> None:
    plugins = USERS.format(anonymous=' anonymousAccessAllowed="true"')
    with (
        amqp_broker(tmp_path, plugins=plugins) as served,
        blocking(url(served), allowed_mechs="ANONYMOUS") as connection,
    ):
        connection.create_sender("queue://open").send(Message(body="hi"))
        assert message_from(connection, "queue://open").body == "hi"


@pytest.mark.parametrize("side", ["sender", "receiver"])
def test_an_unauthorized_address_is_refused_on_its_link_only(
    secured: BrokerThread, side: str
) -> None:
    with blocking(url(secured, "user", "password"), **PLAIN) as connection:
        with pytest.raises(LinkDetached) as refused:
            attach(connection, side, "queue://ADMIN.secrets")
        assert "amqp:unauthorized-access" in str(refused.value)
        connection.create_sender("queue://USERS.after").send(Message(body="fine"))
        assert message_from(connection, "queue://USERS.after").body == "fine"


def _certificate_broker(tmp_path: Path, certificates: Certificates) -> BrokerThread:
    (tmp_path / "login.config").write_text(
        "CertLogin {\n"
        "    org.apache.activemq.jaas.TextFileCertificateLoginModule required\n"
        '        org.apache.activemq.jaas.textfiledn.user="users-dn.properties"\n'
        '        org.apache.activemq.jaas.textfiledn.group="groups-dn.properties";\n'
        "};\n"
    )
    (tmp_path / "users-dn.properties").write_text(f"client={certificates.client.subject}\n")
    (tmp_path / "groups-dn.properties").write_text("users=client\n")
    path = tmp_path / "activemq.xml"
    path.write_text(f"""<beans xmlns="http://www.springframework.org/schema/beans">
<broker xmlns="http://activemq.apache.org/schema/core" brokerName="certs" persistent="false">
  <plugins><jaasCertificateAuthenticationPlugin configuration="CertLogin"/></plugins>
  <sslContext><sslContext keyStore="{certificates.server.p12}" keyStorePassword="{PASSWORD}"
      trustStore="{certificates.ca_pem}"/></sslContext>
  <transportConnectors>
    <transportConnector name="amqps" uri="amqp+ssl://127.0.0.1:0?needClientAuth=true"/>
  </transportConnectors>
</broker></beans>""")
    return BrokerThread(replace(load_config(path), admin=AdminConfig(enabled=False)))


def _client_tls(certificates: Certificates, *, certificate: bool) -> SSLDomain:
    domain = SSLDomain(SSLDomain.MODE_CLIENT)
    domain.set_trusted_ca_db(str(certificates.ca_pem))
    domain.set_peer_authentication(SSLDomain.VERIFY_PEER)
    if certificate:
        pem = str(certificates.client.pem)
        domain.set_credentials(pem, pem, None)
    return domain


def test_external_logs_in_with_the_tls_client_certificate(tmp_path: Path) -> None:
    certificates = make_certificates(tmp_path / "certificates")
    with _certificate_broker(tmp_path, certificates) as served:
        address = f"amqps://127.0.0.1:{served.amqp_port}"
        tls = _client_tls(certificates, certificate=True)
        with blocking(address, ssl_domain=tls, allowed_mechs="EXTERNAL") as connection:
            connection.create_sender("queue://certified").send(Message(body="signed"))
            receiver = connection.create_receiver("queue://certified")
            assert receiver.receive(timeout=10).body == "signed"
            receiver.accept()
            assert _user_of(served) == {"client"}
        anonymous = _client_tls(certificates, certificate=False)
        with (
            pytest.raises(ConnectionException),
            blocking(address, ssl_domain=anonymous, allowed_mechs="EXTERNAL"),
        ):
            pass
