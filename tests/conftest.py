"""Fixtures shared by every test package: brokers in this process and as separate processes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from ferrymq.broker import Broker
from ferrymq.testing import BrokerProcess, broker_config, running_broker

pytest_plugins = ["tests.postgres"]


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Broker]:
    """A persistent broker (SQLite store in ``tmp_path``) in this process, on a free port."""
    async with running_broker(broker_config(tmp_path / "data")) as started:
        yield started


@pytest.fixture
async def memory_broker(tmp_path: Path) -> AsyncIterator[Broker]:
    """A non-persistent broker in this process."""
    async with running_broker(broker_config(tmp_path / "data", persistent=False)) as started:
        yield started


@pytest.fixture
def broker_process(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A ``ferrymq broker`` child process on a free port, stopped after the test."""
    process = BrokerProcess(tmp_path / "data").start()
    try:
        yield process
    finally:
        process.kill()
