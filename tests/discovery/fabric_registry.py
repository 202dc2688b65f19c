"""What the fabric tests share: a registry in the test's own PostgreSQL schema (the session's
real server, ``tests.postgres``), agent URIs on it, and agents that stop when the test ends.

The URIs carry ``registry=`` without the password, which ``FERRYMQ_FABRIC_PASSWORD`` holds (the
fixture sets it), the way a deployment keeps it out of logged URIs; ``environment_url`` is the
``FERRYMQ_FABRIC_REGISTRY`` form, password included.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from urllib.parse import quote

import psycopg
import pytest

from ferrymq.client import DiscoveryListener
from ferrymq.discovery.fabric import FabricDiscoveryAgent
from ferrymq.discovery.fabric_options import PASSWORD_ENV, REGISTRY_ENV
from tests.discovery import agents
from tests.postgres import PostgresDatabase

FAST = {"keepAliveInterval": "100", "leaseDuration": "1000", "pollInterval": "100"}
"""Test timings: renew every 100 ms, expire after 1 s, read the group every 100 ms."""


@dataclass(frozen=True)
class RegistrySchema:
    database: PostgresDatabase

    def url(self, *, port: int | None = None, password: bool = False) -> str:
        """The libpq URL of the test's schema, by default without the password."""
        server = self.database.server
        secret = f":{server.password}" if password else ""
        return (
            f"postgresql://{server.username}{secret}@127.0.0.1:{port or server.port}/"
            f"{self.database.database}?options=-c%20search_path%3D{self.database.schema}"
        )

    def agent_uri(self, group: str, *, port: int | None = None, **options: str) -> str:
        """``fabric://GROUP?registry=...`` with the test timings, overridden by ``options``."""
        query = {"registry": quote(self.url(port=port), safe=":/@"), **FAST, **options}
        return f"fabric://{group}?" + "&".join(f"{k}={v}" for k, v in query.items())

    def rows(self, group: str) -> list[tuple[str, str, bool]]:
        """(service, registrant, alive) of every row of ``group``, straight from the table
        (none while it does not exist)."""
        with self.database.connect() as db:
            try:
                return db.execute(
                    "SELECT service_uri, registrant, expires_at > clock_timestamp() "
                    "FROM ferrymq_fabric_services WHERE group_name = %s ORDER BY service_uri",
                    (group,),
                ).fetchall()
            except psycopg.errors.UndefinedTable:
                return []

    def alive(self, group: str) -> list[str]:
        """The services of ``group`` with an unexpired lease."""
        return [service for service, _, alive in self.rows(group) if alive]


def registry_schema(database: PostgresDatabase, monkeypatch: pytest.MonkeyPatch) -> RegistrySchema:
    """The test's registry, with ``FERRYMQ_FABRIC_PASSWORD`` set (for this process and the
    broker processes it starts) and no ``FERRYMQ_FABRIC_REGISTRY``."""
    monkeypatch.setenv(PASSWORD_ENV, database.server.password)
    monkeypatch.delenv(REGISTRY_ENV, raising=False)
    return RegistrySchema(database)


def running_agent(
    uri: str, *services: str, listener: DiscoveryListener | None = None
) -> AbstractAsyncContextManager[FabricDiscoveryAgent]:
    """The fabric agent ``uri`` names, advertising ``services``, stopped when the test ends."""
    return agents.running_agent(FabricDiscoveryAgent, uri, *services, listener=listener)
