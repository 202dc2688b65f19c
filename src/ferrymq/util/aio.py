"""asyncio helpers that the event loop's own do not get right on Python 3.11."""

from __future__ import annotations

import asyncio


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


def leaf_exceptions(error: BaseException) -> list[BaseException]:
    """The exceptions inside ``error``'s (nested) exception groups, in order; ``[error]`` for a
    plain one.  A task group's own text ("unhandled errors in a TaskGroup (1 sub-exception)")
    tells a user nothing: its leaves say what happened."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaf_exceptions(inner)]
    return [error]
