"""``wait_until`` and ``wait_until_blocking``: each returns once the condition holds, wakes on
the signal it is given, and fails at its bound naming what it waited for."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from ferrymq.testing import WaitTimeoutError, wait_until, wait_until_blocking


async def test_returns_as_soon_as_the_condition_holds() -> None:
    loop = asyncio.get_running_loop()
    done = False

    def finish() -> None:
        nonlocal done
        done = True

    loop.call_later(0.05, finish)
    started = loop.time()
    await wait_until(lambda: done, 5, "done")
    assert loop.time() - started < 1


async def test_fails_at_the_bound_naming_what_and_the_detail() -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(WaitTimeoutError, match=r"waited 0\.1 s for the moon; 3 seen"):
        await wait_until(lambda: False, 0.1, "the moon", detail=lambda: "3 seen")
    assert loop.time() - started >= 0.1


async def test_wakes_on_the_event_it_is_given() -> None:
    changed = asyncio.Event()
    seen: list[int] = []

    async def produce() -> None:
        for n in range(3):
            await asyncio.sleep(0.01)
            seen.append(n)
            changed.set()

    producer = asyncio.create_task(produce())
    await wait_until(lambda: len(seen) == 3, 5, "3 items", changed=changed, interval_s=60)
    await producer


async def test_a_wait_timeout_is_not_an_os_error() -> None:
    """Clients that retry on ``OSError`` (a dropped socket) must not swallow a failed wait."""
    assert issubclass(WaitTimeoutError, AssertionError)
    assert not issubclass(WaitTimeoutError, OSError)
    with pytest.raises(AssertionError, match="nothing"):
        await wait_until(lambda: False, 0, "nothing")


def test_blocking_wait_wakes_on_the_condition_it_is_given() -> None:
    changed = threading.Condition()
    items: list[int] = []

    def produce() -> None:
        for n in range(3):
            time.sleep(0.01)
            with changed:
                items.append(n)
                changed.notify_all()

    thread = threading.Thread(target=produce)
    thread.start()
    wait_until_blocking(lambda: len(items) == 3, 5, "3 items", changed=changed)
    thread.join()
    assert items == [0, 1, 2]


def test_blocking_wait_fails_at_the_bound() -> None:
    started = time.monotonic()
    with pytest.raises(WaitTimeoutError, match=r"waited 0\.1 s for a change"):
        wait_until_blocking(lambda: False, 0.1, "a change")
    assert time.monotonic() - started >= 0.1
    with pytest.raises(WaitTimeoutError, match="never"):
        wait_until_blocking(lambda: False, 0.05, "never", changed=threading.Condition())
