"""TLS and heart-beats of a broker connection: ``sslEnabled=true`` (Artemis's connector option)
to a FerryMQ ``amqp+ssl://`` listener, options that stay with their own host in the ``#`` list,
and a peer that goes silent, caught by the AMQP idle timeout (AMQP 1.0 part 2.4.5)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from ferrymq.config.activemq_xml import parse_config
from ferrymq.config.broker_connections import SenderConfig
from ferrymq.config.model import AdminConfig
from ferrymq.connections.broker_connection import ConnectionState
from ferrymq.testing import free_port, wait_until
from ferrymq.testing.brokers import amqp_port
from ferrymq.testing.certificates import PASSWORD, Certificates, make_certificates
from tests.connections.runtime_support import broker_with_connections, connection, running
from tests.connections.scripted_peer import ScriptedPeer

pytestmark = pytest.mark.usefixtures("tiny_senders")

SENDER = SenderConfig(address_match="orders", name="tiny")


def tls_remote_xml(certificates: Certificates) -> str:
    return f"""<beans xmlns="http://www.springframework.org/schema/beans">
<broker xmlns="http://activemq.apache.org/schema/core" brokerName="tls" persistent="false">
  <sslContext><sslContext keyStore="{certificates.server.p12}" keyStorePassword="{PASSWORD}"/>
  </sslContext>
  <transportConnectors>
    <transportConnector name="amqps" uri="amqp+ssl://127.0.0.1:0"/>
  </transportConnectors>
</broker></beans>"""


async def test_ssl_enabled_connects_over_tls_and_checks_the_certificate(tmp_path: Path) -> None:
    certificates = make_certificates(tmp_path / "certificates")
    config = parse_config(tls_remote_xml(certificates), "tls.xml", {})
    async with running(replace(config, admin=AdminConfig(enabled=False))) as remote:
        port = amqp_port(remote)
        trusted = connection(
            "trusted",
            f"tcp://localhost:{port}?sslEnabled=true&trustStorePath={certificates.ca_pem}",
            SENDER,
        )
        plain = connection("plain", f"tcp://localhost:{port}", SENDER, reconnect_attempts=0)
        async with broker_with_connections(tmp_path / "local", trusted, plain) as local:
            conn = local.broker_connections.get("trusted")
            await wait_until(lambda: conn.state is ConnectionState.CONNECTED, 10, "TLS up")
            assert conn.current_host == f"tcp://localhost:{port}"
            failed = local.broker_connections.get("plain")
            await wait_until(lambda: failed.state is ConnectionState.FAILED, 10, "plain refused")


async def test_wrong_trust_store_is_a_clear_failure(tmp_path: Path) -> None:
    certificates = make_certificates(tmp_path / "certificates")
    config = parse_config(tls_remote_xml(certificates), "tls.xml", {})
    other = make_certificates(tmp_path / "other")
    async with running(replace(config, admin=AdminConfig(enabled=False))) as remote:
        uri = f"tcp://localhost:{amqp_port(remote)}?sslEnabled=true&trustStorePath={other.ca_pem}"
        bad = connection("bad", uri, SENDER, reconnect_attempts=0)
        async with broker_with_connections(tmp_path / "local", bad) as local:
            conn = local.broker_connections.get("bad")
            await wait_until(lambda: conn.state is ConnectionState.FAILED, 10, "refused")
            assert "certificate" in (conn.last_error or "")


async def test_tls_options_stay_with_their_own_host(tmp_path: Path) -> None:
    certificates = make_certificates(tmp_path / "certificates")
    async with ScriptedPeer() as peer:
        # The primary is TLS (and down); the alternate has no option: it is plain TCP.
        uri = (
            f"tcp://127.0.0.1:{free_port()}?sslEnabled=true&trustStorePath="
            f"{certificates.ca_pem}#127.0.0.1:{peer.port}"
        )
        async with broker_with_connections(tmp_path, connection("c", uri, SENDER)) as broker:
            conn = broker.broker_connections.get("c")
            await wait_until(lambda: conn.state is ConnectionState.CONNECTED, 10, "alternate")
            assert conn.current_host == peer.url


async def test_a_silent_peer_is_dropped_by_the_idle_timeout(tmp_path: Path) -> None:
    # The scripted peer never runs proton's clock, so it sends no heart-beats: this side
    # declares it dead after amqpIdleTimeout of silence and connects again.
    async with ScriptedPeer() as peer:
        uri = f"{peer.url}?amqpIdleTimeout=1000"
        async with broker_with_connections(tmp_path, connection("c", uri, SENDER)) as broker:
            conn = broker.broker_connections.get("c")
            await wait_until(lambda: peer.accepted >= 2, 10, "a second connection")
            assert "idle" in (conn.last_error or "")
