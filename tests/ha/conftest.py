"""Lease lockers on the test's own schema, with intervals short enough to watch leases expire,
and a stomp.py client to talk to whoever took over (the groups themselves are started with
``ferrymq.testing``'s ``broker_group``, ``start_group`` and ``wait_for_master``)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any, Protocol

import pytest

import stomp
from ferrymq.ha.lease import LeaseDatabaseLocker
from tests.interop.conftest import Collector
from tests.postgres import PostgresDatabase

LEASE_MS = 300
KEEP_ALIVE_MS = 100
WAIT_S = 10.0


class LockerFactory(Protocol):
    def __call__(self, holder: str, **options: Any) -> LeaseDatabaseLocker: ...


@pytest.fixture
async def locker_factory(postgres_database: PostgresDatabase) -> AsyncIterator[LockerFactory]:
    """Lockers with a 300 ms lease renewed every 100 ms; released after the test."""
    created: list[LeaseDatabaseLocker] = []

    def factory(holder: str, **options: Any) -> LeaseDatabaseLocker:
        options.setdefault("lock_acquire_sleep_interval_ms", LEASE_MS)
        options.setdefault("lock_keep_alive_period_ms", KEEP_ALIVE_MS)
        locker = LeaseDatabaseLocker(postgres_database.url, lease_holder_id=holder, **options)
        created.append(locker)
        return locker

    yield factory
    for locker in created:
        await locker.release()


def lease_left_ms(database: PostgresDatabase) -> int:
    """How long the current lease still runs, by the database's clock (negative: expired)."""
    with database.connect() as db:
        row = db.execute(
            "SELECT TIME - (extract(epoch FROM clock_timestamp()) * 1000)::bigint "
            "FROM ACTIVEMQ_LOCK WHERE ID = 1"
        ).fetchone()
    assert row is not None
    left: int = row[0]
    return left


async def sleep_past_lease(database: PostgresDatabase) -> None:
    """Be a master paused past its lease: let the database clock pass the lease's end."""
    await asyncio.sleep(max(0, lease_left_ms(database) + 5) / 1000)
    assert lease_left_ms(database) < 0


class SlaveWatch(logging.Handler):
    """Turns the locker's "waiting as a slave" log line into an event a test can await."""

    def __init__(self) -> None:
        super().__init__()
        self._waiting: dict[tuple[str, str], asyncio.Event] = {}

    def _event(self, slave: str, master: str) -> asyncio.Event:
        return self._waiting.setdefault((slave, master), asyncio.Event())

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg.endswith("waiting as a slave, retrying every %d ms"):
            assert isinstance(record.args, tuple)
            slave, _, master, _ = record.args
            self._event(str(slave), str(master)).set()

    async def wait_for_slave(self, slave: str, master: str) -> None:
        """Until ``slave`` has found ``master`` holding the lease (logged once per acquire)."""
        async with asyncio.timeout(WAIT_S):
            await self._event(slave, master).wait()


@pytest.fixture
def slave_watch() -> Iterator[SlaveWatch]:
    watch = SlaveWatch()
    logger = logging.getLogger("ferrymq.ha.lease")
    logger.addHandler(watch)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        yield watch
    finally:
        logger.removeHandler(watch)
        logger.setLevel(level)


def stomp_client(port: int) -> tuple[stomp.Connection12, Collector]:
    """A connected stomp.py client and the listener that records what it receives."""
    conn = stomp.Connection12([("127.0.0.1", port)])
    listener = Collector()
    conn.set_listener("c", listener)
    conn.connect(wait=True)
    return conn, listener
