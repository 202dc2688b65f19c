"""Write fencing (DESIGN "Fencing"): a master past its lease never writes after a takeover.

The interleaving tests hold one side's transaction open on a separate connection and watch the
other side block on the lock row in ``pg_stat_activity``, so each order is forced, not hoped for.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable

import psycopg
import pytest

from ferrymq.ha.lease import LeaseDatabaseLocker
from ferrymq.store import AddMessage, StoreError
from ferrymq.store.base import LockLostError
from ferrymq.store.postgres import PostgresStore
from ferrymq.store.postgres_fence import Fence, LockTableSql
from tests.postgres import PostgresDatabase

from .conftest import KEEP_ALIVE_MS, LEASE_MS, WAIT_S, LockerFactory, sleep_past_lease

QUEUE = "queue://orders"
StoreFactory = Callable[[Fence], PostgresStore]
ACQUIRE = LockTableSql.for_prefix("").acquire


def message(seq: int, writer: str) -> AddMessage:
    return AddMessage(QUEUE, seq, writer.encode())


def stored(database: PostgresDatabase) -> list[tuple[int, bytes]]:
    with database.connect() as db:
        return db.execute("SELECT seq, blob FROM ferrymq_messages ORDER BY seq").fetchall()


@pytest.fixture
async def store_factory(postgres_database: PostgresDatabase) -> AsyncIterator[StoreFactory]:
    created: list[PostgresStore] = []

    def factory(fence: Fence) -> PostgresStore:
        store = PostgresStore(postgres_database.url, fence=fence)
        created.append(store)
        return store

    yield factory
    for store in created:
        await store.stop()


async def test_a_paused_master_cannot_write_after_a_takeover(
    locker_factory: LockerFactory,
    store_factory: StoreFactory,
    postgres_database: PostgresDatabase,
) -> None:
    a, b = locker_factory("A"), locker_factory("B")
    await a.acquire()
    store_a = store_factory(a.fence())
    await store_a.start()
    await store_a.write([message(1, "A")])
    async with asyncio.timeout(WAIT_S):
        await b.acquire()  # A is paused: it stopped renewing
    store_b = store_factory(b.fence())
    recovery = await store_b.start()
    assert recovery.containers[QUEUE].last_seq == 1
    with pytest.raises(LockLostError) as raised:
        await store_a.write([message(2, "A"), message(3, "A")])
    assert str(raised.value).startswith(
        "lost the database lock: ACTIVEMQ_LOCK is no longer held by A (epoch 1) "
        "but by B (epoch 2) until "
    )
    await store_b.write([message(2, "B")])
    with pytest.raises(LockLostError):  # refused without asking the database again
        await store_a.write([message(4, "A")])
    with pytest.raises(LockLostError):
        await store_a.load(QUEUE, 0, 10)
    assert stored(postgres_database) == [(1, b"A"), (2, b"B")]


async def test_a_master_past_its_lease_cannot_write_even_before_a_takeover(
    locker_factory: LockerFactory,
    store_factory: StoreFactory,
    postgres_database: PostgresDatabase,
) -> None:
    a = locker_factory("A")
    await a.acquire()
    store = store_factory(a.fence())
    await store.start()
    await sleep_past_lease(postgres_database)
    with pytest.raises(
        LockLostError, match=r"no longer held by A \(epoch 1\) but by A \(epoch 1\)"
    ):
        await store.write([message(1, "A")])
    assert stored(postgres_database) == []


async def test_a_successor_with_the_same_name_fences_its_predecessor(
    locker_factory: LockerFactory,
    store_factory: StoreFactory,
    postgres_database: PostgresDatabase,
) -> None:
    """A broker restarted under the same name while its old process was only paused."""
    old = locker_factory("broker")
    await old.acquire()
    old_store = store_factory(old.fence())
    await old_store.start()
    new = locker_factory("broker")
    async with asyncio.timeout(WAIT_S):
        await new.acquire()
    new_store = store_factory(new.fence())
    await new_store.start()
    with pytest.raises(
        LockLostError, match=r"held by broker \(epoch 1\) but by broker \(epoch 2\)"
    ):
        await old_store.write([message(1, "old")])
    await new_store.write([message(1, "new")])
    assert stored(postgres_database) == [(1, b"new")]


async def test_start_with_a_lost_lease_fails(
    locker_factory: LockerFactory, store_factory: StoreFactory
) -> None:
    a = locker_factory("A")
    await a.acquire()
    fence = a.fence()
    await a.release()
    with pytest.raises(LockLostError, match=r"cannot recover store .*: lost the database lock"):
        await store_factory(fence).start()


async def test_fence_and_store_must_share_the_lock_table(
    postgres_database: PostgresDatabase,
) -> None:
    store = PostgresStore(postgres_database.url, fence=Fence("A", 1, LEASE_MS, table_prefix="x_"))
    with pytest.raises(StoreError, match="both must use one ACTIVEMQ_LOCK table"):
        await store.start()


async def test_check_first_holds_off_the_acquirer_until_commit(
    locker_factory: LockerFactory, postgres_database: PostgresDatabase
) -> None:
    """The master's check locks the lock row; its lease then runs out.  A slave's acquiring
    UPDATE must wait for the master's commit, so the new master's recovery sees that write."""
    a, b = locker_factory("A"), locker_factory("B")
    await a.acquire()
    fence = a.fence()
    tables = PostgresStore(postgres_database.url, fence=fence)
    await tables.start()  # creates the tables
    await tables.stop()
    with postgres_database.connect() as master:
        master.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
        master.execute(
            "INSERT INTO ferrymq_messages VALUES (%s, 1, 'A', 1, 4, 0, true, false)", (QUEUE,)
        )
        check = LockTableSql.for_prefix("").check
        master.execute(check, {"holder": "A", "epoch": fence.epoch})  # raises unless held
        await sleep_past_lease(postgres_database)
        acquired = asyncio.create_task(b.acquire())
        await asyncio.to_thread(postgres_database.wait_for_lock_wait, "ferrymq lease B")
        assert not acquired.done()
        master.execute("COMMIT")
    async with asyncio.timeout(WAIT_S):
        await acquired
    store_b = PostgresStore(postgres_database.url, fence=b.fence())
    recovery = await store_b.start()
    assert recovery.containers[QUEUE].last_seq == 1  # ordered before B became master
    await store_b.stop()


async def test_an_acquirer_in_flight_finds_the_master_already_fenced(
    locker_factory: LockerFactory,
    store_factory: StoreFactory,
    postgres_database: PostgresDatabase,
) -> None:
    """A slave can only take an expired lease, and an expired lease fails the master's check by
    itself: with the slave's acquiring UPDATE still uncommitted, the write fails at once."""
    a = locker_factory("A")
    await a.acquire()
    store = store_factory(a.fence())
    await store.start()
    await sleep_past_lease(postgres_database)
    with postgres_database.connect() as slave:
        slave.execute("BEGIN")
        acquired = slave.execute(ACQUIRE, {"holder": "B", "lease_ms": 60_000, "last_epoch": -1})
        assert acquired.fetchone() is not None
        with pytest.raises(LockLostError, match=r"no longer held by A \(epoch 1\)"):
            await store.write([message(1, "A")])
        slave.execute("COMMIT")
    assert stored(postgres_database) == []


async def test_an_update_in_flight_makes_the_check_wait_then_fail(
    locker_factory: LockerFactory,
    store_factory: StoreFactory,
    postgres_database: PostgresDatabase,
) -> None:
    """The lease is still valid and being taken again under a new epoch (the locker re-acquires
    after a failed keep-alive) when the old store's write reaches its check: the check waits for
    the uncommitted UPDATE, re-reads the row's newest version, and the write is rolled back."""
    a = locker_factory("A", lock_acquire_sleep_interval_ms=60_000)
    await a.acquire()
    store = store_factory(a.fence())
    await store.start()
    with postgres_database.connect() as locker:
        locker.execute("BEGIN")
        again = locker.execute(ACQUIRE, {"holder": "A", "lease_ms": 60_000, "last_epoch": 1})
        row = again.fetchone()
        assert row is not None
        assert row[0] == 2  # the new epoch, not committed yet
        written = store.write([message(1, "A")])
        assert store.backend_pid is not None
        await asyncio.to_thread(postgres_database.wait_for_lock_wait, store.backend_pid)
        assert not written.done()
        locker.execute("COMMIT")
    with pytest.raises(LockLostError, match=r"held by A \(epoch 1\) but by A \(epoch 2\)"):
        await written
    assert stored(postgres_database) == []


async def test_writes_commit_while_the_lease_is_renewed(
    locker_factory: LockerFactory,
    store_factory: StoreFactory,
    postgres_database: PostgresDatabase,
) -> None:
    a = locker_factory("A")
    await a.acquire()
    store = store_factory(a.fence())
    await store.start()
    for seq in range(1, 6):
        assert await a.keep_alive()
        await asyncio.gather(*(store.write([message(seq * 10 + i, "A")]) for i in range(10)))
    assert len(stored(postgres_database)) == 50
    assert isinstance(LockLostError("x"), StoreError)


async def test_a_master_stopped_inside_a_transaction_is_fenced_out(
    locker_factory: LockerFactory,
    postgres_database: PostgresDatabase,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The server waits for the rest of a stopped master's transaction, holding the lock row,
    with no timeout (mid-pipeline).  Once the lease is over the slave terminates that session
    instead of waiting for it."""
    a, b = locker_factory("A"), locker_factory("B")
    await a.acquire()
    fence = a.fence()
    tables = PostgresStore(postgres_database.url, fence=fence)
    await tables.start()  # creates the tables and the check function
    await tables.stop()
    sql = LockTableSql.for_prefix("")
    with postgres_database.connect() as stuck:
        stuck.execute(sql.join_fence)  # what a fenced PostgresStore's session does
        stuck.execute("BEGIN")
        stuck.execute(sql.check, {"holder": "A", "epoch": fence.epoch})  # holds the lock row
        await sleep_past_lease(postgres_database)
        with caplog.at_level(logging.WARNING, logger="ferrymq.ha.lease"):
            async with asyncio.timeout(WAIT_S):
                await b.acquire()
        assert "B: terminated 1 store session(s) of an earlier master" in caplog.text
        with pytest.raises(psycopg.OperationalError):
            stuck.execute("SELECT 1")
    assert b.fence().epoch == 2


async def test_without_the_right_to_terminate_the_lease_still_moves(
    locker_factory: LockerFactory,
    store_factory: StoreFactory,
    postgres_database: PostgresDatabase,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Brokers under different roles cannot fence each other out; the lease check alone keeps
    the old master from writing."""
    a = locker_factory("A")
    await a.acquire()
    store_a = store_factory(a.fence())
    await store_a.start()  # a superuser session: B's role may not terminate it
    role = f"broker_b_{postgres_database.schema}"
    with postgres_database.connect() as db:
        db.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'b'".encode())
        db.execute(f"GRANT USAGE ON SCHEMA {postgres_database.schema} TO {role}".encode())
        db.execute(f"GRANT UPDATE, SELECT ON ACTIVEMQ_LOCK TO {role}".encode())
    b = LeaseDatabaseLocker(
        postgres_database.url,
        lease_holder_id="B",
        username=role,
        password="b",
        lock_acquire_sleep_interval_ms=LEASE_MS,
        lock_keep_alive_period_ms=KEEP_ALIVE_MS,
    )
    with caplog.at_level(logging.WARNING, logger="ferrymq.ha.lease"):
        async with asyncio.timeout(WAIT_S):
            await b.acquire()
    assert "B: cannot terminate an earlier master's sessions" in caplog.text
    with pytest.raises(LockLostError, match=r"but by B \(epoch 2\)"):
        await store_a.write([message(1, "A")])
    assert stored(postgres_database) == []
    await b.release()
