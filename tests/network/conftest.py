"""What several network test modules share: reading what consumers received, and waiting for a
state that must then hold for a bounded quiet period (so a count is final, not a snapshot)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping, Sequence

from ferrymq.client import Message
from ferrymq.testing import wait_until

BROKER_PATH = "JMSActiveMQBrokerPath"
WAIT_S = 15.0
QUIET_S = 0.5
"""How long nothing may change for a state to count as settled (a bounded quiet period)."""


def counts(received: Mapping[str, Sequence[object]]) -> dict[str, int]:
    return {name: len(messages) for name, messages in received.items()}


def paths(messages: Iterable[Message]) -> set[str | None]:
    return {m.headers.get(BROKER_PATH) for m in messages}


async def quiet(predicate: Callable[[], bool], what: str) -> None:
    """``predicate`` holds now and keeps holding for a quiet period."""
    deadline = time.monotonic() + QUIET_S
    while time.monotonic() < deadline:
        assert predicate(), f"no longer true during the quiet period: {what}"
        await asyncio.sleep(0.02)


async def settle(predicate: Callable[[], bool], what: str) -> None:
    """Until ``predicate`` holds, and then for a quiet period."""
    await wait_until(predicate, WAIT_S, what)
    await quiet(predicate, what)
