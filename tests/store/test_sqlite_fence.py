"""The SQLite store's fencing (issue 13, items 3 and 4): the epoch row, keys that cannot collide
across terms, SQLite's exclusive lock, and the busy open.

Two stores in one process see each other's SQLite locks (SQLite tracks them per file), so these
tests need no second process.  In the product every connection holds its database in EXCLUSIVE
locking mode, which keeps a second store out altogether (``StoreBusyError``); the epoch fence is
shown on connections in NORMAL locking mode, the only way two can have the database open at once.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from ferrymq.store import AddMessage, LockLostError, SqliteStore, StoreBusyError
from ferrymq.store.coalesce import WritePlan
from ferrymq.store.sqlite_db import SEQ_EPOCH_SHIFT, SqliteDatabase

QUEUE = "queue://orders"
WINDOW = 100


def stored_epoch(path: Path) -> int:
    with sqlite3.connect(path) as db:
        (epoch,) = db.execute("SELECT value FROM meta WHERE key = 'epoch'").fetchone()
    db.close()
    return int(epoch)


def rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as db:
        found = db.execute(sql).fetchall()
    db.close()
    return found


def write(db: SqliteDatabase, *ops: AddMessage) -> None:
    """One write transaction, as the store's writer thread runs it."""
    plan = WritePlan()
    plan.add(ops)
    db.begin()
    try:
        db.apply(plan)
        db.commit()
    except BaseException:
        db.rollback()
        raise


@pytest.fixture
def shared(tmp_path: Path) -> Iterator[list[SqliteDatabase]]:
    """Connections in NORMAL locking mode on one database, closed after the test."""
    opened: list[SqliteDatabase] = []
    yield opened
    for db in opened:
        db.close()


def open_normal(path: Path, opened: list[SqliteDatabase]) -> SqliteDatabase:
    db = SqliteDatabase.open(path, "FULL", WINDOW, exclusive=False)
    opened.append(db)
    return db


async def test_a_second_store_cannot_open_while_the_first_holds_the_database(
    tmp_path: Path,
) -> None:
    first = SqliteStore(tmp_path, lock=False)
    recovery = await first.start()
    await first.write([AddMessage(QUEUE, recovery.last_seq + 1, b"first")])
    second = SqliteStore(tmp_path, lock=False)
    with pytest.raises(StoreBusyError, match="held by another process") as raised:
        await second.start()
    assert str(first.path) in str(raised.value)
    await first.write([AddMessage(QUEUE, recovery.last_seq + 2, b"still the master")])
    await first.stop()  # closing the connection releases SQLite's lock
    third = SqliteStore(tmp_path, lock=False)
    after = await third.start()
    assert [m.blob for m in await third.load(QUEUE, 0, 10)] == [b"first", b"still the master"]
    assert after.last_seq >= 2 << SEQ_EPOCH_SHIFT
    await third.stop()


async def test_a_database_held_by_another_connection_makes_the_open_busy(
    tmp_path: Path,
) -> None:
    """A paused master inside a transaction, as seen by the store that wants the database."""
    store = SqliteStore(tmp_path)
    await store.start()
    await store.stop()
    holder = sqlite3.connect(store.path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    with pytest.raises(StoreBusyError, match="paused or deposed master"):
        await SqliteStore(tmp_path).start()
    holder.execute("ROLLBACK")
    holder.close()
    again = SqliteStore(tmp_path)  # the failed start released the directory's lock
    await again.start()
    await again.stop()


async def test_every_open_takes_the_next_epoch_and_seqs_above_it(tmp_path: Path) -> None:
    epochs = []
    floors = []
    for _ in range(3):
        store = SqliteStore(tmp_path)
        recovery = await store.start()
        await store.write([AddMessage(QUEUE, recovery.last_seq + 1, b"m")])
        await store.stop()
        epochs.append(stored_epoch(store.path))
        floors.append(recovery.last_seq)
    assert epochs == [1, 2, 3]
    assert floors == [epoch << SEQ_EPOCH_SHIFT for epoch in epochs]


async def test_a_database_from_before_the_epoch_upgrades_in_place(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path, producer_id_window=WINDOW)
    await store.start()
    await store.write([AddMessage(QUEUE, 7, b"old", producer_message_id="p-old")])
    await store.stop()
    with sqlite3.connect(store.path) as db:  # what an older FerryMQ left behind
        db.execute("DELETE FROM meta WHERE key = 'epoch'")
        db.execute("UPDATE producer_ids SET id = 41")
    db.close()
    upgraded = SqliteStore(tmp_path, producer_id_window=WINDOW)
    recovery = await upgraded.start()
    assert recovery.last_seq == 1 << SEQ_EPOCH_SHIFT
    assert recovery.producer_message_ids == ["p-old"]
    assert recovery.containers[QUEUE].last_seq == 7
    await upgraded.write(
        [AddMessage(QUEUE, recovery.last_seq + 1, b"new", producer_message_id="p")]
    )
    await upgraded.stop()
    assert stored_epoch(upgraded.path) == 1
    assert rows(upgraded.path, "SELECT id FROM producer_ids ORDER BY id") == [(41,), (42,)]


def two_terms(
    path: Path, shared: list[SqliteDatabase], first: tuple[str, str], then: tuple[str, str]
) -> tuple[SqliteDatabase, int, SqliteDatabase, int]:
    """A master's connection that wrote one message (body, producer id), then its successor's
    that wrote one: both connections and the seq floors their recoveries gave."""
    old = open_normal(path, shared)
    old_floor = old.recover().last_seq
    write(old, AddMessage(QUEUE, old_floor + 1, first[0].encode(), producer_message_id=first[1]))
    new = open_normal(path, shared)
    new_floor = new.recover().last_seq
    write(new, AddMessage(QUEUE, new_floor + 1, then[0].encode(), producer_message_id=then[1]))
    return old, old_floor, new, new_floor


def test_a_fenced_out_connection_writes_nothing(
    tmp_path: Path, shared: list[SqliteDatabase]
) -> None:
    """The deposed master of item 4, on a connection that reads the current database: its
    transaction stops at the epoch check, before any statement on the data."""
    path = tmp_path / "ferrymq.db"
    old, old_floor, new, new_floor = two_terms(
        path, shared, ("old master", "p1"), ("new master", "p2")
    )
    assert new.epoch == old.epoch + 1
    assert new_floor == new.epoch << SEQ_EPOCH_SHIFT

    statements: list[str] = []
    old._db.set_trace_callback(statements.append)
    with pytest.raises(LockLostError, match=r"fenced out") as raised:
        write(old, AddMessage(QUEUE, new_floor + 1, b"late", producer_message_id="p3"))
    assert f"epoch {old.epoch}, now {new.epoch}" in str(raised.value)
    assert not [s for s in statements if "messages" in s or "producer_ids" in s], statements
    assert rows(path, "SELECT seq, blob FROM messages ORDER BY seq") == [
        (old_floor + 1, b"old master"),
        (new_floor + 1, b"new master"),
    ]
    assert rows(path, "SELECT producer_message_id FROM producer_ids ORDER BY id") == [
        ("p1",),
        ("p2",),
    ]


def test_keys_of_different_terms_cannot_collide(
    tmp_path: Path, shared: list[SqliteDatabase]
) -> None:
    """Were the epoch check ever passed by a deposed master (it read a stale epoch), its rows
    still land beside its successor's: seqs come from its own epoch's range, producer-id rows
    are numbered by SQLite, not by a counter of its process (the collision that item 4 saw)."""
    path = tmp_path / "ferrymq.db"
    old, old_floor, new, _ = two_terms(path, shared, ("old 1", "old-1"), ("new 1", "new-1"))
    old.epoch = new.epoch  # the fence missed
    write(old, AddMessage(QUEUE, old_floor + 2, b"old 2", producer_message_id="old-2"))
    assert rows(path, "SELECT blob FROM messages ORDER BY seq") == [
        (b"old 1",),
        (b"old 2",),
        (b"new 1",),
    ]
    assert rows(path, "SELECT id, producer_message_id FROM producer_ids ORDER BY id") == [
        (1, "old-1"),
        (2, "new-1"),
        (3, "old-2"),
    ]
