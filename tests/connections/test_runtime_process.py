"""Broker connections with real processes: ``ferrymq broker`` reading ``<broker-connections>``
from its activemq.xml and managed from the shell, and a remote broker process killed with
SIGKILL and started again on its port (the connection retries until it is back)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ferrymq.cli.main import main
from ferrymq.config.broker_connections import SenderConfig
from ferrymq.connections.broker_connection import ConnectionState
from ferrymq.testing import BrokerProcess, free_port, wait_until
from tests.connections.runtime_support import (
    TinyElement,
    broker_with_connections,
    connection,
)
from tests.connections.scripted_peer import ScriptedPeer

WAIT_S = 30.0
SENDER = SenderConfig(address_match="orders", name="tiny")


def broker_xml(peer_url: str) -> str:
    return f"""<beans xmlns="http://www.springframework.org/schema/beans">
<broker xmlns="http://activemq.apache.org/schema/core" brokerName="edge">
  <broker-connections>
    <amqp-connection uri="{peer_url}" name="to-peer" auto-start="false" retry-interval="100">
      <sender address-match="orders.#"/>
    </amqp-connection>
  </broker-connections>
</broker></beans>"""


async def test_broker_command_serves_broker_connections_from_its_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    admin_port = free_port()
    admin = f"http://127.0.0.1:{admin_port}"
    async with ScriptedPeer() as peer:
        process = BrokerProcess(
            tmp_path,
            name="edge",
            config_xml=broker_xml(peer.url),
            extra_args=["--admin", f"127.0.0.1:{admin_port}"],
        )
        await asyncio.to_thread(process.start)
        try:
            await asyncio.sleep(0.3)
            assert peer.accepted == 0  # auto-start="false"
            args = ["broker-connections", "--admin", admin, "start", "to-peer"]
            assert await asyncio.to_thread(main, args) == 0
            assert "started broker connection to-peer" in capsys.readouterr().out
            await wait_until(lambda: peer.accepted == 1, WAIT_S, "the process connects")

            def listed() -> str:
                main(["broker-connections", "--admin", admin])
                return capsys.readouterr().out

            async def connected() -> bool:
                return " connected " in await asyncio.to_thread(listed)

            deadline = asyncio.get_running_loop().time() + WAIT_S
            while not await connected():
                assert asyncio.get_running_loop().time() < deadline, "never connected"
                await asyncio.sleep(0.2)
            (seen,) = peer.connections
            info = seen.properties["broker-connection-info"]
            assert isinstance(info, dict)
            assert info["connectionName"] == "to-peer"
            node_id = (tmp_path / "edge" / "node-id").read_text().strip()
            assert (info["nodeId"], seen.container_id) == (node_id, f"{node_id}:to-peer")
        finally:
            await asyncio.to_thread(process.stop)


@pytest.mark.usefixtures("tiny_senders")
async def test_remote_killed_then_restarted_on_its_port(tmp_path: Path) -> None:
    amqp = free_port()
    remote = BrokerProcess(
        tmp_path / "remote", name="remote", extra_args=["--listen", f"amqp://127.0.0.1:{amqp}"]
    )
    await asyncio.to_thread(remote.start)
    try:
        config = connection("c", f"tcp://127.0.0.1:{amqp}", SENDER)
        async with broker_with_connections(tmp_path / "local", config) as local:
            conn = local.broker_connections.get("c")
            await wait_until(lambda: conn.state is ConnectionState.CONNECTED, WAIT_S, "up")
            await asyncio.to_thread(remote.kill)
            await wait_until(lambda: conn.state is not ConnectionState.CONNECTED, WAIT_S, "down")
            await asyncio.to_thread(remote.start)
            await wait_until(lambda: conn.state is ConnectionState.CONNECTED, WAIT_S, "back")
            (element,) = conn.elements
            assert isinstance(element, TinyElement)
            assert element.runs == 2
    finally:
        await asyncio.to_thread(remote.stop)
