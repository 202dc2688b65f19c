"""``GroupCommitWriter``: the writer thread and group commit that ``SqliteStore`` and
``PostgresStore`` share, over a small ``Database`` protocol for what differs between them.

All database work runs on one thread owned by the writer, so the event loop never waits for a
driver, a lock or an fsync.  ``write`` and ``load`` only enqueue a job.  The thread takes the
first pending job, drains everything queued meanwhile, and hands the whole group to the database
as one transaction with one commit: one fsync (one WAL flush) makes every batch of the group
durable.  Consecutive batches merge into one ``WritePlan`` (``coalesce``), so a row is written at
most once per group.  The group's futures are then settled by a single ``call_soon_threadsafe``,
in submission order.

A load in the middle of a group runs inside the group's transaction at its position, so it sees
the writes submitted before it and none after; its result is released only once that commit
succeeded.  A group of loads alone opens no transaction and counts no commit.

A failed transaction fails every future of its group and breaks the store: later writes and loads
fail with the same error instead of building on state that may not be on disk.  A lost lock
(``LockLostError``) keeps its type, so the broker can tell a deposed master from a broken disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias, get_args

from ferrymq.store.base import (
    LockLostError,
    Recovery,
    StoredMessage,
    StoreError,
    StoreOp,
    StoreStatistics,
)
from ferrymq.store.coalesce import WritePlan

LoadRequest: TypeAlias = tuple[str, int, int]
"""``(container, from_seq, limit)``."""
Step: TypeAlias = WritePlan | LoadRequest
"""One step of a group: a plan to apply or a load to answer, in submission order."""

REFUSAL = "the store refuses further writes"
"""How every message that breaks a store ends."""


class Database(Protocol):
    """An open store database as the writer thread drives it; used from that thread only."""

    def run_group(self, steps: Sequence[Step]) -> list[list[StoredMessage]]:
        """Apply the plans and answer the loads in order, in one transaction that is committed
        before returning (none when there is no plan); the loads' results in order.  Raises
        ``LockLostError`` when fenced out, anything else when the database failed."""
        ...

    def rollback(self) -> None:
        """Roll back a failed group, if its transaction is still open."""
        ...

    def explain(self, error: Exception) -> Exception:
        """After a failed group was rolled back: the error that breaks the store, which may say
        more than ``error`` (a lost connection that turns out to be a lost lease)."""
        ...

    def close(self) -> None: ...


Opener: TypeAlias = Callable[[], tuple[Database, Recovery]]
"""Opens and recovers the database on the writer thread; raises ``StoreError`` (a subclass
when it matters) with the message ``start`` should raise."""


@dataclass(slots=True)
class _Write:
    ops: Sequence[StoreOp]
    future: asyncio.Future[None]


@dataclass(slots=True)
class _Load:
    request: LoadRequest
    future: asyncio.Future[list[StoredMessage]]


@dataclass(slots=True)
class _Stop:
    future: asyncio.Future[None]


@dataclass(frozen=True, slots=True)
class _Failed:
    """A future's failure, raised on the loop (exceptions carry tracebacks; keep them there)."""

    error: type[StoreError]
    message: str


_STORE_OPS: tuple[type, ...] = get_args(StoreOp)
_Job: TypeAlias = _Write | _Load | _Stop
_Outcome: TypeAlias = tuple["asyncio.Future[Any]", object]
"""A future and its result, or the ``_Failed`` to fail it with."""


class _State(enum.Enum):
    NEW = "new"
    RUNNING = "running"
    STOPPED = "stopped"


def _settle(outcomes: list[_Outcome]) -> None:
    for future, outcome in outcomes:
        if future.done():  # cancelled by its caller; the write happened anyway
            continue
        if isinstance(outcome, _Failed):
            future.set_exception(outcome.error(outcome.message))
        else:
            future.set_result(outcome)


def _steps(work: list[_Write | _Load]) -> list[Step]:
    """Consecutive batches merge into one plan; a load splits them, and empty plans go."""
    steps: list[Step] = []
    plan: WritePlan | None = None
    for job in work:
        if isinstance(job, _Load):
            steps.append(job.request)
            plan = None
            continue
        if plan is None:
            plan = WritePlan()
            steps.append(plan)
        plan.add(job.ops)
    return [step for step in steps if not isinstance(step, WritePlan) or step]


class GroupCommitWriter:
    """The ``MessageStore`` mechanics of a store whose database blocks: ``name`` (the database
    file or url) names the thread and the errors.  A store calls ``claim`` and then ``start``
    once, and forwards ``stop``, ``write``, ``load`` and ``statistics``."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._state = _State.NEW
        self._queue: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._broken: _Failed | None = None
        # Written by one thread each; reads are racy but never torn (plain ints and floats).
        self._submitted_ops = 0
        self._finished_ops = 0
        self._applied_ops = 0
        self._commits = 0
        self._last_commit_ms = 0.0
        self._total_commit_ms = 0.0

    def claim(self) -> bool:
        """Take the one start a store gets; False if it was taken before.  The store stays
        stopped until ``start`` succeeds, so a failed start cannot be retried on this object."""
        if self._state is not _State.NEW:
            return False
        self._state = _State.STOPPED
        return True

    async def start(self, opener: Opener, *, on_exit: Callable[[], None] | None = None) -> Recovery:
        """Run ``opener`` on a new writer thread and return its recovery, or raise its
        ``StoreError``.  ``on_exit`` runs once when the thread ends (after closing the database,
        or after a failed open), or here if the thread cannot start: the SQLite store releases
        its lock file there."""
        assert self._state is _State.STOPPED, "claim() first"
        assert self._thread is None, "a writer starts once"
        loop = self._loop = asyncio.get_running_loop()
        opened: asyncio.Future[Recovery] = loop.create_future()
        self._thread = threading.Thread(
            target=self._run,
            args=(opened, opener, on_exit),
            name=f"ferrymq-store {self._name}",
            daemon=True,
        )
        try:
            self._thread.start()
        except BaseException:
            if on_exit is not None:
                on_exit()
            raise
        try:
            recovery = await asyncio.shield(opened)
        except StoreError:
            self._thread.join()  # it ran on_exit and returned
            raise
        except asyncio.CancelledError:
            self._queue.put(_Stop(loop.create_future()))  # close it once it has opened
            raise
        self._state = _State.RUNNING
        return recovery

    async def stop(self) -> None:
        """Let queued writes finish, close the database, and join the thread."""
        if self._state is not _State.RUNNING:
            return
        self._state = _State.STOPPED
        assert self._loop is not None
        assert self._thread is not None
        stopped: asyncio.Future[None] = self._loop.create_future()
        self._queue.put(_Stop(stopped))
        await asyncio.shield(stopped)
        self._thread.join()  # it has nothing left to do but return

    def write(self, ops: Sequence[StoreOp]) -> asyncio.Future[None]:
        ops = tuple(ops)  # the caller may reuse its list before the writer thread reads it
        for op in ops:
            if not isinstance(op, _STORE_OPS):
                raise TypeError(f"not a store operation: {op!r}")
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        refused = self._refusal()
        if refused is not None:
            future.set_exception(refused.error(refused.message))
            return future
        self._submitted_ops += len(ops)
        self._queue.put(_Write(ops, future))
        return future

    async def load(self, container: str, from_seq: int, limit: int) -> list[StoredMessage]:
        refused = self._refusal()
        if refused is not None:
            raise refused.error(refused.message)
        if limit <= 0:
            return []
        future: asyncio.Future[list[StoredMessage]] = asyncio.get_running_loop().create_future()
        self._queue.put(_Load((container, from_seq, limit), future))
        return await future

    def statistics(self) -> StoreStatistics:
        return StoreStatistics(
            commits=self._commits,
            operations=self._applied_ops,
            last_commit_ms=self._last_commit_ms,
            total_commit_ms=self._total_commit_ms,
            pending_operations=self._submitted_ops - self._finished_ops,
        )

    def _refusal(self) -> _Failed | None:
        if self._broken is not None:
            return self._broken
        if self._state is not _State.RUNNING:
            return _Failed(StoreError, f"store {self._name} is not running ({self._state.value})")
        return None

    # --- writer thread -------------------------------------------------------------------------

    def _post(self, outcomes: list[_Outcome]) -> None:
        assert self._loop is not None
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is left waiting
            self._loop.call_soon_threadsafe(_settle, outcomes)

    def _run(
        self,
        opened: asyncio.Future[Recovery],
        opener: Opener,
        on_exit: Callable[[], None] | None,
    ) -> None:
        try:
            try:
                db, recovery = opener()
            except Exception as e:
                self._post([(opened, self._open_failure(e))])
                return
            self._post([(opened, recovery)])
            stop = None
            while stop is None:
                jobs = [self._queue.get()]
                while True:
                    try:
                        jobs.append(self._queue.get_nowait())
                    except queue.Empty:
                        break
                stop = self._run_group(db, jobs)
            with contextlib.suppress(Exception):  # a dead connection has nothing left to close
                db.close()
            self._post([(stop.future, None)])
        finally:
            if on_exit is not None:
                on_exit()

    def _open_failure(self, error: Exception) -> _Failed:
        if isinstance(error, StoreError):
            return _Failed(type(error), str(error))
        return _Failed(StoreError, f"cannot open store database {self._name}: {error}")

    def _run_group(self, db: Database, jobs: list[_Job]) -> _Stop | None:
        """Apply a drained group in one transaction; settle its futures with one loop call."""
        stop = next((job for job in jobs if isinstance(job, _Stop)), None)
        work = [job for job in jobs if not isinstance(job, _Stop)]
        if not work:
            return stop
        operations = sum(len(job.ops) for job in work if isinstance(job, _Write))
        if self._broken is None:
            outcomes = self._transact(db, work)
            if self._broken is None:  # committed
                self._applied_ops += operations
        else:
            outcomes = [(job.future, self._broken) for job in work]
        self._finished_ops += operations
        self._post(outcomes)
        return stop

    def _transact(self, db: Database, work: list[_Write | _Load]) -> list[_Outcome]:
        started = time.perf_counter()
        steps = _steps(work)
        try:
            results = iter(db.run_group(steps))
        except Exception as e:
            with contextlib.suppress(Exception):
                db.rollback()
            self._broken = self._failure(db.explain(e))
            return [(job.future, self._broken) for job in work]
        if any(isinstance(step, WritePlan) for step in steps):
            elapsed_ms = (time.perf_counter() - started) * 1000.0
            self._commits += 1
            self._last_commit_ms = elapsed_ms
            self._total_commit_ms += elapsed_ms
        return [(job.future, next(results) if isinstance(job, _Load) else None) for job in work]

    def _failure(self, error: Exception) -> _Failed:
        if isinstance(error, LockLostError):
            message = str(error)  # the lease check's own message already ends with REFUSAL
            return _Failed(
                LockLostError, message if message.endswith(REFUSAL) else f"{message}; {REFUSAL}"
            )
        return _Failed(
            StoreError,
            f"store database {self._name} failed ({type(error).__name__}: {error}); {REFUSAL}",
        )
