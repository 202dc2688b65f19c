"""Broker connections whose elements are cut short, while attaching, by the broker stopping or
the connection ending: every element task's end is read, so asyncio never reports "Task
exception was never retrieved" (logged at garbage collection by the ``asyncio`` logger).

The elements here clean up the way the real ones do (closing their own ``vm://`` client,
detaching a link), and that cleanup fails: their task then ends with that error, not with the
cancellation, after the connection has stopped looking at it."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from ferrymq.config.broker_connections import AmqpConnectionConfig, SenderConfig
from ferrymq.connections import service as connections_service
from ferrymq.connections.api import ConnectionElement, LinkOptions, LocalSide, RemoteConnection
from ferrymq.connections.broker_connection import ConnectionState
from ferrymq.testing import wait_until
from tests.connections import scripted_peer
from tests.connections.runtime_support import broker_with_connections, connection
from tests.connections.scripted_peer import ScriptedPeer

NEVER_RETRIEVED = "exception was never retrieved"
SENDERS = (SenderConfig(address_match="a"), SenderConfig(address_match="b"))


class CleanupFails:
    """Attaches one sender link; cut short, its cleanup fails with ``ConnectionError``."""

    def __init__(self, name: str, address: str) -> None:
        self.name = name
        self.address = address

    async def run(self, remote: RemoteConnection) -> None:
        try:
            await remote.attach_sender(LinkOptions(name=self.name, target=self.address))
            await remote.closed()
        finally:
            await asyncio.sleep(0)  # a cleanup that awaits (closing its own client)
            raise ConnectionError(f"{self.name}: lost while closing")

    def statistics(self) -> dict[str, object]:
        return {}


def cleanup_fails(
    connection: AmqpConnectionConfig, local: LocalSide
) -> Sequence[ConnectionElement]:
    return [
        CleanupFails(f"{connection.name}.{n}", element.address_match or "q")
        for n, element in enumerate(connection.elements)
        if isinstance(element, SenderConfig)
    ]


@pytest.fixture(autouse=True)
def failing_cleanups(monkeypatch: pytest.MonkeyPatch) -> None:
    reference = f"{__name__}:cleanup_fails"
    monkeypatch.setitem(connections_service.ELEMENT_FACTORIES, SenderConfig, reference)


def never_answer_attaches(monkeypatch: pytest.MonkeyPatch, peer: ScriptedPeer) -> None:
    """The peer records each attach and never answers it: the elements stay attaching."""

    def record(session: Any, link: Any) -> None:
        attach = scripted_peer.Attach(link.name, link.is_sender, None, (), {}, False, {})
        peer.attaches.append(attach)

    monkeypatch.setattr(scripted_peer._Session, "_on_attach", record)


def unretrieved(caplog: pytest.LogCaptureFixture) -> list[str]:
    gc.collect()
    return [r.getMessage() for r in caplog.records if NEVER_RETRIEVED in r.getMessage()]


async def test_broker_stopped_while_elements_attach(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="asyncio")
    async with ScriptedPeer() as peer:
        never_answer_attaches(monkeypatch, peer)
        async with broker_with_connections(tmp_path, connection("c", peer.url, *SENDERS)):
            await wait_until(lambda: len(peer.attaches) == 2, 10, "both attaches sent")
        # the broker stopped with both elements waiting for their attach
    assert unretrieved(caplog) == []


async def test_remote_lost_while_elements_attach(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="asyncio")
    async with ScriptedPeer() as peer:
        never_answer_attaches(monkeypatch, peer)
        config = connection("c", peer.url, *SENDERS, retry_interval_ms=60_000)
        async with broker_with_connections(tmp_path, config) as broker:
            conn = broker.broker_connections.get("c")
            await wait_until(lambda: len(peer.attaches) == 2, 10, "both attaches sent")
            await peer.drop_all()
            await wait_until(lambda: conn.state is ConnectionState.RETRYING, 10, "retrying")
            assert "the peer closed the connection" in (conn.last_error or "")
            assert unretrieved(caplog) == []
    assert unretrieved(caplog) == []
