"""Brokers to kill and restart, addresses where nothing listens, and a watcher of failovers.

Broker processes start in a worker thread (``BrokerProcess.start`` blocks until the broker
prints that it started) so the test's event loop keeps serving the clients meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from ferrymq.broker import Broker
from ferrymq.client import Connection
from ferrymq.testing import BrokerProcess, broker_config, free_port, running_broker, wait_until
from ferrymq.testing.scripted import ScriptedStompServer


class Brokers:
    """Separate ``ferrymq broker`` processes, each with its own data directory and port."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.started: list[BrokerProcess] = []

    async def start(self, name: str) -> BrokerProcess:
        process = BrokerProcess(self.root / name, name=name)
        self.started.append(process)
        return await asyncio.to_thread(process.start)

    @staticmethod
    async def restart(process: BrokerProcess) -> BrokerProcess:
        """Start ``process`` again on its data directory and port (after ``kill``)."""
        return await asyncio.to_thread(process.start)

    def kill_all(self) -> None:
        for process in self.started:
            process.kill()


@pytest.fixture
def brokers(tmp_path: Path) -> Iterator[Brokers]:
    started = Brokers(tmp_path)
    try:
        yield started
    finally:
        started.kill_all()


@pytest.fixture
def dead_url() -> str:
    """A URL where nothing listens (a port that was free a moment ago)."""
    return f"tcp://127.0.0.1:{free_port()}"


@pytest.fixture
async def persistent_broker(tmp_path: Path) -> AsyncIterator[Broker]:
    """A persistent broker in this process, for the tests that fail the network, not it."""
    async with running_broker(broker_config(tmp_path / "inproc")) as started:
        yield started


@pytest.fixture
def proxy(persistent_broker: Broker) -> Iterator[ScriptedStompServer]:
    """A front for the broker that relays everything until the test freezes or drops it."""
    with ScriptedStompServer(persistent_broker.stomp_ports[0], []) as started:
        yield started


class Watcher:
    """Records a connection's interruptions and resumptions, with loop times, as events."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.interrupted_at: list[float] = []
        self.resumed_at: list[float] = []
        self.resumed_urls: list[str] = []
        self._changed = asyncio.Event()
        connection.on_interrupted(self._on_interrupted)
        connection.on_resumed(self._on_resumed)

    def _on_interrupted(self) -> None:
        self.interrupted_at.append(asyncio.get_running_loop().time())
        self._changed.set()

    def _on_resumed(self) -> None:
        self.resumed_at.append(asyncio.get_running_loop().time())
        self.resumed_urls.append(self.connection.remote_url)
        self._changed.set()

    async def interruptions(self, count: int, within_s: float = 15.0) -> None:
        await wait_until(
            lambda: len(self.interrupted_at) >= count,
            within_s,
            f"{count} interruption(s)",
            changed=self._changed,
        )

    async def resumptions(self, count: int, within_s: float = 15.0) -> None:
        await wait_until(
            lambda: len(self.resumed_at) >= count,
            within_s,
            f"{count} resumption(s)",
            changed=self._changed,
        )
