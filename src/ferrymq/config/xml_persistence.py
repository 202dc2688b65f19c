"""`<persistenceAdapter>` and `<locker>` (seed 000 chapter 3, seed 003, reference section 5)."""

from __future__ import annotations

from ferrymq.config.persistence import (
    DatabaseLockerConfig,
    JdbcPersistenceConfig,
    KahaDBConfig,
    LeaseDatabaseLockerConfig,
    LockerConfig,
    PersistenceConfig,
    SharedFileLockerConfig,
)
from ferrymq.config.spring import data_source
from ferrymq.config.xml_document import Element, LoadContext

__all__ = ["read_persistence_adapter", "read_persistence_factory"]

_EMBEDDED_DATABASE = (
    "ActiveMQ's embedded Derby database: FerryMQ keeps these messages in its embedded SQLite "
    "store instead, in the broker's data directory (<dataDirectory>/<brokerName>)"
)

_UNSUPPORTED = {
    "levelDB": "LevelDB was removed from ActiveMQ; use <kahaDB>",
    "replicatedLevelDB": "replicated LevelDB was removed from ActiveMQ; use a shared store",
    "mKahaDB": "multi-kahaDB is not supported; use one <kahaDB>",
    "journalPersistenceAdapterFactory": (
        "the journaled JDBC adapter is not supported (seed 000 section 3.2: use the direct "
        "<jdbcPersistenceAdapter>)"
    ),
}
_ADAPTERS = {
    "kahaDB",
    "amqPersistenceAdapter",
    "jdbcPersistenceAdapter",
    "memoryPersistenceAdapter",
}


def read_persistence_adapter(context: LoadContext, element: Element) -> PersistenceConfig | None:
    """The one store inside `<persistenceAdapter>`; None for `<memoryPersistenceAdapter>`."""
    reader = context.reader(element)
    children = reader.children(_ADAPTERS | set(_UNSUPPORTED))
    reader.finish()
    if len(children) != 1:
        raise context.error(element, "expected exactly one store element inside")
    adapter = children[0]
    if adapter.name in _UNSUPPORTED:
        raise context.error(adapter, _UNSUPPORTED[adapter.name])
    if adapter.name == "jdbcPersistenceAdapter":
        return _jdbc(context, adapter)
    if adapter.name == "memoryPersistenceAdapter":
        memory = context.reader(adapter)
        memory.children(())
        memory.finish()
        return None
    return _kahadb(context, adapter)


def _kahadb(context: LoadContext, element: Element) -> KahaDBConfig:
    reader = context.reader(element)
    locker_element = reader.single_children({"locker"}).get("locker")
    locker = _locker_child(context, locker_element, element.name)
    config = KahaDBConfig(
        directory=reader.path("directory"),
        lock_keep_alive_period_ms=reader.integer("lockKeepAlivePeriod", 0, minimum=0),
        locker=locker,
        use_lock=reader.boolean("useLock", True),
        stop_on_error=reader.boolean("stopOnError", False),
        adapter=element.name,
        journal_max_file_length=reader.size("journalMaxFileLength"),
        enable_journal_disk_syncs=reader.optional_boolean("enableJournalDiskSyncs"),
        journal_disk_sync_strategy=reader.custom("journalDiskSyncStrategy", _sync_strategy),
        journal_disk_sync_interval_ms=reader.optional_integer("journalDiskSyncInterval", minimum=0),
        index_write_batch_size=reader.optional_integer("indexWriteBatchSize", minimum=1),
        index_cache_size=reader.optional_integer("indexCacheSize", minimum=1),
        checkpoint_interval_ms=reader.optional_integer("checkpointInterval", minimum=0),
        cleanup_interval_ms=reader.optional_integer("cleanupInterval", minimum=0),
        concurrent_store_and_dispatch_queues=reader.optional_boolean(
            "concurrentStoreAndDispatchQueues"
        ),
        location=reader.location(),
    )
    reader.finish()
    return config


def _sync_strategy(text: str) -> str:
    if text.lower() not in ("always", "periodic", "never"):
        raise ValueError(f"expected always, periodic or never, got {text!r}")
    return text.lower()


def read_persistence_factory(context: LoadContext, element: Element) -> PersistenceConfig:
    """The broker's `<persistenceFactory><journalPersistenceAdapterFactory>` (ActiveMQ's
    journal in front of a JDBC database): the database store when it names a `dataSource`,
    else the embedded store that stands for ActiveMQ's default embedded Derby."""
    reader = context.reader(element)
    children = reader.children({"journalPersistenceAdapterFactory"})
    reader.finish()
    if len(children) != 1:
        raise context.error(element, "expected exactly one <journalPersistenceAdapterFactory>")
    factory = context.reader(children[0])
    source = data_source(factory, "dataSource")
    if source is not None and not source.class_name.startswith("org.apache.derby."):
        factory.children(())
        factory.finish()
        return JdbcPersistenceConfig(data_source=source, location=factory.location())
    factory.path("dataDirectory")  # ActiveMQ's journal and Derby files: not used
    factory.children(())
    factory.finish()
    context.ignore(children[0], "<journalPersistenceAdapterFactory>", _EMBEDDED_DATABASE)
    return KahaDBConfig(location=factory.location())


def _jdbc(context: LoadContext, element: Element) -> PersistenceConfig:
    reader = context.reader(element)
    children = reader.single_children({"locker", "statements"})
    source = data_source(reader, "dataSource")
    if source is None or source.class_name.startswith("org.apache.derby."):
        shown = element.describe("dataSource")
        context.ignore(element, shown, _EMBEDDED_DATABASE)
        reader.finish()
        return KahaDBConfig(location=reader.location())
    use_lock = reader.boolean("useLock", True)
    legacy_use_lock = reader.optional_boolean("useDatabaseLock")
    config = JdbcPersistenceConfig(
        data_source=source,
        lock_keep_alive_period_ms=reader.integer("lockKeepAlivePeriod", 30000, minimum=0),
        locker=_locker_child(context, children.get("locker"), "jdbcPersistenceAdapter"),
        create_tables_on_startup=reader.boolean("createTablesOnStartup", True),
        cleanup_period_ms=reader.integer("cleanupPeriod", 300000),
        table_prefix=_table_prefix(context, children.get("statements")),
        use_lock=use_lock if legacy_use_lock is None else use_lock and legacy_use_lock,
        stop_on_error=reader.boolean("stopOnError", False),
        location=reader.location(),
    )
    reader.finish()
    return config


def _table_prefix(context: LoadContext, element: Element | None) -> str:
    """`<statements><statements tablePrefix="..."/></statements>`."""
    if element is None:
        return ""
    outer = context.reader(element)
    inner = outer.single_children({"statements"}).get("statements")
    outer.finish()
    if inner is None:
        return ""
    reader = context.reader(inner)
    prefix = reader.string("tablePrefix", "")
    reader.children(())
    reader.finish()
    if prefix and not prefix.replace("_", "").isalnum():
        raise context.error(
            inner, "a table prefix may hold only letters, digits and _", "tablePrefix"
        )
    return prefix


def _locker_child(
    context: LoadContext, element: Element | None, adapter: str
) -> LockerConfig | None:
    if element is None:
        return None
    outer = context.reader(element)
    children = outer.children({"shared-file-locker", "lease-database-locker", "database-locker"})
    outer.finish()
    if len(children) != 1:
        raise context.error(element, "expected exactly one locker inside <locker>")
    locker = children[0]
    file_store = adapter != "jdbcPersistenceAdapter"
    if file_store != (locker.name == "shared-file-locker"):
        needs = "<jdbcPersistenceAdapter>" if file_store else "a file store such as <kahaDB>"
        raise context.error(locker, f"<{locker.name}> needs {needs}, not <{adapter}>")
    reader = context.reader(locker)
    interval = reader.integer("lockAcquireSleepInterval", 10000, minimum=0)
    fail_if_locked = reader.boolean("failIfLocked", False)
    result: LockerConfig
    if locker.name == "shared-file-locker":
        result = SharedFileLockerConfig(interval, fail_if_locked)
    elif locker.name == "database-locker":
        result = DatabaseLockerConfig(interval, fail_if_locked)
    else:
        result = LeaseDatabaseLockerConfig(
            interval,
            fail_if_locked,
            lease_holder_id=reader.optional("leaseHolderId"),
            max_allowable_diff_from_db_time_ms=reader.integer("maxAllowableDiffFromDBTime", 0),
        )
    reader.children(())
    reader.finish()
    return result
