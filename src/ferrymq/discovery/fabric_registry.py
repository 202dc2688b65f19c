"""The fabric agent's registry: one table in a PostgreSQL database, and its notifications.

Every advertised service is a row ``(group_name, service_uri)`` with the agent that registered
it (``registrant``) and the end of its lease (``expires_at``). Every time is the database's
(``clock_timestamp()``), so the hosts' clocks never matter: a lease is alive while
``expires_at > clock_timestamp()``. A registrant renews its rows silently; a registration that
is new (or was expired, or came from another registrant) and a deregistration send a
notification on the group's channel in the same statement, so listeners learn of it when it
commits. Renewals send none: a listener sees a lease lapse on its next poll.

The table is created on first use, under an advisory lock, so brokers starting together do not
race each other's ``CREATE TABLE`` (which PostgreSQL does not make safe on its own even with
``IF NOT EXISTS``). It lives in the connection's ``search_path`` (choose a schema with the
libpq option ``options=-c search_path=NAME``); the channel is named after a hash of the table's
schema and the group, so registries in different schemas of one database, and different groups,
never hear each other, and a table dropped and created again keeps its channels.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Final, Literal

import psycopg
from psycopg import sql

TABLE: Final = "ferrymq_fabric_services"
SCHEMA_LOCK: Final = "SELECT pg_advisory_xact_lock(hashtext('ferrymq fabric registry'))"
"""Serialises the creators of the table (different from the store's schema lock)."""
CREATE_TABLE: Final = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    group_name text NOT NULL,
    service_uri text NOT NULL,
    registrant text NOT NULL,
    registered_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (group_name, service_uri)
)"""
COMMENT: Final = (
    f"COMMENT ON TABLE {TABLE} IS 'FerryMQ fabric:// discovery: the brokers of each group; "
    "a row is alive while expires_at > clock_timestamp()'"
)
_LEASE_END = "clock_timestamp() + %(lease_ms)s * interval '1 millisecond'"
RENEW: Final = f"""
UPDATE {TABLE} SET expires_at = {_LEASE_END}
WHERE group_name = %(group)s AND registrant = %(registrant)s
  AND service_uri = ANY(%(uris)s) AND expires_at > clock_timestamp()
RETURNING service_uri"""
REGISTER: Final = f"""
WITH registered AS (
    INSERT INTO {TABLE} AS s (group_name, service_uri, registrant, registered_at, expires_at)
    SELECT %(group)s, uri, %(registrant)s, clock_timestamp(), {_LEASE_END}
    FROM unnest(%(uris)s::text[]) AS uri
    ON CONFLICT (group_name, service_uri) DO UPDATE
    SET registrant = excluded.registrant, registered_at = excluded.registered_at,
        expires_at = excluded.expires_at
    WHERE s.registrant = excluded.registrant OR s.expires_at <= clock_timestamp()
    RETURNING service_uri
)
SELECT service_uri, pg_notify(%(channel)s, 'add ' || service_uri) FROM registered"""
"""Register (again) what is not alive under another registrant: the first live one keeps a
URI that two agents advertise."""
HOLDERS: Final = f"""
SELECT service_uri, registrant FROM {TABLE}
WHERE group_name = %(group)s AND service_uri = ANY(%(uris)s)"""
DEREGISTER: Final = f"""
WITH gone AS (
    DELETE FROM {TABLE}
    WHERE group_name = %(group)s AND registrant = %(registrant)s AND service_uri = ANY(%(uris)s)
    RETURNING service_uri
)
SELECT service_uri, pg_notify(%(channel)s, 'remove ' || service_uri) FROM gone"""
ALIVE: Final = f"""
SELECT service_uri FROM {TABLE}
WHERE group_name = %(group)s AND expires_at > clock_timestamp() ORDER BY service_uri"""
SWEEP: Final = f"""
DELETE FROM {TABLE}
WHERE group_name = %(group)s
  AND expires_at < clock_timestamp() - %(after_ms)s * interval '1 millisecond'"""
"""Rows of brokers that died long ago (a listing ignores them anyway)."""

Kind = Literal["add", "remove"]


@dataclass(frozen=True, slots=True)
class Notification:
    kind: Kind
    uri: str


class RegistryConnection:
    """One autocommit connection to the registry, listening to one group's channel if asked.

    Every method may raise ``psycopg.Error`` (or ``OSError``); the agent counts that as an
    outage, closes this connection and opens another once the registry answers again."""

    def __init__(self, connection: psycopg.AsyncConnection[tuple[Any, ...]], channel: str) -> None:
        self.connection = connection
        self.channel = channel
        self._in_doubt = False
        """A statement was interrupted (a timeout, a cancel): psycopg may still be cancelling
        it, so the connection is not trusted with another."""

    @classmethod
    async def open(
        cls, conninfo: str, group: str, *, application_name: str, timeout_ms: int, listen: bool
    ) -> RegistryConnection:
        """Connect, create the table if it is missing, and LISTEN to ``group``'s channel."""
        connection = await psycopg.AsyncConnection.connect(
            conninfo,
            autocommit=True,
            application_name=application_name[:63],
            connect_timeout=max(2, -(-timeout_ms // 1000)),
        )
        try:
            # A statement slower than a lease is of no use: it ends, and the agent retries.
            await connection.execute(
                "SELECT set_config('statement_timeout', %s, false)", (str(timeout_ms),)
            )
            schema = await cls._table(connection)
            digest = hashlib.sha256(f"{schema}\0{group}".encode()).hexdigest()[:32]
            registry = cls(connection, f"ferrymq_fabric_{digest}")
            if listen:
                await connection.execute(
                    sql.SQL("LISTEN {}").format(sql.Identifier(registry.channel))
                )
        except BaseException:
            await connection.close()
            raise
        return registry

    @staticmethod
    async def _table(connection: psycopg.AsyncConnection[tuple[Any, ...]]) -> str:
        """The schema of the table, after creating it if need be."""
        schema = await _table_schema(connection)
        if schema is None:
            async with connection.transaction():
                await connection.execute(SCHEMA_LOCK)
                await connection.execute(CREATE_TABLE)
                await connection.execute(COMMENT)
            schema = await _table_schema(connection)
        if schema is None:  # created in a schema outside the search_path?
            raise psycopg.errors.UndefinedTable(f"{TABLE} is not on the search_path")
        return schema

    async def close(self) -> None:
        await self.connection.close()

    @property
    def closed(self) -> bool:
        return self.connection.closed

    @property
    def usable(self) -> bool:
        """Open, and not left in the middle of a statement."""
        return not self.connection.closed and not self._in_doubt

    async def renew(
        self, group: str, uris: Collection[str], registrant: str, lease_ms: int
    ) -> set[str]:
        """Extend this registrant's unexpired leases; the URIs renewed."""
        params = {
            "group": group,
            "registrant": registrant,
            "uris": list(uris),
            "lease_ms": lease_ms,
        }
        return {row[0] for row in await self._rows(RENEW, params)}

    async def register(
        self, group: str, uris: Collection[str], registrant: str, lease_ms: int
    ) -> tuple[set[str], dict[str, str]]:
        """Register ``uris`` and notify; the URIs registered, and for each of the others the
        registrant that holds it alive."""
        params = {
            "group": group,
            "registrant": registrant,
            "uris": list(uris),
            "lease_ms": lease_ms,
            "channel": self.channel,
        }
        registered = {row[0] for row in await self._rows(REGISTER, params)}
        refused = [uri for uri in uris if uri not in registered]
        holders: dict[str, str] = {}
        if refused:
            rows = await self._rows(HOLDERS, {"group": group, "uris": refused})
            holders = {row[0]: row[1] for row in rows}
        return registered, holders

    async def deregister(self, group: str, uris: Collection[str], registrant: str) -> list[str]:
        """Delete this registrant's rows of ``uris`` and notify; the URIs deleted."""
        params = {"group": group, "registrant": registrant, "uris": list(uris)}
        rows = await self._rows(DEREGISTER, {**params, "channel": self.channel})
        return [row[0] for row in rows]

    async def alive(self, group: str) -> list[str]:
        """The group's services with an unexpired lease."""
        return [row[0] for row in await self._rows(ALIVE, {"group": group})]

    async def sweep(self, group: str, after_ms: int) -> None:
        """Delete the rows of ``group`` that expired more than ``after_ms`` ago."""
        await self._rows(SWEEP, {"group": group, "after_ms": after_ms})

    async def notifications(self, timeout_s: float) -> list[Notification]:
        """Wait up to ``timeout_s`` for notifications on the channel; those that came (those
        that arrived during other statements first)."""
        found: list[Notification] = []
        async for notify in self.connection.notifies(timeout=timeout_s, stop_after=1):
            kind, _, uri = notify.payload.partition(" ")
            if kind in ("add", "remove") and uri:
                found.append(Notification("add" if kind == "add" else "remove", uri))
        return found

    async def _rows(self, query: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        self._in_doubt = True
        cursor = await self.connection.execute(query, params)
        rows = await cursor.fetchall() if cursor.description is not None else []
        self._in_doubt = False
        return rows


async def _table_schema(connection: psycopg.AsyncConnection[tuple[Any, ...]]) -> str | None:
    """The schema the search_path finds the table in, or None if it finds none."""
    query = (
        f"SELECT relnamespace::regnamespace::text FROM pg_class WHERE oid = to_regclass('{TABLE}')"
    )
    row = await (await connection.execute(query)).fetchone()
    return None if row is None else str(row[0])
