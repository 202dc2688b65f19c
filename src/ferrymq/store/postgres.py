"""``PostgresStore``: the "JDBC" store (`<jdbcPersistenceAdapter>`), PostgreSQL through psycopg 3.

The threading model is ``GroupCommitWriter``'s (``writer``), as for ``SqliteStore``: one writer
thread owns a blocking connection; ``write`` and ``load`` only enqueue a job; the writer drains
everything queued meanwhile and applies it as one transaction with one ``COMMIT`` (one WAL flush
serves the whole group), sent as one pipeline (``postgres_db``).  A blocking driver on a thread
rather than psycopg's async API: the queue gives the ordering for free, the event loop never
spends time encoding parameters or decoding rows, and a group forms naturally while the thread
waits for the previous commit.

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
from collections.abc import Callable, Sequence

from ferrymq.store.base import (
    DEFAULT_PRODUCER_ID_WINDOW,
    LockLostError,
    Recovery,
    StoredMessage,
    StoreError,
    StoreOp,
    StoreStatistics,
)
from ferrymq.store.postgres_db import PostgresDatabase
from ferrymq.store.postgres_dsn import conninfo_from_url, describe
from ferrymq.store.postgres_fence import Fence, TableNames
from ferrymq.store.writer import GroupCommitWriter


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
        self._backend_pid: int | None = None
        self._writer = GroupCommitWriter(self._name)

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
        if not self._writer.claim():
            raise StoreError(f"store {self._name} was already started")
        source = self._fence_source
        self._fence = source() if callable(source) else source
        if self._fence is not None and self._fence.table_prefix != self._names.prefix:
            raise StoreError(
                f"the fence's table prefix {self._fence.table_prefix!r} is not the store's "
                f"{self._names.prefix!r}: both must use one ACTIVEMQ_LOCK table"
            )
        return await self._writer.start(self._open)

    async def stop(self) -> None:
        """Let queued writes finish, then close the connection."""
        await self._writer.stop()

    def write(self, ops: Sequence[StoreOp]) -> asyncio.Future[None]:
        return self._writer.write(ops)

    async def load(self, container: str, from_seq: int, limit: int) -> list[StoredMessage]:
        return await self._writer.load(container, from_seq, limit)

    def statistics(self) -> StoreStatistics:
        return self._writer.statistics()

    # --- writer thread -------------------------------------------------------------------------

    def _open(self) -> tuple[PostgresDatabase, Recovery]:
        """Connect and recover; a ``StoreError`` (``LockLostError`` for a lost lease) says why
        not."""
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
            raise StoreError(f"cannot open store database {self._name}: {e}") from e
        self._backend_pid = db.backend_pid
        try:
            return db, db.recover()
        except LockLostError as e:
            db.close()
            raise LockLostError(f"cannot recover store {self._name}: {e}") from e
        except Exception as e:
            db.close()
            raise StoreError(f"cannot recover store {self._name}: {e}") from e
