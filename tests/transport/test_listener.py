"""Listeners and heart-beats on real sockets."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from pathlib import Path

import pytest

from ferrymq.config.activemq_xml import parse_config
from ferrymq.service import connection
from ferrymq.testing import broker_config, running_broker

CONNECT = b"CONNECT\naccept-version:1.2\nhost:x\n\n\x00"


async def _connected(
    port: int, connect: bytes = CONNECT
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(connect)
    await writer.drain()
    frame = await asyncio.wait_for(reader.readuntil(b"\x00\n"), 5)
    assert frame.startswith(b"CONNECTED\n")
    return reader, writer


async def test_maximum_connections_refuses_the_one_too_many(tmp_path: Path) -> None:
    xml = """
<broker xmlns="http://activemq.apache.org/schema/core">
  <transportConnectors>
    <transportConnector name="stomp" uri="stomp://127.0.0.1:0?maximumConnections=2"/>
  </transportConnectors>
</broker>"""
    # Keep the file's connector (with its limit) instead of the fixture's plain listener.
    connectors = parse_config(xml, "limit.xml").transport_connectors
    assert connectors[0].maximum_connections == 2
    config = replace(broker_config(tmp_path / "data"), transport_connectors=connectors)
    async with running_broker(config) as broker:
        port = broker.stomp_ports[0]
        first = await _connected(port)
        second = await _connected(port)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(CONNECT)
        assert await asyncio.wait_for(reader.read(), 5) == b""  # closed without a word
        writer.close()
        for _, w in (first, second):
            w.close()
            await w.wait_closed()


async def test_broker_sends_heart_beats_when_asked(tmp_path: Path) -> None:
    async with running_broker(broker_config(tmp_path / "data", persistent=False)) as broker:
        reader, writer = await _connected(
            broker.stomp_ports[0],
            b"CONNECT\naccept-version:1.2\nhost:x\nheart-beat:0,100\n\n\x00",
        )
        started = time.monotonic()
        beats = 0
        while beats < 5:
            chunk = await asyncio.wait_for(reader.read(1), 2)
            assert chunk == b"\n"
            beats += 1
        elapsed = time.monotonic() - started
        # Five beats promised at least every 100 ms: they cannot all arrive at once.
        assert elapsed >= 0.2
        writer.close()
        await writer.wait_closed()


async def test_connection_without_connect_is_closed_after_the_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connection, "OPEN_TIMEOUT_S", 0.2)
    async with running_broker(broker_config(tmp_path / "data", persistent=False)) as broker:
        reader, writer = await asyncio.open_connection("127.0.0.1", broker.stomp_ports[0])
        assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()


async def test_cluster_list_only_for_clients_that_ask(tmp_path: Path) -> None:
    """FerryMQ's dynamic-failover extension: updateClusterClients on the connector, and a
    CONNECT header from the client; a standard client gets nothing extra."""
    xml = """
<broker xmlns="http://activemq.apache.org/schema/core">
  <transportConnectors>
    <transportConnector name="stomp" uri="stomp://127.0.0.1:0" updateClusterClients="true"/>
  </transportConnectors>
</broker>"""
    connectors = parse_config(xml, "cluster.xml").transport_connectors
    config = replace(broker_config(tmp_path / "data"), transport_connectors=connectors)
    async with running_broker(config) as broker:
        port = broker.stomp_ports[0]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"CONNECT\naccept-version:1.2\nhost:x\nferrymq.cluster-updates:true\n\n\x00")
        asked = await asyncio.wait_for(reader.readuntil(b"\x00\n"), 5)
        assert f"ferrymq.cluster-brokers:stomp://127.0.0.1:{port}\n".encode() in asked
        writer.close()
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(CONNECT)
        plain = await asyncio.wait_for(reader.readuntil(b"\x00\n"), 5)
        assert b"ferrymq." not in plain
        writer.close()
