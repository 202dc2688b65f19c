"""The store slice: `<persistenceAdapter>` with its locker, and the JDBC data source.

FerryMQ keeps ActiveMQ's element names but not its storage engines: a `<kahaDB>` (or the older
`<amqPersistenceAdapter>`) becomes the embedded SQLite store in the same directory with the same
lock-file rules, and `<jdbcPersistenceAdapter>` becomes the PostgreSQL store (DESIGN "Stores").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TypeAlias

from ferrymq.config.errors import Location

__all__ = [
    "DataSourceConfig",
    "DatabaseLockerConfig",
    "JdbcPersistenceConfig",
    "KahaDBConfig",
    "LeaseDatabaseLockerConfig",
    "LockerConfig",
    "PersistenceConfig",
    "SharedFileLockerConfig",
]


@dataclass(frozen=True)
class SharedFileLockerConfig:
    """`<shared-file-locker>`: an exclusive lock on `<directory>/lock` (the default for kahaDB)."""

    lock_acquire_sleep_interval_ms: int = 10000
    """`lockAcquireSleepInterval`: how often a slave retries the lock. Default 10000."""
    fail_if_locked: bool = False
    """`failIfLocked`: fail start-up instead of waiting as a slave. Default false."""


@dataclass(frozen=True)
class LeaseDatabaseLockerConfig:
    """`<lease-database-locker>`: a lease row in the ACTIVEMQ_LOCK table, renewed by the master."""

    lock_acquire_sleep_interval_ms: int = 10000
    """`lockAcquireSleepInterval`: slave poll interval, and the lease duration. Default 10000."""
    fail_if_locked: bool = False
    """`failIfLocked`: fail start-up instead of waiting as a slave. Default false."""
    lease_holder_id: str | None = None
    """`leaseHolderId`: the name written into the lease row. Default None: the broker name."""
    max_allowable_diff_from_db_time_ms: int = 0
    """`maxAllowableDiffFromDBTime`: clock skew tolerated before adjusting to the database's
    clock. Default 0 (no adjustment)."""


@dataclass(frozen=True)
class DatabaseLockerConfig:
    """`<database-locker>`: a `SELECT ... FOR UPDATE` row lock held by an open transaction."""

    lock_acquire_sleep_interval_ms: int = 10000
    """`lockAcquireSleepInterval`: how often a slave retries the lock. Default 10000."""
    fail_if_locked: bool = False
    """`failIfLocked`: fail start-up instead of waiting as a slave. Default false."""


LockerConfig: TypeAlias = SharedFileLockerConfig | LeaseDatabaseLockerConfig | DatabaseLockerConfig


@dataclass(frozen=True)
class KahaDBConfig:
    """`<kahaDB>` (or `<amqPersistenceAdapter>`): the embedded file store, SQLite in FerryMQ.

    The journal and index tuning attributes are parsed so that existing files load, and ignored:
    SQLite in WAL mode keeps its own journal, and FerryMQ's group commit decides when to sync.
    """

    directory: Path | None = None
    """`directory`: where the store and its `lock` file live. Default None:
    `<dataDirectory>/<brokerName>/` (ActiveMQ: `<dataDirectory>/<brokerName>/KahaDB`)."""
    lock_keep_alive_period_ms: int = 0
    """`lockKeepAlivePeriod`: how often the master checks that it still holds the lock; 0 never
    checks (ActiveMQ's kahaDB default). Default 0."""
    locker: LockerConfig | None = None
    """`<locker>`: None means the default shared-file locker with its defaults."""
    use_lock: bool = True
    """`useLock`: take the lock at all (false only for a single broker on a private disk)."""
    stop_on_error: bool = False
    """`stopOnError`: stop the broker when the lock keep-alive raises. Default false."""
    adapter: str = "kahaDB"
    """The element it came from: `kahaDB` or `amqPersistenceAdapter` (both map to SQLite)."""
    journal_max_file_length: int | None = None
    """`journalMaxFileLength` (bytes). Ignored: SQLite has no journal files to size."""
    enable_journal_disk_syncs: bool | None = None
    """`enableJournalDiskSyncs`. Ignored: FerryMQ always syncs before a receipt (group commit)."""
    journal_disk_sync_strategy: str | None = None
    """`journalDiskSyncStrategy` (always/periodic/never). Ignored, as above."""
    journal_disk_sync_interval_ms: int | None = None
    """`journalDiskSyncInterval`. Ignored, as above."""
    index_write_batch_size: int | None = None
    """`indexWriteBatchSize`. Ignored: SQLite maintains its own indexes."""
    index_cache_size: int | None = None
    """`indexCacheSize`. Ignored, as above."""
    checkpoint_interval_ms: int | None = None
    """`checkpointInterval`. Ignored: SQLite checkpoints its WAL itself."""
    cleanup_interval_ms: int | None = None
    """`cleanupInterval`. Ignored: acked rows are deleted in the same transaction."""
    concurrent_store_and_dispatch_queues: bool | None = None
    """`concurrentStoreAndDispatchQueues`. Ignored: a receipt always waits for the store."""
    location: Location | None = field(default=None, compare=False)

    def ignored_options(self) -> list[str]:
        """The journal options that were set, by their activemq.xml names."""
        names = {
            "journal_max_file_length": "journalMaxFileLength",
            "enable_journal_disk_syncs": "enableJournalDiskSyncs",
            "journal_disk_sync_strategy": "journalDiskSyncStrategy",
            "journal_disk_sync_interval_ms": "journalDiskSyncInterval",
            "index_write_batch_size": "indexWriteBatchSize",
            "index_cache_size": "indexCacheSize",
            "checkpoint_interval_ms": "checkpointInterval",
            "cleanup_interval_ms": "cleanupInterval",
            "concurrent_store_and_dispatch_queues": "concurrentStoreAndDispatchQueues",
        }
        return [xml for attr, xml in names.items() if getattr(self, attr) is not None]


@dataclass(frozen=True)
class DataSourceConfig:
    """A Spring `<bean id=... class=...>` data source, resolved from `dataSource="#id"`."""

    bean_id: str
    """The bean's `id`."""
    class_name: str
    """The bean's `class`, e.g. `org.apache.commons.dbcp2.BasicDataSource`."""
    url: str | None = field(default=None, repr=False)  # may hold a password
    """`url` (or `jdbcUrl`; built from serverName/portNumber/databaseName for PGSimpleDataSource).
    `jdbc:postgresql://host:port/db` and `postgresql://...` are what the PostgreSQL store takes;
    other URLs are kept as written and rejected by the store with a clear error."""
    driver_class_name: str | None = None
    """`driverClassName`, e.g. `org.postgresql.Driver`."""
    username: str | None = None
    """`username` (or `user`)."""
    password: str | None = field(default=None, repr=False)
    """`password`."""
    properties: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), hash=False)
    """Every other `<property>` (pool settings and the like), as written."""

    @property
    def is_postgresql(self) -> bool:
        return self.url is not None and self.url.startswith(("jdbc:postgresql:", "postgresql:"))


@dataclass(frozen=True)
class JdbcPersistenceConfig:
    """`<jdbcPersistenceAdapter>`: the shared-database store, PostgreSQL in FerryMQ."""

    data_source: DataSourceConfig
    """`dataSource="#id"`, resolved. Without one (ActiveMQ's embedded Derby default) the loader
    gives the embedded store (`KahaDBConfig`) instead, and says so."""
    lock_keep_alive_period_ms: int = 30000
    """`lockKeepAlivePeriod`: how often the master renews or checks its lock. Default 30000."""
    locker: LockerConfig | None = None
    """`<locker>`: None means the default `<database-locker>`."""
    create_tables_on_startup: bool = True
    """`createTablesOnStartup`: create the schema when missing. Default true."""
    cleanup_period_ms: int = 300000
    """`cleanupPeriod`: how often expired and acked rows are swept. Default 300000."""
    table_prefix: str = ""
    """`<statements tablePrefix>`: prefix of the ACTIVEMQ_MSGS/ACKS/LOCK tables. Default ""."""
    use_lock: bool = True
    """`useLock`: take the database lock at all. Default true."""
    stop_on_error: bool = False
    """`stopOnError`: stop the broker when the lock keep-alive raises. Default false."""
    location: Location | None = field(default=None, compare=False)


PersistenceConfig: TypeAlias = KahaDBConfig | JdbcPersistenceConfig
