"""TLS settings that would open the broker wider than its operator meant are refused (issue 16,
review findings 9 and 19): client certificates without a trustStore (every public CA would be
trusted), and protocol versions older than TLS 1.2, on listeners and in client URLs alike."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ferrymq.client import BrokerURLError, ConnectFailedError, connect
from ferrymq.config import load_config
from ferrymq.testing import free_port, running_broker, without_admin
from ferrymq.testing.certificates import PASSWORD, Certificates, make_certificates

NO_TRUST = "needClientAuth/wantClientAuth without a trustStore would trust client certificates"


def _broker_xml(certificates: Certificates, listener: str, *, trust: bool) -> str:
    trust_store = f' trustStore="{certificates.ca_pem}"' if trust else ""
    return f"""<beans xmlns="http://www.springframework.org/schema/beans">
<broker xmlns="http://activemq.apache.org/schema/core" brokerName="certs" persistent="false">
  <plugins><jaasCertificateAuthenticationPlugin configuration="CertLogin"/></plugins>
  <sslContext>
    <sslContext keyStore="{certificates.server.p12}" keyStorePassword="{PASSWORD}"{trust_store}/>
  </sslContext>
  <transportConnectors>
    <transportConnector name="ssl" uri="{listener}"/>
  </transportConnectors>
</broker>
</beans>
"""


def _write(folder: Path, certificates: Certificates, listener: str, *, trust: bool) -> Path:
    (folder / "login.config").write_text(
        "CertLogin {\n"
        "    org.apache.activemq.jaas.TextFileCertificateLoginModule required\n"
        '        org.apache.activemq.jaas.textfiledn.user="users-dn.properties"\n'
        '        org.apache.activemq.jaas.textfiledn.group="groups-dn.properties";\n'
        "};\n"
    )
    (folder / "users-dn.properties").write_text(f"client={certificates.client.subject}\n")
    (folder / "groups-dn.properties").write_text("users=client\n")
    path = folder / "activemq.xml"
    path.write_text(_broker_xml(certificates, listener, trust=trust))
    return path


@pytest.mark.parametrize("option", ["needClientAuth=true", "wantClientAuth=true"])
def test_client_auth_without_a_trust_store_does_not_start(
    tmp_path: Path, certificates: Certificates, option: str
) -> None:
    path = _write(tmp_path, certificates, f"ssl://127.0.0.1:{free_port()}?{option}", trust=False)
    command = [sys.executable, "-m", "ferrymq.cli.main", "broker", "--config", str(path)]
    command += ["--data", str(tmp_path / "data"), "--admin", "off"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert NO_TRUST in output
    assert "Traceback" not in output


async def test_a_certificate_from_another_ca_neither_connects_nor_logs_in(
    tmp_path: Path, certificates: Certificates
) -> None:
    # Another CA issues a certificate with the very DN users-dn.properties names.
    stranger = make_certificates(tmp_path / "other-ca")
    assert stranger.client.subject == certificates.client.subject
    path = _write(tmp_path, certificates, "ssl://127.0.0.1:0?needClientAuth=true", trust=True)
    async with running_broker(without_admin(load_config(path))) as broker:
        url = f"ssl://localhost:{broker.stomp_ports[0]}?trustStore={certificates.ca_pem}"
        own = f"&keyStore={certificates.client.p12}&keyStorePassword={PASSWORD}"
        async with connect(url + own, connect_timeout=10) as accepted:
            assert accepted.connected_headers  # the trusted CA's certificate logs in
        forged = f"&keyStore={stranger.client.p12}&keyStorePassword={PASSWORD}"
        with pytest.raises(ConnectFailedError):
            await connect(url + forged, connect_timeout=10)
        assert not broker.service.connections


@pytest.mark.parametrize("protocols", ["TLSv1", "TLSv1.1", "TLSv1.1,TLSv1.2"])
def test_protocols_older_than_tls_1_2_are_refused_in_client_urls(protocols: str) -> None:
    with pytest.raises(BrokerURLError, match=r"older than TLS 1\.2 and refused"):
        connect(f"ssl://localhost:1?transport.enabledProtocols={protocols}")


def test_protocols_older_than_tls_1_2_stop_the_broker(
    tmp_path: Path, certificates: Certificates
) -> None:
    listener = f"ssl://127.0.0.1:{free_port()}?transport.enabledProtocols=TLSv1,TLSv1.2"
    path = _write(tmp_path, certificates, listener, trust=True)
    command = [sys.executable, "-m", "ferrymq.cli.main", "check-config", str(path)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "TLSv1 is older than TLS 1.2 and refused" in output
    assert "Traceback" not in output
