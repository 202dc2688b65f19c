"""The SQL side of ``SqliteStore``: schema, recovery, applying a ``WritePlan``, paging messages in.

Everything here runs on the store's writer thread and blocks; ``writer.py`` owns the thread, the
queue and the futures, and hands a group to ``run_group``.  Transactions are explicit
(``isolation_level=None``) so one group of batches is one ``BEGIN IMMEDIATE`` … ``COMMIT``.

**Locking.**  The connection sets ``PRAGMA locking_mode=EXCLUSIVE`` before its first access, so
SQLite never creates the ``-shm`` shared-memory wal-index (SQLite's "Write-Ahead Logging", "Use
of WAL Without Shared-Memory": WAL needs shared memory, which a network file system does not
share between hosts, unless EXCLUSIVE mode is set first) and holds its exclusive lock on the
database file until the connection closes: while one store has the database open, another
cannot open it (``SQLITE_BUSY``; the store reports ``StoreBusyError``).

**The epoch.**  ``meta`` holds ``('epoch', N)``; every recovery increments it, and every write
transaction begins (right after ``BEGIN IMMEDIATE``, before any other statement) by checking
and rewriting it: a connection that finds another epoch was fenced out by a later opener and
raises ``LockLostError`` without touching the data, as the PostgreSQL store's lease check does.
Keys cannot collide across terms either: producer-id rows take their ids from SQLite, and
message seqs are partitioned by epoch (``SEQ_EPOCH_SHIFT``).  Where SQLite's lock works, the
exclusive lock already keeps a second writer out; the epoch check guards a writer that reads the
current database, and cannot see past a connection's own cache (see docs/master-slave.md).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from itertools import groupby
from pathlib import Path
from typing import Any

from ferrymq.store.base import (
    ContainerState,
    DurableSubscriptionRecord,
    LockLostError,
    Recovery,
    StoredMessage,
)
from ferrymq.store.coalesce import TableOp, TableOpKind, WritePlan
from ferrymq.store.writer import Step

SCHEMA_VERSION = 1

SEQ_EPOCH_SHIFT = 40
"""Recovery at epoch N reports ``last_seq >= N << SEQ_EPOCH_SHIFT``, so the seqs a term hands
out (the core counts up from ``last_seq``) are above every seq an earlier term could have used,
and a deposed master's ``INSERT OR REPLACE`` can never land on its successor's rows.  2**40
(about 10**12) messages per term; 2**23 terms before a seq leaves SQLite's signed 64-bit INTEGER.
Seqs stay exact in JSON doubles (2**53) up to epoch 8192; they appear outside the store only as
text, inside message ids."""

BUSY_TIMEOUT_S = 1.0
"""How long one open waits for a database locked by another process before ``SQLITE_BUSY``;
short, because a broker that holds the group's lock retries the whole open instead."""

_BUSY_CODES = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})

_SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    container TEXT NOT NULL,
    seq INTEGER NOT NULL,
    blob BLOB NOT NULL,
    size INTEGER NOT NULL,
    priority INTEGER NOT NULL,
    expiration INTEGER NOT NULL,
    persistent INTEGER NOT NULL,
    delivered INTEGER NOT NULL,
    PRIMARY KEY (container, seq)
);
-- Only spooled (non-persistent) rows enter this index, so start-up finds them without a scan.
CREATE INDEX IF NOT EXISTS messages_spooled ON messages (seq) WHERE persistent = 0;
CREATE TABLE IF NOT EXISTS durable_subscriptions (
    client_id TEXT NOT NULL,
    subscription_name TEXT NOT NULL,
    destination TEXT NOT NULL,
    selector TEXT,
    no_local INTEGER NOT NULL,
    container TEXT NOT NULL,
    PRIMARY KEY (client_id, subscription_name)
);
CREATE TABLE IF NOT EXISTS destinations (qualified_name TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS producer_ids (id INTEGER PRIMARY KEY, producer_message_id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""

_TABLE_SQL = {
    TableOpKind.ADD_SUBSCRIPTION: "INSERT OR REPLACE INTO durable_subscriptions "
    "(client_id, subscription_name, destination, selector, no_local, container) "
    "VALUES (?, ?, ?, ?, ?, ?)",
    TableOpKind.REMOVE_SUBSCRIPTION: "DELETE FROM durable_subscriptions "
    "WHERE client_id = ? AND subscription_name = ?",
    TableOpKind.ADD_DESTINATION: "INSERT OR IGNORE INTO destinations (qualified_name) VALUES (?)",
    TableOpKind.REMOVE_DESTINATION: "DELETE FROM destinations WHERE qualified_name = ?",
}

_INSERT_MESSAGE = (
    "INSERT OR REPLACE INTO messages "
    "(container, seq, blob, size, priority, expiration, persistent, delivered) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)


def is_busy(error: sqlite3.Error) -> bool:
    """Whether ``error`` says another connection holds the database (``SQLITE_BUSY`` or
    ``SQLITE_LOCKED``, extended codes included)."""
    code = getattr(error, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in _BUSY_CODES


class SqliteDatabase:
    """One connection to ``ferrymq.db``; use it from one thread only.

    ``fence`` (the master/slave locker's cheap check, raising ``LockLostError``) runs before each
    write transaction begins and again just before its commit; ``before_commit`` (the store's
    test hook) runs right before that last fence check."""

    def __init__(
        self,
        connection: sqlite3.Connection,
        path: Path,
        producer_id_window: int,
        *,
        fence: Callable[[], None] | None = None,
        before_commit: Callable[[], None] | None = None,
    ) -> None:
        self._db = connection
        self._path = path
        self._window = producer_id_window
        self._fence = fence
        self._before_commit = before_commit
        # Prune the duplicate window in steps, not per message: a range delete every 1/16 window.
        self._prune_slack = max(1, producer_id_window // 16)
        self._producer_rows = 0
        self.epoch = 0
        """This connection's term, taken by ``recover``; 0 until then."""
        self.last_seq = 0

    @classmethod
    def open(
        cls,
        path: Path,
        synchronous: str,
        producer_id_window: int,
        *,
        exclusive: bool = True,
        fence: Callable[[], None] | None = None,
        before_commit: Callable[[], None] | None = None,
    ) -> SqliteDatabase:
        """Open or create; raises ``sqlite3.Error`` (or ``ValueError`` for a newer schema).

        ``exclusive=False`` (NORMAL locking mode) lets two connections share the database; only
        the tests of the epoch fence use it."""
        connection = sqlite3.connect(
            path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=True
        )
        try:
            if exclusive:  # before the first access: no -shm wal-index, ever
                connection.execute("PRAGMA locking_mode=EXCLUSIVE")
            (mode,) = connection.execute("PRAGMA journal_mode=WAL").fetchone()
            if str(mode).lower() != "wal":
                raise sqlite3.OperationalError(f"journal_mode is {mode}, WAL is required")
            connection.execute(f"PRAGMA synchronous={synchronous}")
            (version,) = connection.execute("PRAGMA user_version").fetchone()
            if version > SCHEMA_VERSION:
                raise ValueError(f"schema version {version} is newer than {SCHEMA_VERSION}")
            connection.executescript(
                f"BEGIN IMMEDIATE; {_SCHEMA} PRAGMA user_version={SCHEMA_VERSION}; COMMIT;"
            )
        except BaseException:
            connection.close()
            raise
        return cls(connection, path, producer_id_window, fence=fence, before_commit=before_commit)

    def close(self) -> None:
        self._db.close()

    def run_group(self, steps: Sequence[Step]) -> list[list[StoredMessage]]:
        """One group of the writer (``writer.Database``): the fence, then ``BEGIN IMMEDIATE``
        and the epoch check before the first plan; the plans and loads in order; then the test
        hook, the fence again (as late as possible: the window left is ``COMMIT`` itself) and
        ``COMMIT``.  Loads before the first plan need no transaction: every write submitted
        before them was committed by an earlier group."""
        loaded: list[list[StoredMessage]] = []
        in_transaction = False
        for step in steps:
            if not isinstance(step, WritePlan):
                loaded.append(self.load(*step))
                continue
            if not in_transaction:
                if self._fence is not None:
                    self._fence()
                self.begin()
                in_transaction = True
            self.apply(step)
        if in_transaction:
            if self._before_commit is not None:
                self._before_commit()
            if self._fence is not None:
                self._fence()
            self.commit()
        return loaded

    def explain(self, error: Exception) -> Exception:
        return error

    def begin(self) -> None:
        """Begin a write transaction, fenced: raises ``LockLostError`` (and rolls back) before
        any other statement if another connection recovered the database since this one."""
        self._db.execute("BEGIN IMMEDIATE")
        mine = self.epoch
        checked = self._db.execute(
            "UPDATE meta SET value = ? WHERE key = 'epoch' AND value = ?", (mine, mine)
        )
        if checked.rowcount == 1:
            return
        row = self._db.execute("SELECT value FROM meta WHERE key = 'epoch'").fetchone()
        self.rollback()
        current = "none" if row is None else row[0]
        raise LockLostError(
            f"store database {self._path} was opened by another store since this one "
            f"(epoch {mine}, now {current}): this store was fenced out"
        )

    def commit(self) -> None:
        self._db.execute("COMMIT")

    def rollback(self) -> None:
        if self._db.in_transaction:
            self._db.execute("ROLLBACK")

    def recover(self) -> Recovery:
        """Take the next epoch, drop spooled rows, trim the duplicate window, report what is
        left.  A database from before the epoch row starts at epoch 1."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('epoch', 0)")
            db.execute("UPDATE meta SET value = value + 1 WHERE key = 'epoch'")
            (self.epoch,) = db.execute("SELECT value FROM meta WHERE key = 'epoch'").fetchone()
            db.execute("DELETE FROM messages WHERE persistent = 0")
            (max_row,) = db.execute("SELECT COALESCE(MAX(id), 0) FROM producer_ids").fetchone()
            db.execute("DELETE FROM producer_ids WHERE id <= ?", (max_row - self._window,))
            self.commit()
        except BaseException:
            self.rollback()
            raise
        containers: dict[str, ContainerState] = {}
        for name, count, size, first, last in db.execute(
            "SELECT container, COUNT(*), SUM(size), MIN(seq), MAX(seq) "
            "FROM messages GROUP BY container"
        ):
            containers[name] = ContainerState(name, count, size, first, last)
        subscriptions = [
            DurableSubscriptionRecord(client, name, dest, selector, bool(no_local), container)
            for client, name, dest, selector, no_local, container in db.execute(
                "SELECT client_id, subscription_name, destination, selector, no_local, container "
                "FROM durable_subscriptions ORDER BY rowid"
            )
        ]
        destinations = [n for (n,) in db.execute("SELECT qualified_name FROM destinations")]
        producer_ids = [
            p for (p,) in db.execute("SELECT producer_message_id FROM producer_ids ORDER BY id")
        ]
        (stored_last,) = db.execute(
            "SELECT COALESCE(MAX(value), 0) FROM meta WHERE key = 'last_seq'"
        ).fetchone()
        self.last_seq = max(
            [stored_last, self.epoch << SEQ_EPOCH_SHIFT, *(c.last_seq for c in containers.values())]
        )
        self._producer_rows = len(producer_ids)
        return Recovery(containers, subscriptions, destinations, producer_ids, self.last_seq)

    def apply(self, plan: WritePlan) -> None:
        """Write the plan inside the caller's transaction."""
        db = self._db
        if plan.marks:
            db.executemany(
                "UPDATE messages SET delivered = 1 WHERE container = ? AND seq = ?", plan.marks
            )
        if plan.removes:
            db.executemany("DELETE FROM messages WHERE container = ? AND seq = ?", plan.removes)
        if plan.purges:
            db.executemany("DELETE FROM messages WHERE container = ?", [(c,) for c in plan.purges])
        if plan.inserts:
            db.executemany(
                _INSERT_MESSAGE,
                [
                    (
                        p.container,
                        p.seq,
                        p.blob,
                        len(p.blob),
                        p.priority,
                        p.expiration,
                        int(p.persistent),
                        int(p.delivered),
                    )
                    for p in plan.inserts.values()
                ],
            )
        self._apply_table_ops(plan.table_ops)
        if plan.producer_message_ids:
            self._remember_producer_ids(plan.producer_message_ids)
        if plan.max_seq > self.last_seq:
            self.last_seq = plan.max_seq
            db.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('last_seq', ?)", (plan.max_seq,)
            )

    def _apply_table_ops(self, ops: Sequence[TableOp]) -> None:
        for kind, run in groupby(ops, key=lambda op: op[0]):
            self._db.executemany(_TABLE_SQL[kind], [params for _, params in run])

    def _remember_producer_ids(self, ids: Sequence[str]) -> None:
        # SQLite numbers the rows (max id + 1): no counter of this process can collide with rows
        # that another term wrote.
        self._db.executemany(
            "INSERT INTO producer_ids (producer_message_id) VALUES (?)", [(i,) for i in ids]
        )
        self._producer_rows += len(ids)
        if self._producer_rows > self._window + self._prune_slack:
            self._db.execute(
                "DELETE FROM producer_ids WHERE id <= (SELECT MAX(id) FROM producer_ids) - ?",
                (self._window,),
            )
            self._producer_rows = self._window

    def load(self, container: str, from_seq: int, limit: int) -> list[StoredMessage]:
        rows: list[tuple[Any, ...]] = self._db.execute(
            "SELECT seq, blob, delivered FROM messages "
            "WHERE container = ? AND seq >= ? ORDER BY seq LIMIT ?",
            (container, from_seq, limit),
        ).fetchall()
        return [StoredMessage(container, seq, blob, bool(d)) for seq, blob, d in rows]
