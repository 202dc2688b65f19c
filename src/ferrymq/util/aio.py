"""asyncio helpers that the event loop's own do not get right on Python 3.11."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, Final


async def wait_event(event: asyncio.Event, timeout_s: float | None) -> bool:
    """Wait until ``event`` is set or ``timeout_s`` passed (None: no limit); True if it is set.

    3.11's ``asyncio.wait_for`` loses a cancellation that arrives in the loop turn its inner
    future completes (the result wins and the cancel is gone), which left a failover
    transport's standby keeper waiting for ever after its owner cancelled it;
    ``asyncio.wait`` always lets the cancellation through.
    """
    if event.is_set():
        return True
    waiter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait([waiter], timeout=timeout_s)
    finally:
        waiter.cancel()
    return event.is_set()


CLEANUP_ON_CANCEL_S: Final = 2.0
"""How long ``bounded`` gives a cancelled task's cleanup by default."""


async def bounded(
    cleanup: Coroutine[Any, Any, object], timeout_s: float = CLEANUP_ON_CANCEL_S
) -> bool:
    """Run ``cleanup`` for at most ``timeout_s``; True if it finished without an error.

    For the cleanup of a task that is being cancelled (an UNSUBSCRIBE, an ABORT): it must not
    hold the cancellation for ever, waiting for a broker that is not there, and a further
    cancellation of the caller still goes through (``asyncio.wait``). What ``cleanup`` raises
    is dropped: the cancellation propagating says more.
    """
    task = asyncio.ensure_future(cleanup)
    try:
        await asyncio.wait([task], timeout=timeout_s)
    finally:
        if not task.done():
            task.cancel()
            await asyncio.wait([task])
    return not task.cancelled() and task.exception() is None
