"""The database lease lock's table and statements, shared by the locker and the store's fence.

The table keeps ActiveMQ's `ACTIVEMQ_LOCK(ID, TIME, BROKER_NAME)` shape (reference §5.6) and the
lease locker's meaning (§5.4): row `ID = 1`; `BROKER_NAME` is the lease holder; `TIME` is when
the lease ends, in milliseconds since the epoch; a `TIME` in the past (0 after a release) means
free.  Every time comes from the database's clock (``clock_timestamp()``), never a broker's, so
clock skew between hosts and a paused process cannot stretch a lease.

FerryMQ adds one column, `EPOCH`, incremented by each acquisition: a fencing token.  Holder ids
alone cannot tell a master from its own earlier incarnation (a broker paused, given up on and
restarted under the same name): with the epoch, the stale process fails its next check.

**Fencing** (DESIGN "Fencing").  Every write transaction of a fenced store ends with
``check`` — ``SELECT ... WHERE BROKER_NAME = holder AND EPOCH = epoch AND TIME > now FOR SHARE``
— before its ``COMMIT``.  ``FOR SHARE`` conflicts with the ``FOR NO KEY UPDATE`` row lock that an
acquiring ``UPDATE`` takes, so the two serialise on the lock row (READ COMMITTED, enforced per
transaction):

* the check locks the row first: an acquirer blocks until the write transaction has committed,
  so every write of the old master is ordered before the new master's acquisition, hence before
  its recovery reads;
* the acquirer updates first: the check waits for it, then re-reads the row's newest version,
  finds another holder (or epoch) and returns nothing; the transaction rolls back.
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

    @classmethod
    def for_prefix(cls, prefix: str) -> LockTableSql:
        return cls(TableNames(prefix).table(LOCK_TABLE))

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
        """The fence: one row iff the lease is ours and unexpired; locks the row until commit."""
        return (
            f"SELECT 1 FROM {self.table} WHERE ID = {LOCK_ROW_ID} AND BROKER_NAME = %(holder)s "
            f"AND EPOCH = %(epoch)s AND TIME > {DB_NOW_MS} FOR SHARE"
        )

    @property
    def owner(self) -> str:
        """Holder, lease end, epoch and the database time, for messages and the admin API."""
        return (
            f"SELECT BROKER_NAME, TIME, EPOCH, {DB_NOW_MS} FROM {self.table} "
            f"WHERE ID = {LOCK_ROW_ID}"
        )
