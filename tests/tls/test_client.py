"""The FerryMQ client over TLS: ``ssl://`` alone and in ``failover:``, and refused brokers."""

from __future__ import annotations

from pathlib import Path

import pytest

from ferrymq.client import BrokerURLError, ConnectFailedError, connect
from ferrymq.embedded import running_broker
from ferrymq.testing.certificates import PASSWORD, Certificates
from tests.tls.conftest import tls_config


def _trust(certificates: Certificates) -> str:
    return f"trustStore={certificates.ca_pem}"


async def test_send_and_receive_over_ssl(tmp_path: Path, certificates: Certificates) -> None:
    async with running_broker(tls_config(tmp_path, certificates, "ssl://127.0.0.1:0")) as broker:
        url = f"ssl://localhost:{broker.stomp_ports[0]}?{_trust(certificates)}"
        async with connect(url) as connection:
            subscription = await connection.subscribe("/queue/tls")
            await connection.send("/queue/tls", "secret", receipt=True)
            message = await subscription.get(timeout=10)
    assert message.text == "secret"


async def test_failover_members_over_ssl(tmp_path: Path, certificates: Certificates) -> None:
    config = tls_config(tmp_path, certificates, "stomp+ssl://127.0.0.1:0")
    async with running_broker(config) as broker:
        port = broker.stomp_ports[0]
        trust = f"nested.trustStore={certificates.ca_p12}&nested.trustStorePassword={PASSWORD}"
        url = f"failover:(ssl://127.0.0.1:1,stomp+ssl://127.0.0.1:{port})?{trust}"
        url += "&randomize=false&initialReconnectDelay=10"
        async with connect(url) as connection:
            subscription = await connection.subscribe("/queue/failover")
            await connection.send("/queue/failover", "via failover", receipt=True)
            message = await subscription.get(timeout=10)
    assert message.text == "via failover"


async def test_client_certificate_for_need_client_auth(
    tmp_path: Path, certificates: Certificates
) -> None:
    config = tls_config(tmp_path, certificates, "ssl://127.0.0.1:0?needClientAuth=true")
    async with running_broker(config) as broker:
        port = broker.stomp_ports[0]
        url = f"ssl://localhost:{port}?{_trust(certificates)}"
        async with connect(f"{url}&keyStore={certificates.client.p12}&keyStorePassword={PASSWORD}"):
            (listener,) = broker.service.connectors.listeners
            (accepted,) = listener.connections
            assert accepted.peer_certificate_subject == "CN=client,O=Test"


@pytest.mark.parametrize(
    ("which", "expected"),
    [
        ("untrusted", "self-signed certificate in certificate chain"),
        ("expired", "certificate has expired"),
        ("wrong_host", "Hostname mismatch"),
    ],
)
async def test_a_refused_broker_certificate_is_a_clear_error(
    tmp_path: Path, certificates: Certificates, which: str, expected: str
) -> None:
    key_store = getattr(certificates, which).p12
    config = tls_config(tmp_path, certificates, "ssl://127.0.0.1:0", key_store=key_store)
    async with running_broker(config) as broker:
        url = f"ssl://localhost:{broker.stomp_ports[0]}?{_trust(certificates)}"
        with pytest.raises(ConnectFailedError) as failure:
            await connect(url, connect_timeout=10)
    text = str(failure.value)
    assert "the broker's TLS certificate was refused" in text
    assert expected in text


async def test_verify_host_name_false_accepts_another_host_name(
    tmp_path: Path, certificates: Certificates
) -> None:
    key_store = certificates.wrong_host.p12
    config = tls_config(tmp_path, certificates, "ssl://127.0.0.1:0", key_store=key_store)
    async with running_broker(config) as broker:
        url = f"ssl://localhost:{broker.stomp_ports[0]}?{_trust(certificates)}"
        async with connect(url + "&verifyHostName=false") as connection:
            assert connection.state.value == "open"


async def test_plain_client_to_a_tls_port_fails_cleanly(
    tmp_path: Path, certificates: Certificates
) -> None:
    async with running_broker(tls_config(tmp_path, certificates, "ssl://127.0.0.1:0")) as broker:
        with pytest.raises(ConnectFailedError):
            await connect(f"tcp://127.0.0.1:{broker.stomp_ports[0]}", connect_timeout=5)


def test_tls_url_errors_are_reported_at_connect(tmp_path: Path) -> None:
    with pytest.raises(BrokerURLError, match="cannot read the truststore"):
        connect(f"ssl://localhost:1?trustStore={tmp_path / 'absent.pem'}")
    with pytest.raises(BrokerURLError, match="verifyHostName must be true or false"):
        connect("ssl://localhost:1?verifyHostName=maybe")
    with pytest.raises(BrokerURLError, match="unknown option 'trustStore'"):
        connect(f"tcp://localhost:1?trustStore={tmp_path / 'absent.pem'}")
