"""The configured message store: SQLite for ``<kahaDB>``, PostgreSQL for
``<jdbcPersistenceAdapter>``, memory for a non-persistent broker."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ferrymq.config.model import BrokerConfig
from ferrymq.config.persistence import JdbcPersistenceConfig, KahaDBConfig
from ferrymq.service.errors import BrokerStartError
from ferrymq.store.base import MessageStore
from ferrymq.store.memory import MemoryStore
from ferrymq.store.sqlite import SqliteStore


def create_store(config: BrokerConfig, fence: Callable[[], Any] | None = None) -> MessageStore:
    """The configured store.  ``fence`` is the master/slave locker's: for SQLite a check run
    before each commit (the locker then holds the directory's lock, not the store); for
    PostgreSQL the lease record that every write transaction verifies."""
    if not config.persistent or config.persistence is None:
        return MemoryStore(producer_id_window=config.duplicate_window)
    if isinstance(config.persistence, KahaDBConfig):
        directory = config.store_directory
        assert directory is not None
        return SqliteStore(
            directory,
            producer_id_window=config.duplicate_window,
            lock=fence is None and config.persistence.use_lock,
            fence=fence,
        )
    if isinstance(config.persistence, JdbcPersistenceConfig):
        from ferrymq.store.postgres import PostgresStore  # psycopg: only when configured

        jdbc = config.persistence
        source = jdbc.data_source
        return PostgresStore(
            source.url or "",
            username=source.username,
            password=source.password,
            table_prefix=jdbc.table_prefix,
            producer_id_window=config.duplicate_window,
            fence=fence,
            create_tables_on_startup=jdbc.create_tables_on_startup,
        )
    raise BrokerStartError(
        f"{type(config.persistence).__name__}: this persistence adapter is not supported"
    )
