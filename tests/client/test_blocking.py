"""The blocking facade, driven from a worker thread while the broker runs on the test's loop."""

from __future__ import annotations

import asyncio
import threading

import pytest

from ferrymq.client import BrokerURLError, ConnectionClosed, blocking


def client_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "ferrymq-client"]


def script(url: str) -> list[str]:
    """What a user's script does: produce, consume with acks, a transaction, disconnect."""
    seen: list[str] = []
    with blocking.connect(url) as conn:
        assert conn.version == "1.2"
        sub = conn.subscribe("/queue/script", ack="client-individual")
        for n in range(3):
            conn.send("/queue/script", f"m{n}", persistent=True)
        for _ in range(3):
            message = sub.get(timeout=5)
            seen.append(message.text)
            message.ack()
        with conn.transaction() as tx:
            conn.send("/queue/script", "in tx", transaction=tx)
        message = sub.get(timeout=5)
        seen.append(message.text)
        message.ack(receipt=True)
        with pytest.raises(TimeoutError):
            sub.get(timeout=0.05)
        sub.unsubscribe()
        assert list(sub) == []
        browser = conn.subscribe("/queue/script", browser=True)
        assert list(browser) == []
    assert conn.closed
    with pytest.raises(ConnectionClosed):
        conn.send("/queue/script", "after close")
    return seen


async def test_the_blocking_facade_end_to_end(url: str) -> None:
    seen = await asyncio.to_thread(script, url)
    assert seen == ["m0", "m1", "m2", "in tx"]
    assert client_threads() == []  # the background loop stopped with the connection


def test_a_bad_url_fails_before_any_thread_starts() -> None:
    with pytest.raises(BrokerURLError, match="unknown option 'bogus'"):
        blocking.connect("tcp://127.0.0.1:1?bogus=1")
    assert client_threads() == []


def test_a_refused_connection_stops_its_thread() -> None:
    import socket

    from ferrymq.client import ConnectFailedError

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        with pytest.raises(ConnectFailedError):
            blocking.connect(f"tcp://127.0.0.1:{port}")
    assert client_threads() == []
