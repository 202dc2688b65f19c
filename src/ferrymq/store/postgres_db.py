"""The SQL side of ``PostgresStore``: one session, its transactions, recovery, ``WritePlan``s.

Everything here runs on the store's writer thread and blocks; ``writer.py`` owns the thread, the
queue and the futures, and hands a group to ``run_group``.  The connection is in autocommit mode
and transactions are explicit: ``BEGIN ISOLATION LEVEL READ COMMITTED`` whatever the server's
default, since the fence's reasoning needs it (``postgres_fence``).  A group of batches is sent
as one pipeline: ``BEGIN``, the writes and loads in submission order, the fence check,
``COMMIT``, then one sync.  One round trip per group, and the server never waits for this client
inside a transaction (it would hold row locks against a successor meanwhile).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import groupby
from typing import Any

import psycopg

from ferrymq.store.base import (
    ContainerState,
    DurableSubscriptionRecord,
    LockLostError,
    Recovery,
    StoredMessage,
)
from ferrymq.store.coalesce import TableOp, TableOpKind, WritePlan
from ferrymq.store.postgres_fence import (
    LOCK_LOST_SQLSTATE,
    Fence,
    LockTableSql,
    TableNames,
)
from ferrymq.store.postgres_schema import ensure_schema
from ferrymq.store.writer import Step


class PostgresDatabase:
    """One connection to the store's database; use it from one thread only."""

    def __init__(
        self,
        connection: psycopg.Connection[Any],
        conninfo: str,
        names: TableNames,
        producer_id_window: int,
        fence: Fence | None,
    ) -> None:
        self._db = connection
        self._conninfo = conninfo
        self._names = names
        self._window = producer_id_window
        self._fence = fence
        self._lock_sql = LockTableSql.for_prefix(names.prefix)
        self._prune_slack = max(1, producer_id_window // 16)  # as SqliteDatabase
        self._next_producer_row = 1
        self._producer_rows = 0
        self.last_seq = 0
        t = names.table
        self._table_sql = {
            TableOpKind.ADD_SUBSCRIPTION: (
                f"INSERT INTO {t('ferrymq_durable_subscriptions')} "
                "(client_id, subscription_name, destination, selector, no_local, container) "
                "VALUES (%s, %s, %s, %s, %s::integer <> 0, %s) "
                "ON CONFLICT (client_id, subscription_name) "
                "DO UPDATE SET destination = EXCLUDED.destination, selector = EXCLUDED.selector, "
                "no_local = EXCLUDED.no_local, container = EXCLUDED.container, "
                "position = EXCLUDED.position"  # a redefinition moves to the end, as in SQLite
            ),
            TableOpKind.REMOVE_SUBSCRIPTION: (
                f"DELETE FROM {t('ferrymq_durable_subscriptions')} "
                "WHERE client_id = %s AND subscription_name = %s"
            ),
            TableOpKind.ADD_DESTINATION: (
                f"INSERT INTO {t('ferrymq_destinations')} (qualified_name) VALUES (%s) "
                "ON CONFLICT DO NOTHING"
            ),
            TableOpKind.REMOVE_DESTINATION: (
                f"DELETE FROM {t('ferrymq_destinations')} WHERE qualified_name = %s"
            ),
        }
        # One statement per kind of change, its rows as arrays: a group of a thousand messages
        # costs the server one parse and one plan, not a thousand.
        messages = t("ferrymq_messages")
        self._insert = (
            f"INSERT INTO {messages} "
            "(container, seq, blob, size, priority, expiration, persistent, delivered) "
            "SELECT * FROM unnest(%s::text[], %s::bigint[], %s::bytea[], %s::integer[], "
            "%s::smallint[], %s::bigint[], %s::boolean[], %s::boolean[]) "
            "ON CONFLICT (container, seq) DO UPDATE SET "
            "blob = EXCLUDED.blob, size = EXCLUDED.size, priority = EXCLUDED.priority, "
            "expiration = EXCLUDED.expiration, persistent = EXCLUDED.persistent, "
            "delivered = EXCLUDED.delivered"
        )
        keys = "unnest(%s::text[], %s::bigint[]) AS k (container, seq)"
        matches = "m.container = k.container AND m.seq = k.seq"
        self._mark = f"UPDATE {messages} m SET delivered = true FROM {keys} WHERE {matches}"
        self._remove = f"DELETE FROM {messages} m USING {keys} WHERE {matches}"
        self._purge = f"DELETE FROM {messages} WHERE container = ANY(%s::text[])"
        self._remember = (
            f"INSERT INTO {t('ferrymq_producer_ids')} (id, producer_message_id) "
            "SELECT * FROM unnest(%s::bigint[], %s::text[])"
        )
        self._load = (
            f"SELECT seq, blob, delivered FROM {messages} "
            "WHERE container = %s AND seq >= %s ORDER BY seq LIMIT %s"
        )

    @classmethod
    def open(
        cls,
        conninfo: str,
        *,
        names: TableNames,
        producer_id_window: int,
        fence: Fence | None,
        create_tables: bool,
        application_name: str,
    ) -> PostgresDatabase:
        """Connect, make sure the schema is there, join the fence; raises ``psycopg.Error`` or
        ``ValueError``."""
        connection = psycopg.connect(conninfo, autocommit=True, application_name=application_name)
        try:
            db = cls(connection, conninfo, names, producer_id_window, fence)
            ensure_schema(connection, names, create_tables)
            db._configure_session()
        except BaseException:
            connection.close()
            raise
        return db

    def close(self) -> None:
        self._db.close()

    @property
    def backend_pid(self) -> int:
        return self._db.info.backend_pid

    def _configure_session(self) -> None:
        db = self._db
        (synchronous_commit,) = _one(db.execute("SHOW synchronous_commit"))
        if synchronous_commit == "off":  # a receipt must mean durable (DESIGN "Durability")
            db.execute("SET synchronous_commit = on")
        if self._fence is not None:
            # Defence in depth: a transaction left waiting for this client (a paused process)
            # ends after one lease, whether or not a successor fences it out first.
            db.execute(
                "SELECT set_config('idle_in_transaction_session_timeout', %s, false)",
                (str(max(1, self._fence.lease_ms)),),
            )
            db.execute(self._lock_sql.join_fence)

    # --- transactions --------------------------------------------------------------------------

    def rollback(self) -> None:
        if self._db.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            self._db.execute("ROLLBACK")

    def run_group(self, steps: Sequence[Step]) -> list[list[StoredMessage]]:
        """Apply the plans and run the loads in order, in one transaction and one round trip
        (``writer.Database``).

        Returns the loads' results in order.  Raises ``LockLostError`` when the fence check
        fails, ``psycopg.Error`` for anything else; the caller rolls back.
        """
        writes = any(isinstance(step, WritePlan) for step in steps)
        loads: list[tuple[str, psycopg.Cursor[Any]]] = []
        failed: psycopg.Error | None = None
        try:
            with self._db.pipeline() as pipeline:
                try:  # caught inside, or leaving the block logs a second error of psycopg's
                    if writes:
                        self._db.execute(_BEGIN)
                    for step in steps:
                        if isinstance(step, WritePlan):
                            self.apply(step)
                        else:
                            loads.append((step[0], self._db.execute(self._load, step)))
                    if writes:
                        self._end_transaction()
                    pipeline.sync()
                except psycopg.Error as e:
                    failed = e
        except psycopg.Error as e:  # the pipeline's own closing sync (a lost connection)
            failed = failed or e
        if failed is not None:
            if isinstance(failed, psycopg.DatabaseError):
                _raise_lock_lost(failed)
            raise failed
        return [
            [StoredMessage(container, seq, blob, d) for seq, blob, d in cursor.fetchall()]
            for container, cursor in loads
        ]

    def explain(self, error: Exception) -> Exception:
        """A broken connection may be the first sign of a takeover (``lease_lost``)."""
        if isinstance(error, psycopg.OperationalError) and self._fence is not None:
            lost = lease_lost(self._conninfo, self._fence)
            if lost is not None:
                return LockLostError(lost)
        return error

    def _end_transaction(self) -> None:
        if self._fence is not None:
            params = {"holder": self._fence.holder_id, "epoch": self._fence.epoch}
            self._db.execute(self._lock_sql.check, params)
        self._db.execute("COMMIT")

    # --- recovery and writes -------------------------------------------------------------------

    def recover(self) -> Recovery:
        """Drop spooled rows, trim the duplicate window, and report what is left."""
        t = self._names.table
        db = self._db
        try:
            db.execute(_BEGIN)
            db.execute(f"DELETE FROM {t('ferrymq_messages')} WHERE NOT persistent")
            (max_row,) = _one(
                db.execute(f"SELECT COALESCE(MAX(id), 0) FROM {t('ferrymq_producer_ids')}")
            )
            db.execute(
                f"DELETE FROM {t('ferrymq_producer_ids')} WHERE id <= %s",
                (max_row - self._window,),
            )
            self._end_transaction()
        except psycopg.DatabaseError as e:
            self.rollback()
            _raise_lock_lost(e)
            raise
        containers: dict[str, ContainerState] = {}
        for name, count, size, first, last in db.execute(
            "SELECT container, COUNT(*), SUM(size), MIN(seq), MAX(seq) "
            f"FROM {t('ferrymq_messages')} GROUP BY container ORDER BY container"
        ):
            containers[name] = ContainerState(name, count, size, first, last)
        subscriptions = [
            DurableSubscriptionRecord(client, name, dest, selector, no_local, container)
            for client, name, dest, selector, no_local, container in db.execute(
                "SELECT client_id, subscription_name, destination, selector, no_local, "
                f"container FROM {t('ferrymq_durable_subscriptions')} ORDER BY position"
            )
        ]
        destinations = [
            n
            for (n,) in db.execute(
                f"SELECT qualified_name FROM {t('ferrymq_destinations')} ORDER BY 1"
            )
        ]
        producer_ids = [
            p
            for (p,) in db.execute(
                f"SELECT producer_message_id FROM {t('ferrymq_producer_ids')} ORDER BY id"
            )
        ]
        (stored_last,) = _one(
            db.execute(
                f"SELECT COALESCE(MAX(value), 0) FROM {t('ferrymq_meta')} WHERE key = %s",
                ("last_seq",),
            )
        )
        self.last_seq = max([stored_last, *(c.last_seq for c in containers.values())])
        self._next_producer_row = max_row + 1
        self._producer_rows = len(producer_ids)
        return Recovery(containers, subscriptions, destinations, producer_ids, self.last_seq)

    def apply(self, plan: WritePlan) -> None:
        """Write the plan inside the caller's transaction (order as in ``coalesce``)."""
        cursor = self._db.cursor()
        if plan.marks:
            cursor.execute(self._mark, _keys(plan.marks))
        if plan.removes:
            cursor.execute(self._remove, _keys(plan.removes))
        if plan.purges:
            cursor.execute(self._purge, (list(plan.purges),))
        if plan.inserts:
            rows = list(plan.inserts.values())
            columns = (
                [p.container for p in rows],
                [p.seq for p in rows],
                [p.blob for p in rows],
                [len(p.blob) for p in rows],
                [p.priority for p in rows],
                [p.expiration for p in rows],
                [p.persistent for p in rows],
                [p.delivered for p in rows],
            )
            cursor.execute(self._insert, columns)
        self._apply_table_ops(cursor, plan.table_ops)
        if plan.producer_message_ids:
            self._remember_producer_ids(cursor, plan.producer_message_ids)
        if plan.max_seq > self.last_seq:
            self.last_seq = plan.max_seq
            cursor.execute(
                (
                    f"INSERT INTO {self._names.table('ferrymq_meta')} (key, value) "
                    "VALUES ('last_seq', %s) ON CONFLICT (key) DO UPDATE SET value = "
                    "GREATEST(EXCLUDED.value, "
                    f"{self._names.table('ferrymq_meta')}.value)"
                ),
                (plan.max_seq,),
            )

    def _apply_table_ops(self, cursor: psycopg.Cursor[Any], ops: Sequence[TableOp]) -> None:
        for kind, run in groupby(ops, key=lambda op: op[0]):
            cursor.executemany(self._table_sql[kind], [params for _, params in run])

    def _remember_producer_ids(self, cursor: psycopg.Cursor[Any], ids: Sequence[str]) -> None:
        table = self._names.table("ferrymq_producer_ids")
        first = self._next_producer_row
        cursor.execute(self._remember, (list(range(first, first + len(ids))), list(ids)))
        self._next_producer_row += len(ids)
        self._producer_rows += len(ids)
        if self._producer_rows > self._window + self._prune_slack:
            cursor.execute(
                f"DELETE FROM {table} WHERE id < %s",
                (self._next_producer_row - self._window,),
            )
            self._producer_rows = self._window


def _keys(keys: Iterable[tuple[str, int]]) -> tuple[list[str], list[int]]:
    """``(container, seq)`` pairs as the two arrays ``unnest`` takes."""
    containers: list[str] = []
    seqs: list[int] = []
    for container, seq in keys:
        containers.append(container)
        seqs.append(seq)
    return containers, seqs


def _one(cursor: psycopg.Cursor[Any]) -> tuple[Any, ...]:
    row: tuple[Any, ...] | None = cursor.fetchone()
    assert row is not None, "a query that always returns one row returned none"
    return row


_BEGIN = "BEGIN ISOLATION LEVEL READ COMMITTED"


def _raise_lock_lost(error: psycopg.DatabaseError) -> None:
    """The fence check's error (SQLSTATE ``FMQ01``) becomes ``LockLostError``."""
    if error.sqlstate == LOCK_LOST_SQLSTATE:
        raise LockLostError(error.diag.message_primary or str(error)) from error


def lease_lost(conninfo: str, fence: Fence) -> str | None:
    """After the store's connection broke: why the lease is no longer ours, or None if it is.

    A successor terminates the sessions of the master it replaces (``fence_out``), so a lost
    connection is often the first sign of a takeover; this asks on a fresh connection.
    """
    sql = LockTableSql.for_prefix(fence.table_prefix)
    try:
        with psycopg.connect(conninfo, autocommit=True, connect_timeout=5) as connection:
            row = connection.execute(sql.owner).fetchone()
    except psycopg.Error:
        return None
    if row is None:
        return None
    holder, expires, epoch, now = row
    if (holder, epoch) == (fence.holder_id, fence.epoch) and expires > now:
        return None
    return (
        f"lost the database lock: {sql.table} is no longer held by {fence.holder_id} "
        f"(epoch {fence.epoch}) but by {holder or 'nobody'} (epoch {epoch}) until {expires}, "
        f"now {now}; the store's connection was closed by the server; "
        "the store refuses further writes"
    )
