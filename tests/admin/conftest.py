from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from ferrymq.admin import AdminServer
from tests.admin.fake_broker import FakeBroker

StartServer = Callable[..., Awaitable[AdminServer]]


@pytest.fixture
def broker() -> FakeBroker:
    return FakeBroker()


@pytest.fixture
async def start_server(broker: FakeBroker) -> AsyncIterator[StartServer]:
    """Start an ``AdminServer`` on 127.0.0.1 port 0 over ``broker``; stopped after the test."""
    started: list[AdminServer] = []

    async def start(**options: Any) -> AdminServer:
        server = AdminServer(options.pop("source", broker), "127.0.0.1", 0, **options)
        await server.start()
        started.append(server)
        return server

    yield start
    for server in reversed(started):
        await server.stop()


@pytest.fixture
async def server(start_server: StartServer) -> AdminServer:
    return await start_server()
