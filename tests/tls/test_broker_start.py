"""A TLS broker as an operator starts it: activemq.xml with ``<sslContext>``, ``ferrymq broker``."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from ferrymq.testing import BrokerProcess, free_port
from ferrymq.testing.certificates import PASSWORD, Certificates


def _xml(key_store: Path, password: str, port: int) -> str:
    return f"""<beans xmlns="http://www.springframework.org/schema/beans">
<broker xmlns="http://activemq.apache.org/schema/core" brokerName="tls" persistent="false">
  <sslContext>
    <sslContext keyStore="file:{key_store}" keyStorePassword="{password}"/>
  </sslContext>
  <transportConnectors>
    <transportConnector name="ssl" uri="stomp+ssl://127.0.0.1:{port}"/>
  </transportConnectors>
</broker>
</beans>
"""


def _start_fails(tmp_path: Path, xml: str) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "activemq.xml"
    config.write_text(xml)
    command = [sys.executable, "-m", "ferrymq.cli.main", "broker", "--config", str(config)]
    command += ["--data", str(tmp_path / "data"), "--admin", "off"]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def test_plaintext_to_a_tls_port_is_closed_without_a_traceback(
    tmp_path: Path, certificates: Certificates
) -> None:
    port = free_port()
    xml = _xml(certificates.server.p12, PASSWORD, port)
    with BrokerProcess(tmp_path / "data", port=port, config_xml=xml, listen=False) as broker:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as plain:
            plain.sendall(b"CONNECT\naccept-version:1.2\nhost:localhost\n\n\0")
            plain.settimeout(10)
            answer = plain.recv(4096)
        # No STOMP answer: at most a TLS alert record (content type 21), then the close.
        assert not answer.startswith(b"CONNECTED")
        assert broker.stop() == 0
        output = "".join(broker.output)
    assert "Traceback" not in output
    assert "listening for STOMP" in output


def test_jks_keystore_is_refused_with_the_keytool_command(tmp_path: Path) -> None:
    jks = tmp_path / "broker.jks"
    subprocess.run(
        [
            *("keytool", "-genkeypair", "-alias", "broker", "-keyalg", "EC"),
            *("-keystore", str(jks), "-storetype", "JKS", "-dname", "CN=b"),
            *("-storepass", PASSWORD, "-keypass", PASSWORD),
        ],
        capture_output=True,
        check=True,
        timeout=60,
    )
    result = _start_fails(tmp_path, _xml(jks, PASSWORD, free_port()))
    assert result.returncode == 1
    expected = (
        f"keytool -importkeystore -srckeystore {jks} -destkeystore {tmp_path / 'broker.p12'} "
        "-deststoretype PKCS12"
    )
    assert expected in result.stderr + result.stdout
    assert "Traceback" not in result.stderr + result.stdout


def test_wrong_keystore_password_is_one_line(tmp_path: Path, certificates: Certificates) -> None:
    result = _start_fails(tmp_path, _xml(certificates.server.p12, "wrong", free_port()))
    assert result.returncode == 1
    output = result.stderr + result.stdout
    assert f"cannot open the keystore {certificates.server.p12}: wrong password" in output
    assert "Traceback" not in output


def test_missing_keystore_is_one_line(tmp_path: Path) -> None:
    result = _start_fails(tmp_path, _xml(tmp_path / "absent.p12", PASSWORD, free_port()))
    assert result.returncode == 1
    assert f"cannot read the keystore {tmp_path / 'absent.p12'}" in result.stderr + result.stdout
