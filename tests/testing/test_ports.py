"""``free_port``: a port no ``bind(0)`` or ``connect`` on the machine can take (below the
kernel's ephemeral range), reserved against every other process until this one exits, so a
broker restarted on it under pytest-xdist finds it free."""

from __future__ import annotations

import random
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from ferrymq.testing import free_port, ports

CHILD_TIMEOUT_S = 30


def in_child(code: str) -> str:
    """Run ``code`` in another Python process (another pytest-xdist worker, say); its output."""
    done = subprocess.run(
        [sys.executable, "-c", f"from ferrymq.testing import ports\n{code}"],
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_S,
        check=True,
    )
    return done.stdout.strip()


def test_ports_are_outside_the_kernels_ephemeral_range() -> None:
    low, high = ports._ephemeral_range()
    first, last = ports.reservable_range()
    for port in [free_port() for _ in range(20)] + [free_port(udp=True)]:
        assert not low <= port <= high
        assert first <= port <= last


def test_a_port_is_handed_out_once_even_across_processes() -> None:
    mine = [free_port() for _ in range(20)]
    assert len(set(mine)) == len(mine)
    taken = in_child(f"print([p for p in {mine} if ports._reserve(p) is not None])")
    assert taken == "[]"


def test_the_reservation_ends_with_the_process() -> None:
    port = int(in_child("print(ports.free_port())"))
    lock = ports._reserve(port)
    assert lock is not None
    ports._reserved.append(lock)  # held by this process from now on, like one it handed out


@pytest.fixture
def busy() -> Iterator[int]:
    """A port in the range that something listens on without any reservation."""
    first, last = ports.reservable_range()
    for port in range(first, last + 1):
        server = socket.socket()
        try:
            server.bind(("127.0.0.1", port))
        except OSError:
            server.close()
            continue
        server.listen()
        with server:
            yield port
        return
    pytest.fail("no port to listen on in the range")


class Draws:
    """``randint`` that draws ``first`` first, then what the real generator draws."""

    def __init__(self, first: int) -> None:
        self.first: int | None = first

    def randint(self, a: int, b: int) -> int:
        if self.first is not None:
            port, self.first = self.first, None
            return port
        return random.SystemRandom().randint(a, b)


def test_a_port_in_use_is_passed_over(busy: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ports, "_random", Draws(busy))
    assert free_port() != busy
