"""LeaseDatabaseLocker: ActiveMQ's lease semantics (reference §5.4) on a real PostgreSQL."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from ferrymq.config.persistence import (
    DatabaseLockerConfig,
    DataSourceConfig,
    JdbcPersistenceConfig,
    LeaseDatabaseLockerConfig,
)
from ferrymq.ha import Locker, LockerError
from ferrymq.ha.lease import LeaseDatabaseLocker, renewal_period_ms
from tests.postgres import PostgresDatabase

from .conftest import (
    KEEP_ALIVE_MS,
    LEASE_MS,
    WAIT_S,
    LockerFactory,
    SlaveWatch,
    sleep_past_lease,
)


def lock_row(database: PostgresDatabase) -> tuple[Any, ...]:
    """(BROKER_NAME, lease left in ms by the database clock, EPOCH)."""
    with database.connect() as db:
        row = db.execute(
            "SELECT BROKER_NAME, TIME - (extract(epoch FROM clock_timestamp()) * 1000)::bigint, "
            "EPOCH FROM ACTIVEMQ_LOCK WHERE ID = 1"
        ).fetchone()
    assert row is not None
    return row


async def test_acquire_keep_alive_release(
    locker_factory: LockerFactory, postgres_database: PostgresDatabase
) -> None:
    locker: Locker = locker_factory("broker-A")
    await locker.acquire()
    status = locker.status()
    assert status.held
    assert status.current_holder == "broker-A"
    assert status.keep_alive_period_ms == KEEP_ALIVE_MS
    assert status.resource.startswith("ACTIVEMQ_LOCK on postgresql://postgres@127.0.0.1:")
    holder, left_ms, epoch = lock_row(postgres_database)
    assert (holder, epoch) == ("broker-A", 1)
    assert 0 < left_ms <= LEASE_MS
    expires = status.lease_expires_ms
    assert expires is not None
    assert await locker.keep_alive()
    renewed = locker.status().lease_expires_ms
    assert renewed is not None
    assert renewed >= expires
    await locker.release()
    assert lock_row(postgres_database)[0] is None
    assert not locker.status().held
    assert not await locker.keep_alive()


async def test_two_lockers_one_master_then_the_other(
    locker_factory: LockerFactory, slave_watch: SlaveWatch
) -> None:
    """ActiveMQ LeaseDatabaseLockerTest.testLockInterleave."""
    a, b = locker_factory("A"), locker_factory("B")
    await a.acquire()
    b_acquired = asyncio.create_task(b.acquire())
    await slave_watch.wait_for_slave("B", "A")
    for _ in range(3):  # A stays master over several of B's polls
        assert await a.keep_alive()
        await asyncio.sleep(KEEP_ALIVE_MS / 1000)
    assert not b_acquired.done()
    await a.release()
    async with asyncio.timeout(WAIT_S):
        await b_acquired
    assert b.status().held
    assert not await a.keep_alive()
    assert await b.keep_alive()


async def test_acquire_race_has_one_winner(
    locker_factory: LockerFactory, postgres_database: PostgresDatabase, slave_watch: SlaveWatch
) -> None:
    """ActiveMQ LeaseDatabaseLockerTest.testLockAcquireRace: a stranger's lease runs out while
    two slaves wait; exactly one gets it, the other after the winner releases."""
    anon = locker_factory("Anon")
    await anon.acquire()
    a, b = locker_factory("A"), locker_factory("B")
    tasks = {asyncio.create_task(a.acquire()): a, asyncio.create_task(b.acquire()): b}
    await slave_watch.wait_for_slave("A", "Anon")
    await slave_watch.wait_for_slave("B", "Anon")
    async with asyncio.timeout(WAIT_S):  # Anon never renews
        done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    assert len(done) == 1
    (won,) = done
    winner, loser = tasks[won], tasks[pending.pop()]
    for _ in range(3):  # the winner stays master over the loser's next polls
        assert await winner.keep_alive()
        await asyncio.sleep(KEEP_ALIVE_MS / 1000)
    assert not loser.status().held
    assert lock_row(postgres_database)[0] == winner.holder_id
    assert not loser.status().held
    await winner.release()
    async with asyncio.timeout(WAIT_S):
        await asyncio.gather(*tasks)
    assert loser.status().held


async def test_an_unrenewed_lease_expires_and_a_slave_takes_over(
    locker_factory: LockerFactory, postgres_database: PostgresDatabase
) -> None:
    a, b = locker_factory("A"), locker_factory("B")
    await a.acquire()
    a_expires = a.status().lease_expires_ms
    assert a_expires is not None
    async with asyncio.timeout(WAIT_S):
        await b.acquire()  # A is "paused": it does not renew
    b_expires = b.status().lease_expires_ms
    assert b_expires is not None
    assert b_expires - LEASE_MS >= a_expires  # B's lease began after A's ended (DB clock)
    assert not a.held  # by A's own clock too
    assert not await a.keep_alive()
    assert lock_row(postgres_database)[0:3:2] == ("B", 2)


async def test_an_expired_lease_is_not_renewed_even_if_nobody_took_it(
    locker_factory: LockerFactory, postgres_database: PostgresDatabase
) -> None:
    a = locker_factory("A")
    await a.acquire()
    await sleep_past_lease(postgres_database)
    assert not await a.keep_alive()
    await a.acquire()  # nobody else wanted it: taken again at once, under a new epoch
    assert a.fence().epoch == 2


async def test_a_dropped_connection_is_not_a_lost_lease(
    locker_factory: LockerFactory, postgres_database: PostgresDatabase
) -> None:
    a = locker_factory("A", lock_acquire_sleep_interval_ms=5000)
    await a.acquire()
    with postgres_database.connect() as db:
        db.execute(
            "SELECT pg_terminate_backend(%s)", (postgres_database.backend_pid("ferrymq lease A"),)
        )
    assert await a.keep_alive()  # reconnected once and renewed
    assert lock_row(postgres_database)[0] == "A"


async def test_fail_if_locked(locker_factory: LockerFactory) -> None:
    a = locker_factory("A", lock_acquire_sleep_interval_ms=5000)
    await a.acquire()
    b = locker_factory("B", fail_if_locked=True)
    with pytest.raises(LockerError, match=r"ACTIVEMQ_LOCK on postgresql://.* is locked by A for"):
        await b.acquire()
    assert not b.status().held


async def test_a_second_broker_with_the_same_name_cannot_use_the_lease(
    locker_factory: LockerFactory,
) -> None:
    """ActiveMQ needs unique holder ids (its keep-alive matches the name only); FerryMQ's epoch
    keeps a same-named broker from sharing, or renewing, a live lease."""
    first = locker_factory("broker", lock_acquire_sleep_interval_ms=5000)
    await first.acquire()
    twin = locker_factory("broker", fail_if_locked=True)
    with pytest.raises(LockerError, match="is locked by broker"):
        await twin.acquire()
    assert not await twin.keep_alive()
    assert await first.keep_alive()


async def test_missing_lock_table_without_create_tables(locker_factory: LockerFactory) -> None:
    locker = locker_factory("A", create_tables_on_startup=False)
    with pytest.raises(LockerError, match=r"ACTIVEMQ_LOCK on .* is missing or incomplete"):
        await locker.acquire()


async def test_table_prefix_and_an_existing_activemq_lock_table(
    locker_factory: LockerFactory, postgres_database: PostgresDatabase
) -> None:
    with postgres_database.connect() as db:  # ActiveMQ's own DDL and row (reference §5.6)
        db.execute(
            "CREATE TABLE AMQ_ACTIVEMQ_LOCK "
            "(ID BIGINT NOT NULL PRIMARY KEY, TIME BIGINT, BROKER_NAME VARCHAR(250))"
        )
        db.execute("INSERT INTO AMQ_ACTIVEMQ_LOCK (ID) VALUES (1)")
    locker = locker_factory("A", table_prefix="AMQ_")
    await locker.acquire()
    assert locker.fence().table_prefix == "AMQ_"
    with postgres_database.connect() as db:
        row = db.execute("SELECT BROKER_NAME, EPOCH FROM amq_activemq_lock").fetchone()
    assert row == ("A", 1)


def test_keep_alive_that_cannot_renew_the_lease_is_corrected(
    caplog: pytest.LogCaptureFixture, postgres_database: PostgresDatabase
) -> None:
    assert renewal_period_ms(10000, 5000) == (5000, None)
    assert renewal_period_ms(10000, 9999) == (9999, None)
    assert renewal_period_ms(10000, 30000)[0] == 5000  # ActiveMQ's two defaults together
    assert renewal_period_ms(10000, 10000)[0] == 5000
    assert renewal_period_ms(10000, 0)[0] == 5000
    with caplog.at_level(logging.WARNING, logger="ferrymq.ha.lease"):
        locker = LeaseDatabaseLocker(postgres_database.url, lease_holder_id="A")
    assert locker.keep_alive_period_ms == 5000
    assert caplog.messages == [
        "A: lockKeepAlivePeriod 30000 ms would let the lease of lockAcquireSleepInterval "
        "10000 ms expire between renewals (a slave could take over from a live master); "
        "renewing every 5000 ms instead"
    ]


def test_from_config(postgres_database: PostgresDatabase) -> None:
    source = DataSourceConfig(
        "pg-ds",
        "org.apache.commons.dbcp2.BasicDataSource",
        url=postgres_database.jdbc_url,
        username="postgres",
        password=postgres_database.server.password,
    )
    lease = LeaseDatabaseLockerConfig(lock_acquire_sleep_interval_ms=4000, lease_holder_id="h1")
    locker = LeaseDatabaseLocker.from_config(
        JdbcPersistenceConfig(source, lock_keep_alive_period_ms=1000, locker=lease), "brokerA"
    )
    assert (locker.holder_id, locker.lock_acquire_sleep_interval_ms) == ("h1", 4000)
    assert locker.keep_alive_period_ms == 1000
    default = LeaseDatabaseLocker.from_config(JdbcPersistenceConfig(source), "brokerA")
    assert (default.holder_id, default.lock_acquire_sleep_interval_ms) == ("brokerA", 10000)
    assert default.keep_alive_period_ms == 5000
    database_locker = LeaseDatabaseLocker.from_config(
        JdbcPersistenceConfig(source, locker=DatabaseLockerConfig(fail_if_locked=True)), "b"
    )
    assert database_locker.status().locker == "lease-database-locker"


async def test_an_unreachable_database_with_fail_if_locked(
    postgres_database: PostgresDatabase,
) -> None:
    closed_port = postgres_database.server.port + 1 if postgres_database.server.port < 65535 else 1
    locker = LeaseDatabaseLocker(
        f"postgresql://postgres@127.0.0.1:{closed_port}/x?connect_timeout=2",
        lease_holder_id="A",
        fail_if_locked=True,
    )
    with pytest.raises(LockerError, match="cannot take the lease on ACTIVEMQ_LOCK on postgresql"):
        await locker.acquire()
