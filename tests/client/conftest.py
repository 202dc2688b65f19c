"""A real broker on 127.0.0.1 port 0 for each test, and small helpers to look at its queues.

The client tests check the protocol, not the store, so ``url`` and ``conn`` lead to the root
``memory_broker`` (non-persistent); a test that needs a store starts its own broker
(``broker_config(..., persistent=True)``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from ferrymq.broker import Broker
from ferrymq.client import Connection, connect


@pytest.fixture
def url(memory_broker: Broker) -> str:
    return memory_broker.stomp_urls[0]


@pytest.fixture
async def conn(url: str) -> AsyncIterator[Connection]:
    connection = await connect(url)
    yield connection
    await connection.disconnect()


async def browse(url: str, queue: str) -> list[str]:
    """The bodies on ``queue`` now, in order, without consuming them (a browser subscription)."""
    async with connect(url) as connection:
        subscription = await connection.subscribe(queue, browser=True)
        return [message.text async for message in subscription]
