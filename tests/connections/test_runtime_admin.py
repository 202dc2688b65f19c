"""Broker connections at the operator's surfaces: the admin API over real HTTP, the ``ferrymq``
verbs, ``ferrymq stat`` and ``/metrics`` (Artemis's ``startBrokerConnection`` and
``stopBrokerConnection``; an ``auto-start="false"`` connection waits for the first)."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from ferrymq.broker import Broker
from ferrymq.cli.main import main
from ferrymq.config.broker_connections import SenderConfig
from ferrymq.connections import service as connections_service
from ferrymq.connections.broker_connection import ConnectionState
from ferrymq.service.errors import BrokerStartError
from ferrymq.testing import wait_until
from tests.connections.runtime_support import (
    broker_with_connections,
    connection,
    with_connections,
)
from tests.connections.scripted_peer import ScriptedPeer

pytestmark = pytest.mark.usefixtures("tiny_senders")

SENDER = SenderConfig(address_match="orders", name="tiny")


def admin_url(broker: Broker) -> str:
    assert broker.admin is not None
    return f"http://127.0.0.1:{broker.admin.port}"


def http(url: str, method: str = "GET", content_type: str | None = None) -> tuple[int, Any]:
    request = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    if content_type is not None:
        request.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            status, body = answer.status, answer.read()
    except urllib.error.HTTPError as error:
        status, body = error.code, error.read()
    text = body.decode()
    return status, json.loads(text) if text.startswith(("{", "[")) else text


async def call(url: str, method: str = "GET", content_type: str | None = None) -> Any:
    return await asyncio.to_thread(http, url, method, content_type)


async def test_admin_api_lists_starts_and_stops(tmp_path: Path) -> None:
    async with ScriptedPeer() as peer:
        config = connection("c", peer.url, SENDER, auto_start=False)
        async with broker_with_connections(tmp_path, config, admin=True) as broker:
            base = admin_url(broker) + "/api/v1/broker-connections"
            status, listed = await call(base)
            assert status == 200
            (record,) = listed["broker_connections"]
            assert (record["name"], record["state"], record["auto_start"]) == (
                "c",
                "stopped",
                False,
            )
            assert peer.accepted == 0
            assert (await call(base + "/c/start", "POST"))[0] == 415  # JSON only
            status, started = await call(base + "/c/start", "POST", "application/json")
            assert status == 200
            assert started["state"] in ("connecting", "connected")
            conn = broker.broker_connections.get("c")
            await wait_until(lambda: conn.state is ConnectionState.CONNECTED, 10, "connected")
            status, record = await call(base + "/c")
            assert record["url"] == peer.url
            assert record["elements"] == [
                {"name": "tiny", "type": "TinyElement", "runs": 1, "address": "orders"}
            ]
            status, stopped = await call(base + "/c/stop", "POST", "application/json")
            assert (status, stopped["state"]) == (200, "stopped")
            status, missing = await call(base + "/nope/start", "POST", "application/json")
            assert status == 404
            assert "nope" in json.dumps(missing)


async def test_cli_verbs_stat_and_metrics(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async with ScriptedPeer() as peer:
        config = connection("c", peer.url, SENDER, auto_start=False)
        async with broker_with_connections(tmp_path, config, admin=True) as broker:
            admin = admin_url(broker)
            code = await asyncio.to_thread(main, ["broker-connections", "--admin", admin])
            assert code == 0
            out = capsys.readouterr().out
            assert "NAME" in out
            assert out.splitlines()[1].split() == ["c", "stopped", "-", "0", "-"]
            args = ["broker-connections", "--admin", admin, "start", "c"]
            assert await asyncio.to_thread(main, args) == 0
            assert capsys.readouterr().out.startswith("started broker connection c")
            conn = broker.broker_connections.get("c")
            await wait_until(lambda: conn.state is ConnectionState.CONNECTED, 10, "connected")
            assert await asyncio.to_thread(main, ["stat", "--admin", admin]) == 0
            out = capsys.readouterr().out
            assert f"broker connection c: connected, {peer.url}, 0 attempt(s)" in out
            assert "  TinyElement tiny: runs 1, address orders" in out
            _status, metrics = await call(admin + "/metrics")
            assert (
                'ferrymq_broker_connection_state{connection="c",state="connected"} 1.0' in metrics
            )
            assert 'ferrymq_broker_connection_connects_total{connection="c"} 1.0' in metrics
            assert (
                'ferrymq_broker_connection_element{connection="c",element="tiny",'
                'figure="runs",type="TinyElement"} 1.0' in metrics
            )
            args = ["broker-connections", "--admin", admin, "stop", "c"]
            assert await asyncio.to_thread(main, args) == 0
            assert capsys.readouterr().out.strip() == "stopped broker connection c: stopped"
            args = ["broker-connections", "--admin", admin, "stop"]
            assert await asyncio.to_thread(main, args) == 2
            assert "needs the connection's name" in capsys.readouterr().err
            args = ["broker-connections", "--admin", admin, "start", "nope"]
            assert await asyncio.to_thread(main, args) == 1
            assert "no broker connection named 'nope'" in capsys.readouterr().err


def test_bad_uri_is_one_clear_start_error(tmp_path: Path) -> None:
    config = with_connections(tmp_path, connection("c", "tcp://127.0.0.1", SENDER))
    with pytest.raises(BrokerStartError) as failure:
        Broker(config)
    message = str(failure.value)
    assert message.startswith("broker connection c: broker connection uri 'tcp://127.0.0.1'")
    assert "\n" not in message


async def test_element_kind_not_served_fails_that_connection_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = "ferrymq.connections.not_written_yet:elements"
    monkeypatch.setitem(connections_service.ELEMENT_FACTORIES, SenderConfig, missing)
    async with ScriptedPeer() as peer:
        config = connection("c", peer.url, SENDER)
        async with broker_with_connections(tmp_path, config) as broker:
            conn = broker.broker_connections.get("c")
            assert conn.state is ConnectionState.FAILED
            assert conn.last_error == "<sender> is not served yet by this FerryMQ version"
            assert peer.accepted == 0
