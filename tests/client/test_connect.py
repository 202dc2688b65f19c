"""Opening and closing connections, and the URLs the client accepts."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Callable

import pytest

from ferrymq.client import (
    BrokerErrorFrame,
    BrokerURLError,
    ConnectFailedError,
    ConnectionClosed,
    UsageError,
    connect,
)
from ferrymq.util.uri import redact_url


async def test_connect_reports_what_the_broker_said_and_disconnects(url: str) -> None:
    conn = await connect(url)
    assert conn.version == "1.2"
    assert conn.server is not None
    assert conn.server.startswith("FerryMQ/")
    assert conn.session
    assert conn.state.value == "open"
    await conn.disconnect()
    assert conn.closed
    reason = await conn.wait_closed()
    assert "disconnected" in reason.message
    with pytest.raises(ConnectionClosed):
        await conn.send("/queue/a", "too late")
    await conn.disconnect()  # idempotent


async def test_both_async_with_forms_disconnect_on_exit(url: str) -> None:
    async with connect(url) as first:
        assert first.state.value == "open"
    assert first.closed
    async with await connect(url) as second:
        assert second.state.value == "open"
    assert second.closed


async def test_a_connecting_object_connects_once(url: str) -> None:
    connecting = connect(url)
    conn = await connecting
    with pytest.raises(UsageError, match="already used"):
        await connecting
    await conn.disconnect()


@pytest.mark.parametrize("version", ["1.0", "1.1", "1.2"])
async def test_version_offered_is_the_highest_negotiated(url: str, version: str) -> None:
    async with connect(url, version=version) as conn:
        assert conn.version == version
        sub = await conn.subscribe("/queue/versions", ack="client")
        await conn.send("/queue/versions", "hello", receipt=True)
        message = await sub.get(timeout=5)
        assert message.text == "hello"
        await message.ack(receipt=True)


async def test_nack_does_not_exist_in_stomp_1_0(url: str) -> None:
    async with connect(url, version="1.0") as conn:
        sub = await conn.subscribe("/queue/v10", ack="client")
        await conn.send("/queue/v10", "x", receipt=True)
        message = await sub.get(timeout=5)
        with pytest.raises(UsageError, match="NACK"):
            await message.nack()
        await message.ack(receipt=True)


async def test_an_explicit_client_id_cannot_connect_twice(url: str) -> None:
    async with connect(url, client_id="only-once"):
        with pytest.raises(BrokerErrorFrame, match="already connected") as caught:
            await connect(url, client_id="only-once")
        assert "only-once" in caught.value.message


async def test_known_url_options_are_accepted(url: str) -> None:
    options = "?connectionTimeout=5000&keepAlive=true&tcpNoDelay=false"
    async with connect(url.replace("tcp://", "stomp://") + options) as conn:
        assert conn.remote_url.startswith("stomp://127.0.0.1:")


@pytest.mark.parametrize(
    ("bad", "part", "words"),
    [
        ("tcp://127.0.0.1:61613?jmsPrefetch=5", "jmsPrefetch", "unknown option"),
        ("tcp://127.0.0.1:61613?keepAlive=maybe", "keepAlive", "true or false"),
        ("tcp://127.0.0.1:61613?connectionTimeout=soon", "connectionTimeout", "milliseconds"),
        ("failover:(tcp://a:1,tcp://b:2)?bogus=1", "bogus", "unknown failover: option"),
        (
            "discovery:(multicast://default?bogusOption=1)",
            "bogusOption",
            "unknown multicast discovery agent option",
        ),
        ("masterslave:(tcp://a:1)", "masterslave", "at least 2"),
        ("fanout:(static:(tcp://a:1,tcp://b:2))?minAckCount=all", "minAckCount", "whole number"),
        ("http://127.0.0.1:8161", "http", "unknown transport scheme"),
        ("tcp://user:secret@127.0.0.1:61613", "user:secret", "credentials"),
        ("tcp://127.0.0.1:61613/queue", "/queue", "no path"),
        ("tcp://:61613", "tcp://:61613", "host is required"),
        ("tcp:(tcp://a:1,tcp://b:2)", "tcp", "not a list"),
        ("tcp://127.0.0.1:99999", "99999", "port out of range"),
        ("127.0.0.1:61613", "127.0.0.1:61613", "missing scheme"),
    ],
)
def test_bad_urls_are_refused_naming_the_part(bad: str, part: str, words: str) -> None:
    with pytest.raises(BrokerURLError) as caught:
        connect(bad)
    assert caught.value.part == part
    assert words in str(caught.value)
    assert redact_url(bad) in str(caught.value)  # a password in it reads *** (issue 16)
    assert "secret" not in str(caught.value)


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: connect("tcp://127.0.0.1:61613", version="2.0"), "version"),
        (lambda: connect("tcp://127.0.0.1:61613", heart_beat=(-1, 0)), "heart_beat"),
        (lambda: connect("tcp://127.0.0.1:61613", connect_timeout=0), "connect_timeout"),
    ],
)
def test_bad_arguments_are_refused(call: Callable[[], object], words: str) -> None:
    with pytest.raises(UsageError, match=words):
        call()


async def test_a_refused_connection_names_the_url() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, not listening: connections are refused
        with pytest.raises(ConnectFailedError) as caught:
            await connect(f"tcp://127.0.0.1:{port}")
    assert f"tcp://127.0.0.1:{port}" in str(caught.value)


@pytest.fixture
async def silent_server() -> AsyncIterator[int]:
    """A listener that accepts and never answers: a broker that hangs before CONNECTED."""
    accepted: list[asyncio.StreamWriter] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1]
    for writer in accepted:
        writer.close()
    server.close()
    await server.wait_closed()


async def test_connect_timeout_names_what_was_awaited(silent_server: int) -> None:
    with pytest.raises(ConnectFailedError, match="timed out waiting for CONNECTED"):
        await connect(f"tcp://127.0.0.1:{silent_server}", connect_timeout=0.2)
