"""PostgresStore: the conformance suite, then group commit, restarts, urls and connection loss."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from psycopg.conninfo import conninfo_to_dict

from ferrymq.store import (
    DEFAULT_PRODUCER_ID_WINDOW,
    AddDestination,
    AddMessage,
    MessageStore,
    StoreError,
)
from ferrymq.store.postgres import PostgresStore
from ferrymq.store.postgres_dsn import conninfo_from_url, describe, redact
from tests.postgres import PostgresDatabase

from .conformance import QUEUE_A, StoreConformance, StoreFactory, add, seqs


class TestPostgresStoreConformance(StoreConformance):
    @pytest.fixture
    async def store_factory(
        self, postgres_database: PostgresDatabase
    ) -> AsyncIterator[StoreFactory]:
        created: list[MessageStore] = []

        def factory(*, producer_id_window: int = DEFAULT_PRODUCER_ID_WINDOW) -> MessageStore:
            store = PostgresStore(postgres_database.url, producer_id_window=producer_id_window)
            created.append(store)
            return store

        yield factory
        for store in created:
            await store.stop()


@pytest.fixture
async def store(postgres_database: PostgresDatabase) -> AsyncIterator[PostgresStore]:
    store = PostgresStore(postgres_database.url)
    await store.start()
    yield store
    await store.stop()


async def test_concurrent_writes_share_commits(
    store: PostgresStore, postgres_database: PostgresDatabase
) -> None:
    blob = bytes(1024)
    await asyncio.gather(*(store.write([AddMessage(QUEUE_A, seq, blob)]) for seq in range(1, 201)))
    stats = store.statistics()
    assert stats.operations == 200
    assert 1 <= stats.commits <= 20, stats
    assert stats.total_commit_ms >= stats.last_commit_ms > 0.0
    with postgres_database.connect() as db:
        rows = db.execute("SELECT count(*), sum(size) FROM ferrymq_messages").fetchone()
    assert rows == (200, 200 * 1024)


async def test_loads_alone_do_not_commit(store: PostgresStore) -> None:
    await store.write([add(1)])
    commits = store.statistics().commits
    await asyncio.gather(*(store.load(QUEUE_A, 0, 10) for _ in range(5)))
    assert store.statistics().commits == commits


async def test_a_new_store_on_the_same_database_sees_everything(
    postgres_database: PostgresDatabase,
) -> None:
    first = PostgresStore(postgres_database.url)
    await first.start()
    await first.write([add(1, producer_message_id="p1"), AddDestination(QUEUE_A)])
    # No stop(): a second broker process takes over a database its predecessor left behind.
    second = PostgresStore(postgres_database.url)
    recovery = await second.start()
    assert recovery.containers[QUEUE_A].count == 1
    assert recovery.producer_message_ids == ["p1"]
    assert recovery.destinations == [QUEUE_A]
    assert recovery.last_seq == 1
    await first.stop()
    await second.stop()


async def test_seed_style_data_source(postgres_database: PostgresDatabase) -> None:
    """seed 000 Example 3.3: a JDBC url, with username and password as separate properties."""
    server = postgres_database.server
    store = PostgresStore(
        postgres_database.jdbc_url, username=server.username, password=server.password
    )
    await store.start()
    await store.write([add(1)])
    assert seqs(await store.load(QUEUE_A, 0, 10)) == [1]
    assert store.database == (
        f"postgresql://postgres@127.0.0.1:{server.port}/{postgres_database.database}"
    )
    await store.stop()


def test_a_non_postgresql_url_is_refused() -> None:
    oracle = "jdbc:oracle:thin:@localhost:1521:AMQDB"  # seed 000 Example 3.3
    with pytest.raises(StoreError) as raised:
        PostgresStore(oracle, username="scott", password="tiger")
    assert str(raised.value) == (
        f"data source url {oracle} is not a PostgreSQL url: FerryMQ's JDBC store supports only "
        "PostgreSQL (jdbc:postgresql://host:port/db or postgresql://...)"
    )
    with pytest.raises(StoreError, match="mysql://db/amq is not a PostgreSQL url"):
        PostgresStore("mysql://db/amq")


async def test_a_wrong_password_names_the_database_not_the_password(
    postgres_database: PostgresDatabase,
) -> None:
    store = PostgresStore(postgres_database.jdbc_url, username="postgres", password="wrong-pw")
    with pytest.raises(StoreError, match="cannot open store database postgresql://postgres@") as e:
        await store.start()
    assert "password authentication failed" in str(e.value)
    assert "wrong-pw" not in str(e.value)
    with pytest.raises(StoreError, match="not running"):
        await store.write([add(1)])


async def test_tables_can_be_left_to_the_dba(postgres_database: PostgresDatabase) -> None:
    store = PostgresStore(postgres_database.url, create_tables_on_startup=False)
    with pytest.raises(
        StoreError, match="table ferrymq_messages does not exist and createTablesOnStartup is false"
    ):
        await store.start()
    creator = PostgresStore(postgres_database.url)
    await creator.start()
    await creator.stop()
    store = PostgresStore(postgres_database.url, create_tables_on_startup=False)
    await store.start()
    await store.stop()


async def test_table_prefix(postgres_database: PostgresDatabase) -> None:
    store = PostgresStore(postgres_database.url, table_prefix="amq_")
    await store.start()
    await store.write([add(1)])
    await store.stop()
    with postgres_database.connect() as db:
        assert db.execute("SELECT seq FROM amq_ferrymq_messages").fetchall() == [(1,)]
        assert db.execute("SELECT to_regclass('ferrymq_messages')").fetchone() == (None,)
    with pytest.raises(StoreError, match="table prefix 'x; DROP TABLE y' is not usable"):
        PostgresStore(postgres_database.url, table_prefix="x; DROP TABLE y")


async def test_connection_loss_fails_pending_writes_and_breaks_the_store(
    store: PostgresStore, postgres_database: PostgresDatabase
) -> None:
    await store.write([add(1)])
    assert store.backend_pid is not None
    with postgres_database.connect() as blocker, postgres_database.connect() as monitor:
        blocker.execute("BEGIN")
        blocker.execute("LOCK TABLE ferrymq_messages IN ACCESS EXCLUSIVE MODE")
        first = store.write([add(2)])  # the writer thread blocks on the table lock
        postgres_database.wait_for_lock_wait(store.backend_pid)
        queued = [store.write([add(seq)]) for seq in range(3, 13)]
        monitor.execute("SELECT pg_terminate_backend(%s)", (store.backend_pid,))
        results = await asyncio.gather(first, *queued, return_exceptions=True)
        blocker.execute("ROLLBACK")
    assert all(isinstance(r, StoreError) for r in results), results
    assert "refuses further writes" in str(results[0])
    assert store.database in str(results[0])
    with pytest.raises(StoreError, match="refuses further writes"):
        await store.write([add(20)])
    with pytest.raises(StoreError, match="refuses further writes"):
        await store.load(QUEUE_A, 0, 10)
    with postgres_database.connect() as db:
        assert db.execute("SELECT seq FROM ferrymq_messages").fetchall() == [(1,)]


@pytest.mark.parametrize(
    ("url", "conninfo"),
    [
        (
            "jdbc:postgresql://db.example:5433/amq?user=u&password=p&ssl=true",
            {"host": "db.example", "port": "5433", "dbname": "amq", "user": "scott"}
            | {"password": "tiger", "sslmode": "require"},
        ),
        ("jdbc:postgresql:amq", {"host": "localhost", "dbname": "amq", "user": "scott"}),
        (
            "jdbc:postgresql://h1:1,h2:2/amq?currentSchema=broker&ApplicationName=a"
            "&targetServerType=primary&sslmode=verify-full&ssl=true&prepareThreshold=0",
            {"host": "h1,h2", "port": "1,2", "dbname": "amq", "user": "scott"}
            | {"options": "-c search_path=broker", "application_name": "a"}
            | {"target_session_attrs": "primary", "sslmode": "verify-full"},
        ),
        ("postgresql://u@h/amq", {"host": "h", "dbname": "amq", "user": "scott"}),
        ("host=h dbname=amq", {"host": "h", "dbname": "amq", "user": "scott"}),
    ],
)
def test_data_source_urls(url: str, conninfo: dict[str, str]) -> None:
    password = {"password": "tiger"} if "password" in conninfo else {}
    translated = conninfo_from_url(url, username="scott", **password)
    assert conninfo_to_dict(translated) == conninfo


def test_passwords_are_redacted() -> None:
    assert redact("postgresql://u:secret@h/db") == "postgresql://u:***@h/db"
    assert redact("jdbc:postgresql://h/db?user=u&password=secret") == (
        "jdbc:postgresql://h/db?user=u&password=***"
    )
    assert "secret" not in describe(conninfo_from_url("postgresql://u:secret@h/db"))
