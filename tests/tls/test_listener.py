"""TLS listeners served to standard STOMP clients: stomp.py with ``set_ssl``, ``openssl``."""

from __future__ import annotations

import socket
import ssl
import subprocess
import time
from pathlib import Path

import pytest

import stomp
from ferrymq.testing import BrokerThread
from ferrymq.testing.certificates import Certificates
from tests.tls.conftest import tls_config


def _stomp_client(
    port: int, certificates: Certificates, *, client_cert: bool = False
) -> stomp.Connection12:
    connection = stomp.Connection12([("127.0.0.1", port)], reconnect_attempts_max=1)
    key = str(certificates.client.pem) if client_cert else None
    connection.set_ssl(
        [("127.0.0.1", port)],
        ca_certs=str(certificates.ca_pem),
        cert_file=key,
        key_file=key,
    )
    return connection


class _Listener(stomp.ConnectionListener):  # type: ignore[misc]
    def __init__(self) -> None:
        self.bodies: list[str] = []

    def on_message(self, frame: stomp.utils.Frame) -> None:
        self.bodies.append(frame.body)


@pytest.mark.parametrize("scheme", ["ssl", "stomp+ssl", "stomp+nio+ssl", "auto+ssl"])
def test_stomp_py_sends_and_receives_over_tls(
    tmp_path: Path, certificates: Certificates, scheme: str
) -> None:
    config = tls_config(tmp_path, certificates, f"{scheme}://127.0.0.1:0")
    with BrokerThread(config) as broker:
        connection = _stomp_client(broker.port, certificates)
        received = _Listener()
        connection.set_listener("", received)
        connection.connect(wait=True)
        connection.subscribe("/queue/tls", id="1")
        connection.send("/queue/tls", "over tls", receipt="r1")
        deadline = time.monotonic() + 10
        while not received.bodies and time.monotonic() < deadline:
            time.sleep(0.02)
        connection.disconnect()
    assert received.bodies == ["over tls"]


def test_need_client_auth_exposes_the_verified_subject(
    tmp_path: Path, certificates: Certificates
) -> None:
    config = tls_config(tmp_path, certificates, "ssl://127.0.0.1:0?needClientAuth=true")
    with BrokerThread(config) as broker:
        connection = _stomp_client(broker.port, certificates, client_cert=True)
        connection.connect(wait=True)

        def subjects() -> list[str | None]:
            assert broker.broker is not None
            (listener,) = broker.broker.service.connectors.listeners
            return [c.peer_certificate_subject for c in listener.connections]

        assert broker.call(subjects) == [certificates.client.subject]
        assert certificates.client.subject == "CN=client,O=Test"
        connection.disconnect()


def _handshake(port: int, certificates: Certificates, *args: str) -> bool:
    """Whether ``openssl s_client`` completes a handshake with ``args``."""
    result = subprocess.run(
        [
            "openssl",
            "s_client",
            "-connect",
            f"127.0.0.1:{port}",
            "-CAfile",
            str(certificates.ca_pem),
            "-verify_return_error",
            *args,
        ],
        input=b"",
        capture_output=True,
        timeout=20,
        check=False,
    )
    return result.returncode == 0 and b"Verify return code: 0 (ok)" in result.stdout


def _exchange(port: int, context: ssl.SSLContext) -> None:
    """Handshake and one CONNECT; with TLS 1.3 a refused client certificate shows on the first
    read after the handshake."""
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        tls.sendall(b"CONNECT\naccept-version:1.2\n\n\0")
        if not tls.recv(1024):
            raise ConnectionError("closed")


def test_need_client_auth_refuses_a_client_without_a_certificate(
    tmp_path: Path, certificates: Certificates
) -> None:
    config = tls_config(tmp_path, certificates, "ssl://127.0.0.1:0?needClientAuth=true")
    with BrokerThread(config) as broker:
        context = ssl.create_default_context(cafile=str(certificates.ca_pem))
        with pytest.raises((ssl.SSLError, ConnectionError)):
            _exchange(broker.port, context)
        client_pem = str(certificates.client.pem)
        assert _handshake(broker.port, certificates, "-cert", client_pem, "-key", client_pem)


def test_enabled_protocols_refuse_other_versions(
    tmp_path: Path, certificates: Certificates
) -> None:
    uri = "ssl://127.0.0.1:0?transport.enabledProtocols=TLSv1.3"
    with BrokerThread(tls_config(tmp_path, certificates, uri)) as broker:
        assert _handshake(broker.port, certificates, "-tls1_3")
        assert not _handshake(broker.port, certificates, "-tls1_2")


def test_enabled_cipher_suites_take_java_names(tmp_path: Path, certificates: Certificates) -> None:
    suite = "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"
    uri = f"ssl://127.0.0.1:0?transport.enabledCipherSuites={suite}"
    with BrokerThread(tls_config(tmp_path, certificates, uri)) as broker:
        chosen = "ECDHE-ECDSA-AES128-GCM-SHA256"
        assert _handshake(broker.port, certificates, "-tls1_2", "-cipher", chosen)
        assert not _handshake(
            broker.port, certificates, "-tls1_2", "-cipher", "ECDHE-ECDSA-AES256-GCM-SHA384"
        )
        assert not _handshake(broker.port, certificates, "-tls1_3")


def test_pem_keystore(tmp_path: Path, certificates: Certificates) -> None:
    server = certificates.server.pem
    uri = "ssl://127.0.0.1:0"
    config = tls_config(tmp_path, certificates, uri, key_store=server, password=None)
    with BrokerThread(config) as broker:
        assert _handshake(broker.port, certificates)
