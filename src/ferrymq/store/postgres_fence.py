"""The database lease lock's table and statements, shared by the locker and the store's fence.

The table keeps ActiveMQ's `ACTIVEMQ_LOCK(ID, TIME, BROKER_NAME)` shape (reference §5.6) and the
lease locker's meaning (§5.4): row `ID = 1`; `BROKER_NAME` is the lease holder; `TIME` is when
the lease ends, in milliseconds since the epoch; a `TIME` in the past (0 after a release) means
free.  Every time comes from the database's clock (``clock_timestamp()``), never a broker's, so
clock skew between hosts and a paused process cannot stretch a lease.

FerryMQ adds one column, `EPOCH`, incremented by each acquisition: a fencing token.  Holder ids
alone cannot tell a master from its own earlier incarnation (a broker paused, given up on and
restarted under the same name): with the epoch, the stale process fails its next check.

**Fencing** (DESIGN "Fencing").  Every write transaction of a fenced store ends with a call of
``<prefix>ferrymq_check_lease(holder, epoch)`` just before its ``COMMIT``: it selects the lock
row ``WHERE BROKER_NAME = holder AND EPOCH = epoch AND TIME > now FOR SHARE`` and raises
SQLSTATE ``FMQ01`` ("lost the database lock ...") when there is none.  ``FOR SHARE`` conflicts
with the ``FOR NO KEY UPDATE`` row lock of an acquiring ``UPDATE``, so the two serialise on the
lock row (READ COMMITTED, set by each transaction):

* the check locks the row first: an acquirer blocks until the write transaction has committed,
  so every write of the old master is ordered before the new master's acquisition, hence before
  its recovery reads;
* the acquirer updates first: the check waits for it, then re-reads the row's newest version,
  finds another holder or epoch, and raises; the transaction rolls back.  (Another broker can
  only take an expired lease, which fails the check without waiting.)

Because the check raises instead of returning a row, a store sends a whole transaction, ``COMMIT``
included, in one pipeline: the server never waits for the client while it holds the lock row.

**Fencing out.**  A master stopped while the server still waits for the rest of its transaction
(SIGSTOP in the middle of sending a large one) keeps that transaction's row locks, and PostgreSQL
before 17 has no timeout for a backend waiting on its client mid-pipeline.  So each fenced store
session holds a shared advisory lock keyed by the lock table (``join_fence``), and a broker that
takes the lease terminates every other holder of that key (``fence_out``), as does a slave whose
acquiring ``UPDATE`` found the lock row held beyond an expired lease.  That needs the same
database role for every broker of a group (or ``pg_signal_backend``); without it the lease check
still keeps the data safe and only the takeover waits for the stopped master.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ferrymq.store.base import LockLostError, StoreError

__all__ = ["LockLostError"]

DB_NOW_MS = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"
"""The database's current time in ms since the epoch; `now()` would be the transaction's start."""

LOCK_TABLE = "ACTIVEMQ_LOCK"
LOCK_ROW_ID = 1
CHECK_FUNCTION = "ferrymq_check_lease"
LOCK_LOST_SQLSTATE = "FMQ01"
FENCE_KEY_CLASS = 0x46454E43
"""``pg_locks.classid`` of the fence's advisory lock ("FENC"); its ``objid`` is the lock table."""

_PREFIX = re.compile(r"([A-Za-z_][A-Za-z0-9_]*\.)?([A-Za-z_][A-Za-z0-9_]*)?")


@dataclass(frozen=True, slots=True)
class TableNames:
    """Table names under a `tablePrefix` (ActiveMQ's `<statements tablePrefix>`).

    A prefix may name a schema (``"amq."``), as ActiveMQ users write it.  It is spliced into SQL,
    so it is limited to unquoted identifier characters.
    """

    prefix: str = ""

    def __post_init__(self) -> None:
        if _PREFIX.fullmatch(self.prefix) is None:
            raise StoreError(
                f"table prefix {self.prefix!r} is not usable: letters, digits and _ only, "
                "optionally after a schema name and a dot"
            )

    def table(self, name: str) -> str:
        return f"{self.prefix}{name}"

    def local(self, name: str) -> str:
        """The name without its schema, for index and sequence names that cannot carry one."""
        return self.table(name).rpartition(".")[2]


@dataclass(frozen=True, slots=True)
class Fence:
    """What a store checks in every write transaction: this lease, and no later one.

    Built by the locker once it holds the lease (``LeaseDatabaseLocker.fence``).
    """

    holder_id: str
    epoch: int
    lease_ms: int
    """The lease duration; the store's session is killed if it idles this long mid-transaction,
    so a master paused inside a transaction cannot hold the lock row against a successor."""
    table_prefix: str = ""


@dataclass(frozen=True, slots=True)
class LockTableSql:
    """The statements on `<prefix>ACTIVEMQ_LOCK`; parameters are named (psycopg ``%(name)s``)."""

    table: str
    function: str

    @classmethod
    def for_prefix(cls, prefix: str) -> LockTableSql:
        names = TableNames(prefix)
        return cls(names.table(LOCK_TABLE), names.table(CHECK_FUNCTION))

    @property
    def create(self) -> list[str]:
        """ActiveMQ's DDL and first row, plus the `EPOCH` column (added to an existing table)."""
        return [
            f"CREATE TABLE IF NOT EXISTS {self.table} "
            "(ID BIGINT NOT NULL PRIMARY KEY, TIME BIGINT, BROKER_NAME VARCHAR(250))",
            f"ALTER TABLE {self.table} ADD COLUMN IF NOT EXISTS EPOCH BIGINT NOT NULL DEFAULT 0",
            f"INSERT INTO {self.table} (ID) VALUES ({LOCK_ROW_ID}) ON CONFLICT (ID) DO NOTHING",
        ]

    @property
    def is_complete(self) -> str:
        """One row, true when the table, its `EPOCH` column and its row all exist."""
        return (
            "SELECT to_regclass(%(table)s) IS NOT NULL AND EXISTS ("
            "SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(%(table)s) "
            "AND attname = 'epoch' AND NOT attisdropped)"
        )

    @property
    def has_row(self) -> str:
        return f"SELECT EXISTS (SELECT 1 FROM {self.table} WHERE ID = {LOCK_ROW_ID})"

    @property
    def acquire(self) -> str:
        """ActiveMQ's lease-obtain statement, with a new epoch; the lease we held last (known by
        its epoch) may be taken back before it expires.  Always one row: the lease we got (or
        NULLs), then the holder the update found, from the statement's snapshot."""
        return (
            f"WITH got AS (UPDATE {self.table} SET BROKER_NAME = %(holder)s, "
            f"TIME = {DB_NOW_MS} + %(lease_ms)s, EPOCH = EPOCH + 1 "
            f"WHERE ID = {LOCK_ROW_ID} AND (TIME IS NULL OR TIME < {DB_NOW_MS} "
            "OR (BROKER_NAME = %(holder)s AND EPOCH = %(last_epoch)s)) RETURNING EPOCH, TIME) "
            "SELECT (SELECT EPOCH FROM got), (SELECT TIME FROM got), "
            f"BROKER_NAME, TIME, {DB_NOW_MS} FROM {self.table} WHERE ID = {LOCK_ROW_ID}"
        )

    @property
    def keep_alive(self) -> str:
        """Extend our unexpired lease; no row means it ended or was taken."""
        return (
            f"UPDATE {self.table} SET TIME = {DB_NOW_MS} + %(lease_ms)s "
            f"WHERE ID = {LOCK_ROW_ID} AND BROKER_NAME = %(holder)s AND EPOCH = %(epoch)s "
            f"AND TIME > {DB_NOW_MS} RETURNING TIME, {DB_NOW_MS}"
        )

    @property
    def release(self) -> str:
        """ActiveMQ's release (`BROKER_NAME = NULL, TIME = 0`); `EPOCH` stays, it only grows."""
        return (
            f"UPDATE {self.table} SET BROKER_NAME = NULL, TIME = 0 "
            f"WHERE ID = {LOCK_ROW_ID} AND BROKER_NAME = %(holder)s AND EPOCH = %(epoch)s"
        )

    @property
    def check(self) -> str:
        """The fence: raises ``FMQ01`` unless the lease is ours and unexpired; the row stays
        locked (shared) until the transaction ends."""
        return f"SELECT {self.function}(%(holder)s::text, %(epoch)s::bigint)"

    @property
    def create_check(self) -> str:
        held = (
            f"PERFORM 1 FROM {self.table} WHERE ID = {LOCK_ROW_ID} AND BROKER_NAME = holder "
            f"AND EPOCH = lease_epoch AND TIME > {DB_NOW_MS} FOR SHARE;"
        )
        return f"""CREATE OR REPLACE FUNCTION {self.function}(holder TEXT, lease_epoch BIGINT)
RETURNS VOID LANGUAGE plpgsql AS $fence$
DECLARE
    now_holder TEXT;
    now_time BIGINT;
    now_epoch BIGINT;
BEGIN
    {held}
    IF FOUND THEN
        RETURN;
    END IF;
    SELECT BROKER_NAME, TIME, EPOCH INTO now_holder, now_time, now_epoch
        FROM {self.table} WHERE ID = {LOCK_ROW_ID};
    RAISE EXCEPTION USING ERRCODE = '{LOCK_LOST_SQLSTATE}', MESSAGE = format(
        'lost the database lock: {self.table} is no longer held by %s (epoch %s) but by %s '
        '(epoch %s) until %s, now %s; the store refuses further writes',
        holder, lease_epoch, coalesce(now_holder, 'nobody'), now_epoch, now_time,
        {DB_NOW_MS});
END
$fence$"""

    @property
    def has_check(self) -> str:
        return "SELECT to_regprocedure(%(signature)s) IS NOT NULL"

    @property
    def check_signature(self) -> str:
        return f"{self.function}(text, bigint)"

    @property
    def join_fence(self) -> str:
        """Taken by a fenced store's session, so a successor can find it (``fence_out``)."""
        return (
            f"SELECT pg_advisory_lock_shared(({FENCE_KEY_CLASS}::bigint << 32) "
            f"| to_regclass('{self.table}')::oid::bigint)"
        )

    @property
    def fence_out(self) -> str:
        """Terminate every other session in the fence, waiting up to ``wait_ms`` for each; with
        ``force`` false only when the lease has expired.  Returns how many were terminated."""
        return (
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(l.pid, %(wait_ms)s)) "
            "FROM pg_locks l WHERE l.locktype = 'advisory' AND l.database = "
            "(SELECT oid FROM pg_database WHERE datname = current_database()) "
            f"AND l.classid = {FENCE_KEY_CLASS} AND l.objid = to_regclass('{self.table}')::oid "
            "AND l.objsubid = 1 AND l.pid <> pg_backend_pid() AND (%(force)s OR NOT EXISTS ("
            f"SELECT 1 FROM {self.table} WHERE ID = {LOCK_ROW_ID} AND TIME >= {DB_NOW_MS}))"
        )

    @property
    def owner(self) -> str:
        """Holder, lease end, epoch and the database time, for messages and the admin API."""
        return (
            f"SELECT BROKER_NAME, TIME, EPOCH, {DB_NOW_MS} FROM {self.table} "
            f"WHERE ID = {LOCK_ROW_ID}"
        )
