"""Checking a hashed password is slow on purpose; it must not be slow for everyone else (issue
16, review items 4 and 14). A canary connection's round trips are timed with and without a
flood of failing logins against a PBKDF2-hashed password: while the hashes are derived off the
event loop, the canary goes on at its own pace; on the loop, every derivation would stall it.
The bar is relative to the cost of one derivation, measured here, not a wall-clock figure."""

from __future__ import annotations

import hashlib
import statistics
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ferrymq.security.passwords import hash_password
from ferrymq.testing import BrokerThread
from tests.fuzz.wire import RawConnection, connect_frame, frame
from tests.security.test_enforcement_authentication import secured, security_xml

ITERATIONS = 1_000_000
ROUND_TRIPS = 15
ATTACKERS = 2


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    hashed = hash_password("password", ITERATIONS)
    xml = security_xml().replace(
        'username="user" password="password"', f'username="user" password="{hashed}"'
    )
    thread = secured(tmp_path, xml)
    try:
        yield thread
    finally:
        thread.stop()


def derivation_s() -> float:
    started = time.monotonic()
    hashlib.pbkdf2_hmac("sha256", b"guess", b"0123456789abcdef", ITERATIONS)
    return time.monotonic() - started


def round_trips(canary: RawConnection, count: int) -> list[float]:
    """SEND with a receipt, ``count`` times: how long each receipt took."""
    took = []
    for n in range(count):
        started = time.monotonic()
        canary.send(frame("SEND", ("destination", "/queue/canary"), ("receipt", f"r{n}")))
        canary.expect("RECEIPT")
        took.append(time.monotonic() - started)
        time.sleep(0.02)
    return took


def attack(port: int, first: int, stop: threading.Event, attempts: list[int]) -> None:
    """Wrong passwords for a real user, from ever new loopback addresses (127.0.0.N: under the
    throttle's free failures, so that each one costs a derivation)."""
    for n in range(200):
        if stop.is_set():
            return
        source = f"127.0.{first + n // 250}.{2 + n % 250}"
        with RawConnection(port, source) as raw:
            raw.send(connect_frame("1.2", ("login", "user"), ("passcode", f"guess{n}")))
            raw.read_until_eof(timeout_s=15)
        attempts.append(n)


def test_failing_hashed_logins_do_not_stall_other_connections(broker: BrokerThread) -> None:
    cost_s = derivation_s()
    with RawConnection(broker.port) as canary:
        canary.send(connect_frame("1.2", ("login", "guest"), ("passcode", "password")))
        canary.expect("CONNECTED")
        canary.escaped = True
        quiet = statistics.median(round_trips(canary, ROUND_TRIPS))
        stop = threading.Event()
        attempts: list[int] = []
        threads = [
            threading.Thread(target=attack, args=(broker.port, 1 + i, stop, attempts))
            for i in range(ATTACKERS)
        ]
        for thread in threads:
            thread.start()
        try:
            time.sleep(cost_s)  # the first derivations are under way
            attacked = statistics.median(round_trips(canary, ROUND_TRIPS))
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=30)
    assert len(attempts) >= 2, "the attack did not get going"
    assert attacked < quiet + cost_s / 4, (
        f"the canary's median round trip went from {quiet * 1000:.1f} ms to "
        f"{attacked * 1000:.1f} ms while logins failed (one derivation: {cost_s * 1000:.0f} ms)"
    )
