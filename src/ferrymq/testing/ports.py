"""Ports for a server that a test names before it starts, or stops and starts again on the same
number: a broker process, a group member, a restart on the same data directory.

A port that ``bind(0)`` reported free goes back to the kernel's pool the moment the probe socket
closes, and any ``bind(0)`` or outgoing ``connect`` on the machine may take it: the other
pytest-xdist worker, another test run, before the server binds it or while a test has its
broker down between a kill and the restart. A client retrying such a "dead" port can even
connect to itself (TCP simultaneous open, when the kernel gives it the same port as its local
one). So ``free_port`` hands out ports below the kernel's ephemeral range
(``net.ipv4.ip_local_port_range``), which the kernel never picks by itself, and reserves each
with an exclusive ``flock`` on a file in the temporary directory, held until this process
exits: no process using ``free_port`` gets it twice, and nothing else takes it unasked.
"""

from __future__ import annotations

import fcntl
import os
import random
import socket
import tempfile
import threading
from pathlib import Path
from typing import Final

EPHEMERAL_RANGE_FILE: Final = Path("/proc/sys/net/ipv4/ip_local_port_range")
DEFAULT_EPHEMERAL: Final = (49152, 65535)
"""IANA's dynamic range, where the kernel does not say (macOS, BSD)."""
SPAN: Final = 8192
"""How many ports below the ephemeral range ``free_port`` draws from."""
GAP: Final = 4096
"""Kept free just below the ephemeral range (Kubernetes node ports end at 32767)."""
ATTEMPTS: Final = 500
LOCK_DIRECTORY: Final = Path(tempfile.gettempdir()) / "ferrymq-test-ports"

_reserved: list[int] = []
"""The lock files' descriptors: closing one would free its port for the other processes."""
_mutex = threading.Lock()
_random = random.SystemRandom()
"""Not the ``random`` module's generator, which a test may seed identically in every worker."""


def free_port(*, udp: bool = False) -> int:
    """A port on 127.0.0.1 that is free now and reserved for this process until it exits (for
    a server that must come back on the same port; with ``udp``, a UDP port, for a multicast
    discovery group)."""
    kind = socket.SOCK_DGRAM if udp else socket.SOCK_STREAM
    first, last = reservable_range()
    with _mutex:
        for _ in range(ATTEMPTS):
            port = _random.randint(first, last)
            lock = _reserve(port)
            if lock is None:
                continue
            if _bindable(port, kind):
                _reserved.append(lock)
                return port
            os.close(lock)
    raise RuntimeError(
        f"no free port between {first} and {last} after {ATTEMPTS} tries: are many test runs "
        f"holding ports (locks in {LOCK_DIRECTORY})?"
    )


def reservable_range() -> tuple[int, int]:
    """The ports ``free_port`` draws from: below the kernel's ephemeral range, else above it."""
    low, high = _ephemeral_range()
    if low - GAP - SPAN >= 1024:
        return low - GAP - SPAN, low - GAP - 1
    if high + SPAN <= 65535:
        return high + 1, high + SPAN
    raise RuntimeError(
        f"the ephemeral port range {low}-{high} leaves no room for test ports: narrow it "
        f"({EPHEMERAL_RANGE_FILE})"
    )


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = (int(part) for part in EPHEMERAL_RANGE_FILE.read_text().split())
    except (OSError, ValueError):
        return DEFAULT_EPHEMERAL
    return low, high


def _reserve(port: int) -> int | None:
    """The descriptor of ``port``'s lock file, locked; None if another process holds it."""
    try:
        LOCK_DIRECTORY.mkdir(mode=0o777, exist_ok=True)
        lock = os.open(LOCK_DIRECTORY / f"{port}.lock", os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        return None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(lock)
        return None
    return lock


def _bindable(port: int, kind: int) -> bool:
    """Whether nothing uses ``port`` on any local address (without ``SO_REUSEADDR``, so a port
    with connections in TIME_WAIT is passed over too)."""
    with socket.socket(socket.AF_INET, kind) as probe:
        try:
            probe.bind(("", port))
        except OSError:
            return False
    return True
