"""Keystore passwords in client URLs never leave the broker (issue 16, review finding 7): a
masterConnector and a network connector name ``keyStorePassword`` in their URLs, and neither the
admin API's documents, nor ``/health``, nor the log, nor an error shows it."""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import replace
from pathlib import Path
from urllib.request import Request, urlopen

import pytest

from ferrymq.client import BrokerURLError, connect
from ferrymq.config.model import AdminConfig
from ferrymq.ha.replica import MasterConnector, ReplicationError
from ferrymq.store.memory import MemoryStore
from ferrymq.testing import broker_config, free_port, running_broker, wait_until
from ferrymq.testing.certificates import make_certificates
from ferrymq.util.uri import redact_url

SECRET = "SECRETPW"


@pytest.mark.parametrize(
    "url",
    [
        f"ssl://h:1?keyStore=k.p12&keyStorePassword={SECRET}",
        f"failover:(ssl://a:1?trustStorePassword={SECRET},ssl://b:2)?randomize=false",
        f"static:(failover:(ssl://a:1?KEYSTOREPASSWORD={SECRET}))",
        f"failover:(ssl://a:1)?keyStorePassword={SECRET},x&maxReconnectAttempts=1",
        f"ssl://user:{SECRET}@h:1",
        f"postgresql://u:{SECRET}@h/db",
        f"host=h sslpassword='{SECRET} x' dbname=d",
        f"masterConnector 'ssl://h:1?keyStorePassword={SECRET}' refused",
        f"stomp://alice@example.com:{SECRET}@h:61613",  # "@" in the user name
        f"ssl://h:1?key%53torePassword={SECRET}",  # a name the parser would decode
        f"ssl://h:1?keyStore%50assword={SECRET}",
    ],
)
def test_every_password_in_a_url_is_masked(url: str) -> None:
    shown = redact_url(url)
    assert SECRET not in shown
    assert "***" in shown


def test_what_is_not_a_password_is_kept() -> None:
    url = "failover:(ssl://a:1?keyStore=k.p12&keyStorePassword=x,tcp://b:2)?randomize=false"
    assert redact_url(url) == (
        "failover:(ssl://a:1?keyStore=k.p12&keyStorePassword=***,tcp://b:2)?randomize=false"
    )


def _get(port: int, path: str) -> tuple[int, str]:
    request = Request(f"http://127.0.0.1:{port}{path}")
    try:
        with urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except OSError as exc:  # an HTTPError (503) still has a body
        body = getattr(exc, "read", lambda: b"")()
        return int(getattr(exc, "code", 0)), body.decode()


async def test_admin_api_health_logs_and_errors_hide_keystore_passwords(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    pki = make_certificates(tmp_path / "pki", password=SECRET)
    options = f"keyStore={pki.client.p12}&keyStorePassword={SECRET}&trustStore={pki.ca_pem}"
    nobody = f"ssl://127.0.0.1:{free_port()}?{options}"  # nothing listens there
    admin = AdminConfig(host="127.0.0.1", port=0)
    slave_xml = f"""<broker xmlns="http://activemq.apache.org/schema/core" brokerName="slave">
  <services><masterConnector remoteURI="{nobody.replace("&", "&amp;")}"/></services>
</broker>"""
    bridged_xml = f"""<broker xmlns="http://activemq.apache.org/schema/core" brokerName="east">
  <networkConnectors>
    <networkConnector name="west" uri="static:({nobody.replace("&", "&amp;")})"/>
  </networkConnectors>
</broker>"""
    slave_config = replace(broker_config(tmp_path / "s", xml=slave_xml), admin=admin)
    bridged_config = replace(broker_config(tmp_path / "e", xml=bridged_xml), admin=admin)
    async with running_broker(slave_config) as slave, running_broker(bridged_config) as east:
        assert slave.admin is not None
        assert east.admin is not None
        await wait_until(
            lambda: any("bridge to" in r.getMessage() for r in caplog.records),
            20,
            "the bridge to nobody failing",
        )
        answers = [
            await asyncio.to_thread(_get, port, path)
            for port in (slave.admin.port, east.admin.port)
            for path in ("/health", "/api/v1/broker", "/api/v1/network-bridges")
        ]
        master = json.loads(answers[1][1])["replication"]["master"]
        bridges = json.loads(answers[5][1])
    assert master.startswith("ssl://127.0.0.1:")
    assert "keyStorePassword=***" in master
    assert "keyStorePassword=***" in json.dumps(bridges)
    assert "replicating from ssl://" in answers[0][1]
    for status, body in answers:
        assert status in (200, 503), body
        assert SECRET not in body, body
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "master ssl://127.0.0.1" in logged
    assert SECRET not in logged


async def test_errors_naming_a_url_hide_its_password(tmp_path: Path) -> None:
    with pytest.raises(ReplicationError) as replication:
        MasterConnector(f"ssl://127.0.0.1?keyStorePassword={SECRET}", MemoryStore(), name="s")
    with pytest.raises(BrokerURLError) as client:
        await connect(f"failover:(ssl://127.0.0.1:1?keyStorePassword={SECRET}&bogus=1)")
    for error in (replication.value, client.value):
        assert "keyStorePassword=***" in str(error)
        assert SECRET not in str(error)
