"""A broker process for fault tests, whose output pipe is closed after every death."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ferrymq.testing import BrokerProcess

from .restarts import reap


@pytest.fixture
def killable_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A ``ferrymq broker`` process on a free port; SIGKILLed after the test."""
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        yield broker
    finally:
        broker.kill()
        reap(broker)
