"""``SqliteStore``: the embedded default store, SQLite in WAL mode with group commit.

All database work runs on one writer thread owned by the store, so the event loop never waits for
SQLite or fsync.  ``write`` and ``load`` only enqueue a job.  The writer takes the first pending
job, drains everything queued meanwhile, and applies it as one transaction with one commit: one
fsync makes every batch of the group durable.  The group's futures are then settled by a single
``call_soon_threadsafe``, in submission order.

A load in the middle of a group runs inside the group's transaction at its position, so it sees the
writes submitted before it and none after; its result is released only once that commit succeeded.

A failed transaction fails every future of its group and breaks the store: later writes and loads
fail with ``StoreError`` instead of building on state that may not be on disk.

The directory is guarded by ``<dir>/lock`` (KahaDB's name), taken in ``start`` and released by the
writer thread after it closed the database.  The database itself is held in SQLite's EXCLUSIVE
locking mode from open to close, and fenced by an epoch row (``sqlite_db``).  A write group runs
``fence`` (the master/slave locker's cheap check) -> ``BEGIN IMMEDIATE`` -> the epoch
check-and-write -> apply -> ``fence`` again -> ``COMMIT``.  A database that another process holds
makes ``start`` raise ``StoreBusyError`` after ``BUSY_TIMEOUT_S``.

**Test hook.**  ``FERRYMQ_TEST_HOLD_BEFORE_COMMIT=<path>`` (read once, by ``start``): while the file
at ``<path>`` exists, a write group that has applied its writes stops before its final fence
check and ``COMMIT``, writes ``<path>.held`` (removed again on resuming) and waits until
``<path>`` is removed, so a process test can hold a master exactly there.  Unset, nothing is held.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias, get_args

from ferrymq.store.base import (
    DEFAULT_PRODUCER_ID_WINDOW,
    LockLostError,
    Recovery,
    StoreBusyError,
    StoredMessage,
    StoreError,
    StoreOp,
    StoreStatistics,
)
from ferrymq.store.coalesce import WritePlan
from ferrymq.store.lockfile import LockFile
from ferrymq.store.sqlite_db import BUSY_TIMEOUT_S, SqliteDatabase, is_busy

log = logging.getLogger(__name__)

DATABASE_FILE = "ferrymq.db"
LOCK_FILE = "lock"
HOLD_BEFORE_COMMIT_ENV = "FERRYMQ_TEST_HOLD_BEFORE_COMMIT"
"""The test hook's environment variable (module docstring)."""
HOLD_POLL_S = 0.01
SYNCHRONOUS_MODES = frozenset({"EXTRA", "FULL", "NORMAL", "OFF"})
"""``PRAGMA synchronous``; FULL fsyncs the WAL at every commit, so a receipt survives power loss."""


@dataclass(slots=True)
class _Write:
    ops: Sequence[StoreOp]
    future: asyncio.Future[None]


@dataclass(slots=True)
class _Load:
    container: str
    from_seq: int
    limit: int
    future: asyncio.Future[list[StoredMessage]]
    result: list[StoredMessage] = field(default_factory=list)


@dataclass(slots=True)
class _Stop:
    future: asyncio.Future[None]


_STORE_OPS: tuple[type, ...] = get_args(StoreOp)
_Job: TypeAlias = _Write | _Load | _Stop
_Outcome: TypeAlias = tuple["asyncio.Future[Any]", object]
"""A future and its result, or the ``StoreError`` message (``_Failed``) to fail it with."""


@dataclass(frozen=True, slots=True)
class _Failed:
    message: str
    error: type[StoreError] = StoreError


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


class SqliteStore:
    def __init__(
        self,
        directory: Path,
        *,
        synchronous: str = "FULL",
        producer_id_window: int = DEFAULT_PRODUCER_ID_WINDOW,
        lock: bool = True,
        fence: Callable[[], None] | None = None,
    ) -> None:
        """``lock=False``: the directory's ``lock`` file is held by a master/slave locker
        instead of the store.  ``fence`` runs on the writer thread before each write
        transaction begins and again just before its commit, and raises ``LockLostError``
        when this broker no longer holds the group's lock, so a deposed master cannot write
        (it must be cheap: it runs twice per group commit)."""
        if synchronous.upper() not in SYNCHRONOUS_MODES:
            raise ValueError(f"synchronous must be one of {sorted(SYNCHRONOUS_MODES)}")
        if producer_id_window < 0:
            raise ValueError(f"producer_id_window must be >= 0, not {producer_id_window}")
        self._directory = Path(directory)
        self._path = self._directory / DATABASE_FILE
        self._synchronous = synchronous.upper()
        self._window = producer_id_window
        self._lock: LockFile | None = LockFile(self._directory / LOCK_FILE) if lock else None
        self._fence = fence
        self._hold_path: Path | None = None
        self._state = _State.NEW
        self._queue: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._broken: str | None = None
        self._broken_error: type[StoreError] = StoreError
        # Written by one thread each; reads are racy but never torn (plain ints and floats).
        self._submitted_ops = 0
        self._finished_ops = 0
        self._applied_ops = 0
        self._commits = 0
        self._last_commit_ms = 0.0
        self._total_commit_ms = 0.0

    @property
    def path(self) -> Path:
        """The database file."""
        return self._path

    async def start(self) -> Recovery:
        if self._state is not _State.NEW:
            raise StoreError(f"store {self._directory} was already started")
        self._state = _State.STOPPED  # until the database is open
        try:
            self._directory.mkdir(parents=True, exist_ok=True)
            locked = self._lock.try_acquire() if self._lock is not None else True
        except OSError as e:
            raise StoreError(f"cannot use store directory {self._directory}: {e}") from e
        if not locked:
            raise StoreError(
                f"store {self._directory} is locked by another broker "
                f"(lock file {self._directory / LOCK_FILE})"
            )
        hold = os.environ.get(HOLD_BEFORE_COMMIT_ENV)
        self._hold_path = Path(hold) if hold else None
        loop = self._loop = asyncio.get_running_loop()
        opened: asyncio.Future[Recovery] = loop.create_future()
        self._thread = threading.Thread(
            target=self._run, args=(opened,), name=f"ferrymq-store {self._path}", daemon=True
        )
        try:
            self._thread.start()
        except BaseException:
            if self._lock is not None:
                self._lock.release()
            raise
        try:
            recovery = await asyncio.shield(opened)
        except StoreError:
            self._thread.join()  # it released the lock and returned
            raise
        except asyncio.CancelledError:
            self._queue.put(_Stop(loop.create_future()))  # close it once it has opened
            raise
        self._state = _State.RUNNING
        return recovery

    async def stop(self) -> None:
        """Let queued writes finish, close the database, release the lock."""
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
            future.set_exception(self._refusal_error(refused))
            return future
        self._submitted_ops += len(ops)
        self._queue.put(_Write(ops, future))
        return future

    async def load(self, container: str, from_seq: int, limit: int) -> list[StoredMessage]:
        refused = self._refusal()
        if refused is not None:
            raise self._refusal_error(refused)
        if limit <= 0:
            return []
        future: asyncio.Future[list[StoredMessage]] = asyncio.get_running_loop().create_future()
        self._queue.put(_Load(container, from_seq, limit, future))
        return await future

    def statistics(self) -> StoreStatistics:
        return StoreStatistics(
            commits=self._commits,
            operations=self._applied_ops,
            last_commit_ms=self._last_commit_ms,
            total_commit_ms=self._total_commit_ms,
            pending_operations=self._submitted_ops - self._finished_ops,
        )

    def _refusal_error(self, message: str) -> StoreError:
        kind = self._broken_error if self._broken is not None else StoreError
        return kind(message)

    def _refusal(self) -> str | None:
        if self._broken is not None:
            return self._broken
        if self._state is not _State.RUNNING:
            return f"store {self._path} is not running ({self._state.value})"
        return None

    # --- writer thread -------------------------------------------------------------------------

    def _post(self, outcomes: list[_Outcome]) -> None:
        assert self._loop is not None
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is left waiting
            self._loop.call_soon_threadsafe(_settle, outcomes)

    def _run(self, opened: asyncio.Future[Recovery]) -> None:
        try:
            db = self._open(opened)
            if db is None:
                return
            stop = None
            while stop is None:
                jobs = [self._queue.get()]
                while True:
                    try:
                        jobs.append(self._queue.get_nowait())
                    except queue.Empty:
                        break
                stop = self._run_group(db, jobs)
            db.close()
            self._post([(stop.future, None)])
        finally:
            if self._lock is not None:
                self._lock.release()

    def _open(self, opened: asyncio.Future[Recovery]) -> SqliteDatabase | None:
        """Open and recover, settling ``opened`` either way; None if that failed."""
        db = None
        try:
            db = SqliteDatabase.open(self._path, self._synchronous, self._window)
            recovery = db.recover()
        except Exception as e:
            if db is not None:
                db.close()
            self._post([(opened, self._open_failure(e, recovered=db is not None))])
            return None
        log.info("store database %s opened at epoch %d", self._path, db.epoch)
        self._post([(opened, recovery)])
        return db

    def _open_failure(self, error: Exception, *, recovered: bool) -> _Failed:
        if isinstance(error, sqlite3.Error) and is_busy(error):
            return _Failed(
                f"store database {self._path} is held by another process (probably a paused "
                f"or deposed master that has not closed it yet): {error} after "
                f"{BUSY_TIMEOUT_S:g} s",
                StoreBusyError,
            )
        verb = "recover" if recovered else "open"
        return _Failed(f"cannot {verb} store database {self._path}: {error}")

    def _run_group(self, db: SqliteDatabase, jobs: list[_Job]) -> _Stop | None:
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
            outcomes = [(job.future, _Failed(self._broken, self._broken_error)) for job in work]
        self._finished_ops += operations
        self._post(outcomes)
        return stop

    def _transact(self, db: SqliteDatabase, work: list[_Write | _Load]) -> list[_Outcome]:
        started = time.perf_counter()
        in_transaction = False
        plan = WritePlan()
        try:
            for job in work:
                if isinstance(job, _Write):
                    plan.add(job.ops)
                    continue
                if plan:
                    in_transaction = self._apply(db, plan, in_transaction)
                    plan = WritePlan()
                job.result = db.load(job.container, job.from_seq, job.limit)
            if plan:
                in_transaction = self._apply(db, plan, in_transaction)
            if in_transaction:
                self._hold_before_commit()
                if self._fence is not None:
                    self._fence()  # as late as possible: the window left is COMMIT itself
                db.commit()
        except LockLostError as e:
            with contextlib.suppress(Exception):
                db.rollback()
            self._broken = f"{e}; the store refuses further writes"
            self._broken_error = LockLostError
            return [(job.future, _Failed(self._broken, LockLostError)) for job in work]
        except Exception as e:
            with contextlib.suppress(Exception):
                db.rollback()
            self._broken = (
                f"store database {self._path} failed ({type(e).__name__}: {e}); "
                "the store refuses further writes"
            )
            return [(job.future, _Failed(self._broken)) for job in work]
        if in_transaction:
            elapsed_ms = (time.perf_counter() - started) * 1000.0
            self._commits += 1
            self._last_commit_ms = elapsed_ms
            self._total_commit_ms += elapsed_ms
        return [(job.future, job.result if isinstance(job, _Load) else None) for job in work]

    def _apply(self, db: SqliteDatabase, plan: WritePlan, in_transaction: bool) -> bool:
        """Apply ``plan``, beginning the group's transaction first if needed: the locker's
        fence, then ``BEGIN IMMEDIATE`` and the epoch check, before any write."""
        if not in_transaction:
            if self._fence is not None:
                self._fence()
            db.begin()
        db.apply(plan)
        return True

    def _hold_before_commit(self) -> None:
        """The test hook (module docstring); returns at once unless a test asked for a hold."""
        path = self._hold_path
        if path is None or not path.exists():
            return
        held = path.with_name(f"{path.name}.held")
        held.write_text(f"{os.getpid()}\n")
        while path.exists():
            time.sleep(HOLD_POLL_S)
        held.unlink(missing_ok=True)
