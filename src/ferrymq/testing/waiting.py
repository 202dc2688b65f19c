"""Bounded waits for tests: until a condition holds, or fail naming what never happened.

A test waits on a broker's statistics, a listener's records or a child's output, things that
change on another task or thread. Every wait here has a bound, so a broken broker fails the
test in seconds instead of hanging the suite, and the failure says what was awaited and, with
``detail``, the state it was left in.

There is one of each: ``wait_until`` for asyncio tests and ``wait_until_blocking`` for threads
(stomp.py listeners, broker processes). Both poll by default; when the code that changes the
state also signals it (an ``asyncio.Event`` set, a ``threading.Condition`` notified), pass it
as ``changed`` and the wait wakes on the signal instead of sleeping.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable

POLL_S = 0.02
"""Between two looks at a condition nothing signals: short next to any bound a test sets."""
RECHECK_S = 0.1
"""With a ``threading.Condition``, how often the condition is looked at even without a
notification, in case a change is made without one."""


class WaitTimeoutError(AssertionError):
    """A bounded wait ran out: the test fails.

    An ``AssertionError`` rather than a ``TimeoutError`` on purpose: ``TimeoutError`` is an
    ``OSError``, and test clients that retry on ``OSError`` (a dropped socket) would swallow a
    failed wait and retry instead of failing.
    """


def _timed_out(what: str, timeout_s: float, detail: Callable[[], str] | None) -> WaitTimeoutError:
    message = f"waited {timeout_s} s for {what}"
    if detail is not None:
        message += f"; {detail()}"
    return WaitTimeoutError(message)


async def wait_until(
    predicate: Callable[[], bool],
    timeout_s: float,
    what: str,
    *,
    changed: asyncio.Event | None = None,
    detail: Callable[[], str] | None = None,
    interval_s: float = POLL_S,
) -> None:
    """Until ``predicate()`` holds; ``WaitTimeoutError`` naming ``what`` after ``timeout_s``.

    ``changed``: an event the state's owner sets on every change; the wait clears it and
    sleeps on it instead of polling every ``interval_s``. ``detail``: called at the timeout,
    its text is added to the failure (the counts so far, the events seen).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not predicate():
        remaining = deadline - loop.time()
        if remaining <= 0:
            raise _timed_out(what, timeout_s, detail)
        if changed is None:
            await asyncio.sleep(min(interval_s, remaining))
            continue
        changed.clear()  # no await since predicate() ran: no set() can be lost
        with contextlib.suppress(TimeoutError):  # the loop looks once more, then fails
            async with asyncio.timeout(remaining):
                await changed.wait()


def wait_until_blocking(
    predicate: Callable[[], bool],
    timeout_s: float,
    what: str,
    *,
    changed: threading.Condition | None = None,
    detail: Callable[[], str] | None = None,
    interval_s: float = POLL_S,
) -> None:
    """``wait_until`` for a thread: blocks the caller (an asyncio test runs it through
    ``asyncio.to_thread``).

    ``changed``: the condition whose lock guards the state and which is notified on every
    change; ``predicate`` is then evaluated holding that lock.
    """
    deadline = time.monotonic() + timeout_s
    if changed is None:
        while not predicate():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _timed_out(what, timeout_s, detail)
            time.sleep(min(interval_s, remaining))
        return
    with changed:
        while not predicate():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _timed_out(what, timeout_s, detail)
            changed.wait(min(RECHECK_S, remaining))
