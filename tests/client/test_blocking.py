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


def batches(url: str) -> tuple[list[int], int, list[str]]:
    """Take messages in batches, acknowledge a batch in one call, and see what is left."""
    with blocking.connect(url) as conn:
        sub = conn.subscribe("/queue/batches", ack="client-individual", prefetch=100)
        for n in range(10):
            conn.send("/queue/batches", f"m{n}", persistent=True, receipt=True)
        taken: list[blocking.BlockingMessage] = []
        sizes: list[int] = []
        for _ in range(20):  # bounded: the ten arrive in a few batches
            got = sub.get_many(4, timeout=5)
            sizes.append(len(got))
            taken += got
            if len(taken) == 10:
                break
        assert [m.text for m in taken] == [f"m{n}" for n in range(10)]
        empty = len(sub.get_many(4, timeout=0.05))
        conn.ack_all(taken[:7], receipt=True)  # the last seven stay unacknowledged
    with blocking.connect(url) as conn:
        sub = conn.subscribe("/queue/batches", ack="auto")
        left = [m.text for m in sub.get_many(10, timeout=5)]
        for _ in range(10):
            if len(left) >= 3:
                break
            left += [m.text for m in sub.get_many(10, timeout=5)]
    return sizes, empty, left


async def test_get_many_takes_batches_and_ack_all_acknowledges_in_one_call(url: str) -> None:
    sizes, empty, left = await asyncio.to_thread(batches, url)
    assert all(0 < size <= 4 for size in sizes)
    assert empty == 0
    assert left == ["m7", "m8", "m9"]
