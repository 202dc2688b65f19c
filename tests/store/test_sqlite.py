"""SqliteStore: the conformance suite, then group commit, locking and failure handling."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ferrymq.store import (
    DEFAULT_PRODUCER_ID_WINDOW,
    AddMessage,
    MessageStore,
    SqliteStore,
    StoreError,
)

from .conformance import QUEUE_A, StoreConformance, StoreFactory, add, seqs


class TestSqliteStoreConformance(StoreConformance):
    @pytest.fixture
    async def store_factory(self, tmp_path: Path) -> AsyncIterator[StoreFactory]:
        created: list[MessageStore] = []

        def factory(*, producer_id_window: int = DEFAULT_PRODUCER_ID_WINDOW) -> MessageStore:
            store = SqliteStore(tmp_path / "kahadb", producer_id_window=producer_id_window)
            created.append(store)
            return store

        yield factory
        for store in created:
            await store.stop()


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    store = SqliteStore(tmp_path / "kahadb")
    await store.start()
    yield store
    await store.stop()


async def test_concurrent_writes_share_commits(store: SqliteStore) -> None:
    blob = bytes(1024)
    await asyncio.gather(*(store.write([AddMessage(QUEUE_A, seq, blob)]) for seq in range(1, 201)))
    stats = store.statistics()
    assert stats.operations == 200
    assert 1 <= stats.commits <= 20, stats
    assert stats.last_commit_ms > 0.0
    assert stats.total_commit_ms >= stats.last_commit_ms
    assert len(await store.load(QUEUE_A, 0, 1000)) == 200


async def test_loads_alone_do_not_commit(store: SqliteStore) -> None:
    await store.write([add(1)])
    commits = store.statistics().commits
    await asyncio.gather(*(store.load(QUEUE_A, 0, 10) for _ in range(5)))
    assert store.statistics().commits == commits


async def test_database_lives_in_the_directory(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "a" / "b")
    await store.start()
    await store.write([add(1)])
    await store.stop()
    assert store.path == tmp_path / "a" / "b" / "ferrymq.db"
    with sqlite3.connect(store.path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert db.execute("SELECT container, seq FROM messages").fetchall() == [(QUEUE_A, 1)]
    db.close()


async def test_lock_file_keeps_out_a_second_store(tmp_path: Path) -> None:
    directory = tmp_path / "kahadb"
    first = SqliteStore(directory)
    await first.start()
    second = SqliteStore(directory)
    message = f"store {directory} is locked by another broker (lock file {directory}/lock)"
    with pytest.raises(StoreError) as raised:
        await second.start()
    assert str(raised.value) == message
    await first.stop()
    third = SqliteStore(directory)  # released by stop()
    await third.start()
    await third.stop()


async def test_corrupt_database_names_the_file(tmp_path: Path) -> None:
    directory = tmp_path / "kahadb"
    directory.mkdir()
    (directory / "ferrymq.db").write_bytes(b"this is not a database, " * 200)
    with pytest.raises(StoreError, match=r"cannot open store database .*ferrymq\.db: ") as raised:
        await SqliteStore(directory).start()
    assert str(directory / "ferrymq.db") in str(raised.value)
    (directory / "ferrymq.db").unlink()
    store = SqliteStore(directory)  # the failed start released the lock
    assert (await store.start()).containers == {}
    await store.stop()


async def test_unusable_directory_names_the_path(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("a file where the store directory should be")
    directory = tmp_path / "file" / "kahadb"
    with pytest.raises(StoreError, match="is a file, not a directory") as raised:
        await SqliteStore(directory).start()
    assert str(directory) in str(raised.value)


async def test_failed_commit_breaks_the_store(store: SqliteStore) -> None:
    await store.write([add(1)])
    # The store holds its database in EXCLUSIVE locking mode: nothing else can change it under
    # the store, so the failure comes from a value SQLite cannot store (beyond 64 bits).
    other = sqlite3.connect(store.path, timeout=0.1)
    with pytest.raises(sqlite3.OperationalError, match="database is locked"):
        other.execute("DROP TABLE messages")
    other.close()
    unstorable = AddMessage(QUEUE_A, 2, b"x", expiration=2**64)
    group = [store.write([unstorable]), *(store.write([add(seq)]) for seq in range(3, 12))]
    results = await asyncio.gather(*group, return_exceptions=True)
    assert all(isinstance(r, StoreError) for r in results)
    assert str(store.path) in str(results[0])
    assert "too large" in str(results[0])
    with pytest.raises(StoreError, match="refuses further writes"):
        await store.write([add(20)])
    with pytest.raises(StoreError, match="refuses further writes"):
        await store.load(QUEUE_A, 0, 10)


async def test_synchronous_normal_and_off_work(tmp_path: Path) -> None:
    for mode in ("NORMAL", "OFF"):
        store = SqliteStore(tmp_path / mode, synchronous=mode)
        await store.start()
        await store.write([add(1)])
        assert seqs(await store.load(QUEUE_A, 0, 10)) == [1]
        await store.stop()
    with pytest.raises(ValueError, match="synchronous"):
        SqliteStore(tmp_path, synchronous="SOMETIMES")
