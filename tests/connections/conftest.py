"""Fixtures shared by the broker-connection tests.

``scripted_peer``: a started ``ScriptedPeer`` (an AMQP 1.0 endpoint whose answers the test
scripts). ``tiny_senders``: ``<sender>`` children served by ``TinyElement`` instead of the real
sender element, for tests of the runtime itself. Brokers with broker connections:
``runtime_support.broker_with_connections`` and ``runtime_support.connection``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.connections.runtime_support import use_tiny_senders
from tests.connections.scripted_peer import ScriptedPeer


@pytest.fixture
async def scripted_peer() -> AsyncIterator[ScriptedPeer]:
    async with ScriptedPeer() as peer:
        yield peer


@pytest.fixture
def tiny_senders(monkeypatch: pytest.MonkeyPatch) -> None:
    use_tiny_senders(monkeypatch)
