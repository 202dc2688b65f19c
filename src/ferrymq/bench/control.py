"""How the runner and its worker processes talk: a queue of reports and a few shared flags.

Each worker puts ``(kind, role, payload)`` on ``reports``: ``ready`` once subscribed (or
connected), ``warm`` once the warm-up messages are through, ``done`` with its result, or
``error`` with a message. The runner answers through events: ``go`` starts the warm-up,
``measure`` starts the clock, ``abort`` stops everyone. In duration mode the producer publishes
how many messages it sent in ``total`` so that the consumers know when they have them all.
``counts`` is where the runner reads progress: slot 0 is what the producer sent, slot 1 + i what
consumer i received; each slot has one writer, so it needs no lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import traceback
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from multiprocessing.context import SpawnContext
from multiprocessing.queues import Queue
from multiprocessing.sharedctypes import Synchronized
from multiprocessing.synchronize import Event
from typing import Any, TypeVar

READY = "ready"
WARM = "warm"
DONE = "done"
ERROR = "error"

ABORT_POLL_S = 0.1
T = TypeVar("T")


@dataclass(frozen=True)
class Control:
    reports: Queue[tuple[str, str, Any]]
    go: Event
    measure: Event
    abort: Event
    total: Synchronized[int]
    counts: Any
    """A shared ``ctypes`` array of int64, without a lock (see above)."""

    @classmethod
    def create(cls, ctx: SpawnContext, consumers: int = 1) -> Control:
        return cls(
            ctx.Queue(),
            ctx.Event(),
            ctx.Event(),
            ctx.Event(),
            ctx.Value("q", -1),
            ctx.Array("q", 1 + consumers, lock=False),
        )

    def received(self) -> list[int]:
        """What each consumer has received so far."""
        return list(self.counts[1:])

    def report(self, kind: str, role: str, payload: Any = None) -> None:
        self.reports.put((kind, role, payload))

    def announced_total(self) -> int | None:
        value = self.total.value
        return None if value < 0 else int(value)


class AbortedError(Exception):
    """The runner asked every worker to stop."""


async def wait_event(event: Event, abort: Event) -> None:
    """Wait for a cross-process ``event`` without blocking the loop; raise if aborted first."""
    while not event.is_set():
        if abort.is_set():
            raise AbortedError
        await asyncio.sleep(0.005)


def process_cpu_s() -> float:
    """CPU seconds (user + system) this process has used."""
    return time.process_time()


def broker_cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system, all threads) of another process, from /proc; None if unknown."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # After the command: state is field 3, utime and stime are fields 14 and 15 (proc(5)).
    ticks = int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def run_worker(role: str, control: Control, main: Callable[[], Awaitable[Any]]) -> None:
    """A worker process's body: run ``main`` on uvloop (if installed), report its result.

    A watcher cancels ``main`` when the runner sets ``abort``, so no worker outlives a run.
    """

    async def guarded() -> Any:
        task = asyncio.ensure_future(main())
        while not task.done():
            if control.abort.is_set():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                raise AbortedError
            await asyncio.wait({task}, timeout=ABORT_POLL_S)
        return task.result()

    try:
        result = _run_loop(guarded())
    except AbortedError:
        control.report(ERROR, role, "aborted by the runner")
    except BaseException as exc:  # everything goes back to the runner
        control.report(ERROR, role, f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
    else:
        control.report(DONE, role, result)


def _run_loop(coro: Coroutine[Any, Any, T]) -> T:
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)
