"""Issue 3, "How it is checked" 7: updateURIsURL is re-read at failover; nested.* options reach
every nested transport (and a discovery URL's options every discovered one). Also the dynamic
failover extension (seed 000 §2.1.2 over STOMP): the CONNECTED header from a real broker, and
the cluster-update MESSAGE frames scripted into the transport (tests/network/
test_dynamic_failover.py has brokers send them)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path

import pytest

from ferrymq.broker import Broker
from ferrymq.client import connect
from ferrymq.client.failover import FailoverTransport
from ferrymq.config.activemq_xml import parse_config
from ferrymq.stomp.constants import (
    CLUSTER_UPDATES_SUBSCRIPTION,
    FERRYMQ_CLUSTER_BROKERS,
    FERRYMQ_REBALANCE,
    FERRYMQ_RECONNECT_TO,
)
from ferrymq.stomp.events import MessageEvent
from ferrymq.testing import broker_config, running_broker
from tests.client.failover.conftest import Brokers, Watcher

FAST = "initialReconnectDelay=10&maxReconnectDelay=100"


@pytest.fixture
async def list_server() -> AsyncIterator[tuple[str, Callable[[str], None]]]:
    """An HTTP server answering every GET with the current list."""
    current = [""]

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        body = current[0].encode()
        head = f"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n\r\n"
        writer.write(head.encode() + body)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]

    def publish(text: str) -> None:
        current[0] = text

    yield f"http://127.0.0.1:{port}/brokers.txt", publish
    server.close()
    await server.wait_closed()


@pytest.mark.parametrize("kind", ["path", "file-url", "http"])
async def test_7_update_uris_url_is_read_again_at_failover(
    brokers: Brokers,
    tmp_path: Path,
    list_server: tuple[str, Callable[[str], None]],
    kind: str,
) -> None:
    a = await brokers.start("a")
    b = await brokers.start("b")
    path = tmp_path / "brokers.txt"
    if kind == "http":
        location, publish = list_server
    else:
        location = str(path) if kind == "path" else path.as_uri()

        def publish(text: str) -> None:
            path.write_text(text)

    publish(f"{a.url}\n")
    connection = await connect(f"failover:()?updateURIsURL={location}&{FAST}")
    watcher = Watcher(connection)
    assert connection.remote_url == a.url
    publish(f" {a.url},\n  {b.url}\n")  # B was nowhere in the URL
    a.kill()
    await watcher.resumptions(1)
    assert connection.remote_url == b.url
    assert set(connection.statistics().transport.updated_urls) == {a.url, b.url}
    await connection.disconnect()


async def test_7_an_unreadable_update_uris_url_keeps_the_previous_list(
    brokers: Brokers, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    a = await brokers.start("a")
    b = await brokers.start("b")
    path = tmp_path / "brokers.txt"
    path.write_text(f"{a.url},{b.url}")
    connection = await connect(f"failover:()?updateURIsURL={path}&randomize=false&{FAST}")
    watcher = Watcher(connection)
    path.unlink()
    with caplog.at_level(logging.WARNING, logger="ferrymq.client.failover"):
        a.kill()
        await watcher.resumptions(1)
    assert connection.remote_url == b.url
    assert any("cannot read updateURIsURL" in r.getMessage() for r in caplog.records)
    await connection.disconnect()


async def test_7_nested_options_reach_every_nested_transport(brokers: Brokers) -> None:
    a = await brokers.start("a")
    b = await brokers.start("b")
    url = (
        f"failover:({a.url},{b.url}?wireFormat.maxInactivityDuration=9000)?randomize=false"
        f"&nested.wireFormat.maxInactivityDuration=400&{FAST}"
    )
    connection = await connect(url)  # heart_beat=(0, 0): the nested option sets it
    watcher = Watcher(connection)
    stats = connection.statistics().transport
    assert (stats.remote_url, stats.send_interval_ms, stats.receive_timeout_ms) == (a.url, 400, 400)
    a.kill()
    await watcher.resumptions(1)
    stats = connection.statistics().transport
    assert (stats.remote_url, stats.send_interval_ms, stats.receive_timeout_ms) == (b.url, 400, 400)
    await connection.disconnect()


@pytest.mark.parametrize("option", ["", "discovered."])
async def test_7_discovery_injects_its_unknown_options_into_discovered_uris(
    brokers: Brokers, option: str
) -> None:
    a = await brokers.start("a")
    url = f"discovery:(static:({a.url}))?{option}wireFormat.maxInactivityDuration=300&{FAST}"
    async with connect(url) as connection:
        stats = connection.statistics().transport
        assert (stats.remote_url, stats.send_interval_ms) == (a.url, 300)


async def cluster_broker(tmp_path: Path, name: str) -> Broker:
    xml = """
<broker xmlns="http://activemq.apache.org/schema/core">
  <transportConnectors>
    <transportConnector name="stomp" uri="stomp://127.0.0.1:0" updateClusterClients="true"/>
  </transportConnectors>
</broker>"""
    connectors = parse_config(xml, "cluster.xml").transport_connectors
    return Broker(replace(broker_config(tmp_path / name), transport_connectors=connectors))


async def test_7_the_broker_list_comes_with_connected(tmp_path: Path) -> None:
    broker = await cluster_broker(tmp_path, "cluster")
    await broker.start()
    try:
        url = broker.stomp_urls[0]
        async with connect(f"failover:({url})") as connection:
            # Published with the connector's own scheme, as ActiveMQ does.
            published = url.replace("tcp://", "stomp://", 1)
            assert connection.statistics().transport.updated_urls == (published,)
        async with connect(f"failover:({url})?updateURIsSupported=false") as connection:
            assert connection.statistics().transport.updated_urls == ()
    finally:
        await broker.stop()


def cluster_message(**headers: str) -> MessageEvent:
    return MessageEvent(
        "/topic/ferrymq.cluster", "ID:cluster-1", CLUSTER_UPDATES_SUBSCRIPTION, None, headers, b""
    )


@pytest.mark.parametrize("request_kind", ["reconnect-to", "rebalance"])
async def test_7_cluster_update_frames_move_the_client(tmp_path: Path, request_kind: str) -> None:
    async with (
        running_broker(broker_config(tmp_path / "a")) as a,
        running_broker(broker_config(tmp_path / "b")) as b,
    ):
        a_url, b_url = a.stomp_urls[0], b.stomp_urls[0]
        connection = await connect(f"failover:({a_url})")
        watcher = Watcher(connection)
        subscription = await connection.subscribe("/queue/moving", ack="client-individual")
        transport = connection._transport  # the frames scripted
        assert isinstance(transport, FailoverTransport)
        link = transport.current
        assert link is not None
        if request_kind == "reconnect-to":
            update = cluster_message(
                **{FERRYMQ_CLUSTER_BROKERS: f"{a_url},{b_url}", FERRYMQ_RECONNECT_TO: b_url}
            )
        else:
            update = cluster_message(
                **{FERRYMQ_CLUSTER_BROKERS: f"{b_url},{a_url}", FERRYMQ_REBALANCE: "true"}
            )
        link.on_event(update)
        await watcher.resumptions(1)
        assert connection.remote_url == b_url
        assert transport.statistics().updated_urls[0] == b_url
        await connection.send("/queue/moving", "on b", persistent=True)
        message = await subscription.get(timeout=5)  # the subscription moved along
        assert message.text == "on b"
        await message.ack()
        assert connection.statistics().messages_received == 1  # the update never reached it
        await connection.disconnect()
