"""The PostgreSQL store's tables, created on start-up (`createTablesOnStartup`) when missing.

Tables (``<prefix>`` is `tablePrefix`): ``ferrymq_messages``, ``ferrymq_durable_subscriptions``,
``ferrymq_destinations``, ``ferrymq_producer_ids``, ``ferrymq_meta``, ActiveMQ's
``ACTIVEMQ_LOCK`` (plus its `EPOCH` column) and the fence's ``ferrymq_check_lease`` function.
FerryMQ's model (containers and broker-wide seqs, spooled rows, the producer-id window) is not
ActiveMQ's `ACTIVEMQ_MSGS`/`ACTIVEMQ_ACKS`, so the data tables carry FerryMQ's own names and can
neither be mistaken for nor collide with a real ActiveMQ schema in the same database.

Nothing is touched when everything exists: DDL takes strong locks (adding `EPOCH` locks the lock
table exclusively), and a slave starting beside a running master must not stall it.
"""

from __future__ import annotations

from typing import Any

import psycopg

from ferrymq.store.postgres_fence import LockTableSql, TableNames

SCHEMA_VERSION = 1
SCHEMA_LOCK = "SELECT pg_advisory_xact_lock(hashtext('ferrymq schema'))"
"""Brokers of a group start together; one of them creates the tables, the others wait for it."""
MIN_SERVER_VERSION = 140000
"""PostgreSQL 14: ``pg_terminate_backend`` with a timeout (the fence) and pipeline mode."""

TABLES = (
    "ferrymq_messages",
    "ferrymq_durable_subscriptions",
    "ferrymq_destinations",
    "ferrymq_producer_ids",
    "ferrymq_meta",
)


def _store_tables(names: TableNames) -> list[str]:
    t = names.table
    return [
        f"""CREATE TABLE IF NOT EXISTS {t("ferrymq_messages")} (
            container TEXT NOT NULL,
            seq BIGINT NOT NULL,
            blob BYTEA NOT NULL,
            size INTEGER NOT NULL,
            priority SMALLINT NOT NULL,
            expiration BIGINT NOT NULL,
            persistent BOOLEAN NOT NULL,
            delivered BOOLEAN NOT NULL,
            PRIMARY KEY (container, seq))""",
        # Only spooled (non-persistent) rows enter this index, so start-up finds them fast.
        f"CREATE INDEX IF NOT EXISTS {names.local('ferrymq_messages_spooled')} "
        f"ON {t('ferrymq_messages')} (seq) WHERE NOT persistent",
        f"CREATE SEQUENCE IF NOT EXISTS {t('ferrymq_subscription_order')}",
        f"""CREATE TABLE IF NOT EXISTS {t("ferrymq_durable_subscriptions")} (
            client_id TEXT NOT NULL,
            subscription_name TEXT NOT NULL,
            destination TEXT NOT NULL,
            selector TEXT,
            no_local BOOLEAN NOT NULL,
            container TEXT NOT NULL,
            position BIGINT NOT NULL DEFAULT nextval('{t("ferrymq_subscription_order")}'),
            PRIMARY KEY (client_id, subscription_name))""",
        f"CREATE TABLE IF NOT EXISTS {t('ferrymq_destinations')} (qualified_name TEXT PRIMARY KEY)",
        f"CREATE TABLE IF NOT EXISTS {t('ferrymq_producer_ids')} "
        "(id BIGINT PRIMARY KEY, producer_message_id TEXT NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {t('ferrymq_meta')} "
        "(key TEXT PRIMARY KEY, value BIGINT NOT NULL)",
        f"INSERT INTO {t('ferrymq_meta')} (key, value) VALUES ('schema_version', {SCHEMA_VERSION}) "
        "ON CONFLICT (key) DO NOTHING",
    ]


def _one(connection: psycopg.Connection[Any], query: str, params: Any = None) -> Any:
    row = connection.execute(query, params).fetchone()
    assert row is not None, "a query that always returns one row returned none"
    return row[0]


def lock_table_complete(connection: psycopg.Connection[Any], lock: LockTableSql) -> bool:
    return bool(_one(connection, lock.is_complete, {"table": lock.table})) and bool(
        _one(connection, lock.has_row)
    )


def ensure_schema(connection: psycopg.Connection[Any], names: TableNames, create: bool) -> None:
    """Create what is missing (or say what is missing); refuse a newer schema or server.

    Raises ``ValueError`` with the reason, or ``psycopg.Error``.
    """
    version = connection.info.server_version
    if version < MIN_SERVER_VERSION:
        raise ValueError(f"PostgreSQL {version // 10000} is too old: 14 or newer is required")
    lock = LockTableSql.for_prefix(names.prefix)
    missing = [t for t in map(names.table, TABLES) if _one(connection, _EXISTS, (t,)) is None]
    lock_complete = lock_table_complete(connection, lock)
    check_present = bool(_one(connection, lock.has_check, {"signature": lock.check_signature}))
    if not create:
        absent = [f"table {t}" for t in [*missing, *([] if lock_complete else [lock.table])]]
        absent += [] if check_present else [f"function {lock.check_signature}"]
        if absent:
            raise ValueError(f"{absent[0]} does not exist and createTablesOnStartup is false")
    elif missing or not lock_complete or not check_present:
        with connection.transaction():
            connection.execute(SCHEMA_LOCK)
            for statement in _store_tables(names) if missing else []:
                connection.execute(statement)
            if not lock_table_complete(connection, lock):  # another broker may have done it
                for statement in lock.create:
                    connection.execute(statement)
            connection.execute(lock.create_check)
    stored = _one(
        connection,
        f"SELECT value FROM {names.table('ferrymq_meta')} WHERE key = %s",
        ("schema_version",),
    )
    if stored > SCHEMA_VERSION:
        raise ValueError(f"schema version {stored} is newer than {SCHEMA_VERSION}")


_EXISTS = "SELECT to_regclass(%s)"
