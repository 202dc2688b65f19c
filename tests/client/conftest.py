"""A real broker on 127.0.0.1 port 0 for each test, and small helpers to look at its queues."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from ferrymq.broker import Broker
from ferrymq.client import Connection, connect
from ferrymq.config.cli import config_from_flags
from ferrymq.config.model import BrokerConfig


def broker_config(data_dir: Path, *, persistent: bool = False) -> BrokerConfig:
    return config_from_flags(
        name="client-test",
        data_dir=data_dir,
        listen=["stomp://127.0.0.1:0"],
        admin="off",
        persistent=persistent,
    )


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Broker]:
    broker = Broker(broker_config(tmp_path))
    await broker.start()
    yield broker
    await broker.stop()


@pytest.fixture
def url(broker: Broker) -> str:
    return broker.stomp_urls[0]


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


async def wait_until(condition: Callable[[], bool], within_s: float = 5.0) -> None:
    """Poll ``condition`` (a statistic, which has no event to wait on) until true; fail the
    test at the deadline."""
    async with asyncio.timeout(within_s):
        while not condition():  # noqa: ASYNC110
            await asyncio.sleep(0.01)
