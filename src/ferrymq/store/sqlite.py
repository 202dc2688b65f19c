"""``SqliteStore``: the embedded default store, SQLite in WAL mode with group commit.

The writer thread, the queue, group commit, load ordering and the broken state are
``GroupCommitWriter``'s (``writer``); this module opens the database and guards its directory.

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
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ferrymq.store.base import (
    DEFAULT_PRODUCER_ID_WINDOW,
    Recovery,
    StoreBusyError,
    StoredMessage,
    StoreError,
    StoreOp,
    StoreStatistics,
)
from ferrymq.store.directory import CHOOSE_ANOTHER, directory_error
from ferrymq.store.lockfile import LockFile
from ferrymq.store.sqlite_db import BUSY_TIMEOUT_S, SqliteDatabase, is_busy
from ferrymq.store.writer import GroupCommitWriter

log = logging.getLogger(__name__)

DATABASE_FILE = "ferrymq.db"
LOCK_FILE = "lock"
HOLD_BEFORE_COMMIT_ENV = "FERRYMQ_TEST_HOLD_BEFORE_COMMIT"
"""The test hook's environment variable (module docstring)."""
HOLD_POLL_S = 0.01
SYNCHRONOUS_MODES = frozenset({"EXTRA", "FULL", "NORMAL", "OFF"})
"""``PRAGMA synchronous``; FULL fsyncs the WAL at every commit, so a receipt survives power loss."""


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
        self._writer = GroupCommitWriter(str(self._path))

    @property
    def path(self) -> Path:
        """The database file."""
        return self._path

    async def start(self) -> Recovery:
        if not self._writer.claim():
            raise StoreError(f"store {self._directory} was already started")
        try:
            self._directory.mkdir(parents=True, exist_ok=True)
            locked = self._lock.try_acquire() if self._lock is not None else True
        except OSError as e:
            raise directory_error(self._directory, e) from e
        if not locked:
            raise StoreError(
                f"store {self._directory} is locked by another broker "
                f"(lock file {self._directory / LOCK_FILE})",
                fix=f"stop that broker, {CHOOSE_ANOTHER}",
            )
        hold = os.environ.get(HOLD_BEFORE_COMMIT_ENV)
        self._hold_path = Path(hold) if hold else None
        release = self._lock.release if self._lock is not None else None
        return await self._writer.start(self._open, on_exit=release)

    async def stop(self) -> None:
        """Let queued writes finish, close the database, release the lock."""
        await self._writer.stop()

    def write(self, ops: Sequence[StoreOp]) -> asyncio.Future[None]:
        return self._writer.write(ops)

    async def load(self, container: str, from_seq: int, limit: int) -> list[StoredMessage]:
        return await self._writer.load(container, from_seq, limit)

    def statistics(self) -> StoreStatistics:
        return self._writer.statistics()

    # --- writer thread -------------------------------------------------------------------------

    def _open(self) -> tuple[SqliteDatabase, Recovery]:
        """Open and recover; a ``StoreError`` that names the file says why not."""
        db = None
        try:
            db = SqliteDatabase.open(
                self._path,
                self._synchronous,
                self._window,
                fence=self._fence,
                before_commit=self._hold_before_commit if self._hold_path is not None else None,
            )
            recovery = db.recover()
        except Exception as e:
            if db is not None:
                db.close()
            raise self._open_failure(e, recovered=db is not None) from e
        log.info("store database %s opened at epoch %d", self._path, db.epoch)
        return db, recovery

    def _open_failure(self, error: Exception, *, recovered: bool) -> StoreError:
        if isinstance(error, sqlite3.Error) and is_busy(error):
            return StoreBusyError(
                f"store database {self._path} is held by another process (probably a paused "
                f"or deposed master that has not closed it yet): {error} after "
                f"{BUSY_TIMEOUT_S:g} s"
            )
        verb = "recover" if recovered else "open"
        return StoreError(f"cannot {verb} store database {self._path}: {error}")

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
