"""``PostgresStore``: the "JDBC" store (`<jdbcPersistenceAdapter>`), PostgreSQL through psycopg 3.

The threading model is ``SqliteStore``'s: one writer thread owns a blocking connection; ``write``
and ``load`` only enqueue a job; the writer drains everything queued meanwhile and applies it as
one transaction with one ``COMMIT`` (one WAL flush serves the whole group); the group's futures are
settled by a single ``call_soon_threadsafe``, in submission order.  A load inside a group runs in
the group's transaction at its position.  A blocking driver on a thread rather than psycopg's async
API: the queue gives the ordering for free, the event loop never spends time encoding parameters
or decoding rows, and a group forms naturally while the thread waits for the previous commit.

With a ``Fence`` every write transaction checks, just before its ``COMMIT``, that this broker
still holds the database lease (``postgres_fence``); a lost lease fails the group with
``LockLostError`` and nothing of it is written.

A failed transaction (lost lease, lost connection, any database error) fails every future of its
group and breaks the store: later writes and loads fail with the same error.  When the connection
dies during ``COMMIT`` the outcome of that group is unknown to the broker; its futures fail, no
receipt is sent, and the next master recovers whatever the database holds (a resent message is
caught by the producer-id window).
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
from typing import Any, TypeAlias, get_args

import psycopg

from ferrymq.store.base import (
    DEFAULT_PRODUCER_ID_WINDOW,
    LockLostError,
    Recovery,
    StoredMessage,
    StoreError,
    StoreOp,
    StoreStatistics,
)
from ferrymq.store.coalesce import WritePlan
from ferrymq.store.postgres_db import LoadRequest, PostgresDatabase, lease_lost
from ferrymq.store.postgres_dsn import conninfo_from_url, describe
from ferrymq.store.postgres_fence import Fence, TableNames


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


@dataclass(slots=True)
class _Stop:
    future: asyncio.Future[None]


@dataclass(frozen=True, slots=True)
class _Failed:
    """A future's failure, built on the loop (exceptions carry tracebacks; keep them there)."""

    error: type[StoreError]
    message: str


_STORE_OPS: tuple[type, ...] = get_args(StoreOp)
_Job: TypeAlias = _Write | _Load | _Stop
_Outcome: TypeAlias = tuple["asyncio.Future[Any]", object]


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


class PostgresStore:
    """A ``MessageStore`` in a PostgreSQL database, shared by the brokers of a master/slave group.

    ``dsn`` is a `jdbc:postgresql://` or `postgresql://` url or a libpq `key=value` string;
    ``username`` and ``password`` (the data source's) win over the url's.  ``fence`` is the lease
    to check in every write transaction, or a function giving it when ``start`` runs (the
    locker's ``fence``: a broker builds its store before it knows which lease it will get).
    """

    def __init__(
        self,
        dsn: str,
        *,
        username: str | None = None,
        password: str | None = None,
        table_prefix: str = "",
        producer_id_window: int = DEFAULT_PRODUCER_ID_WINDOW,
        fence: Fence | Callable[[], Fence] | None = None,
        create_tables_on_startup: bool = True,
    ) -> None:
        if producer_id_window < 0:
            raise ValueError(f"producer_id_window must be >= 0, not {producer_id_window}")
        self._conninfo = conninfo_from_url(dsn, username=username, password=password)
        self._name = describe(self._conninfo)
        self._names = TableNames(table_prefix)
        self._window = producer_id_window
        self._fence_source = fence
        self._fence: Fence | None = None
        self._create_tables = create_tables_on_startup
        self._state = _State.NEW
        self._queue: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._broken: _Failed | None = None
        self._backend_pid: int | None = None
        # Written by one thread each; reads are racy but never torn (plain ints and floats).
        self._submitted_ops = 0
        self._finished_ops = 0
        self._applied_ops = 0
        self._commits = 0
        self._last_commit_ms = 0.0
        self._total_commit_ms = 0.0

    @property
    def database(self) -> str:
        """``postgresql://user@host:port/db``, without the password."""
        return self._name

    @property
    def fence(self) -> Fence | None:
        """The lease this store checks, once started."""
        return self._fence

    @property
    def backend_pid(self) -> int | None:
        """The server process of the store's connection, once started (``pg_stat_activity``)."""
        return self._backend_pid

    async def start(self) -> Recovery:
        if self._state is not _State.NEW:
            raise StoreError(f"store {self._name} was already started")
        self._state = _State.STOPPED  # until the database is open
        source = self._fence_source
        self._fence = source() if callable(source) else source
        if self._fence is not None and self._fence.table_prefix != self._names.prefix:
            raise StoreError(
                f"the fence's table prefix {self._fence.table_prefix!r} is not the store's "
                f"{self._names.prefix!r}: both must use one ACTIVEMQ_LOCK table"
            )
        loop = self._loop = asyncio.get_running_loop()
        opened: asyncio.Future[Recovery] = loop.create_future()
        self._thread = threading.Thread(
            target=self._run, args=(opened,), name=f"ferrymq-store {self._name}", daemon=True
        )
        self._thread.start()
        try:
            recovery = await asyncio.shield(opened)
        except StoreError:
            self._thread.join()  # it closed the connection and returned
            raise
        except asyncio.CancelledError:
            self._queue.put(_Stop(loop.create_future()))  # close it once it has opened
            raise
        self._state = _State.RUNNING
        return recovery

    async def stop(self) -> None:
        """Let queued writes finish, then close the connection."""
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

    def _open(self) -> tuple[PostgresDatabase, Recovery]:
        """Connect and recover on the writer thread; ``_Failed`` says why not."""
        holder = "" if self._fence is None else f" {self._fence.holder_id}"
        try:
            db = PostgresDatabase.open(
                self._conninfo,
                names=self._names,
                producer_id_window=self._window,
                fence=self._fence,
                create_tables=self._create_tables,
                application_name=f"ferrymq store{holder}",
            )
        except Exception as e:
            raise _OpenError(StoreError, f"cannot open store database {self._name}: {e}") from e
        self._backend_pid = db.backend_pid
        try:
            return db, db.recover()
        except LockLostError as e:
            db.close()
            raise _OpenError(LockLostError, f"cannot recover store {self._name}: {e}") from e
        except Exception as e:
            db.close()
            raise _OpenError(StoreError, f"cannot recover store {self._name}: {e}") from e

    def _run(self, opened: asyncio.Future[Recovery]) -> None:
        try:
            db, recovery = self._open()
        except _OpenError as e:
            self._post([(opened, e.failure)])
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

    def _run_group(self, db: PostgresDatabase, jobs: list[_Job]) -> _Stop | None:
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

    def _transact(self, db: PostgresDatabase, work: list[_Write | _Load]) -> list[_Outcome]:
        started = time.perf_counter()
        steps: list[WritePlan | LoadRequest] = []
        for job in work:  # consecutive batches merge into one plan; a load splits them
            if isinstance(job, _Load):
                steps.append((job.container, job.from_seq, job.limit))
            elif steps and isinstance(steps[-1], WritePlan):
                steps[-1].add(job.ops)
            else:
                plan = WritePlan()
                plan.add(job.ops)
                steps.append(plan)
        steps = [step for step in steps if not isinstance(step, WritePlan) or step]
        try:
            results = iter(db.run_group(steps))
        except Exception as e:
            with contextlib.suppress(Exception):
                db.rollback()
            self._broken = self._failure(e)
            return [(job.future, self._broken) for job in work]
        if any(isinstance(step, WritePlan) for step in steps):
            elapsed_ms = (time.perf_counter() - started) * 1000.0
            self._commits += 1
            self._last_commit_ms = elapsed_ms
            self._total_commit_ms += elapsed_ms
        return [(job.future, next(results) if isinstance(job, _Load) else None) for job in work]

    def _failure(self, error: Exception) -> _Failed:
        if isinstance(error, LockLostError):
            return _Failed(LockLostError, str(error))
        if isinstance(error, psycopg.OperationalError) and self._fence is not None:
            lost = lease_lost(self._conninfo, self._fence)
            if lost is not None:
                return _Failed(LockLostError, lost)
        return _Failed(
            StoreError,
            f"store database {self._name} failed ({type(error).__name__}: {error}); "
            "the store refuses further writes",
        )


class _OpenError(Exception):
    def __init__(self, error: type[StoreError], message: str) -> None:
        super().__init__(message)
        self.failure = _Failed(error, message)
