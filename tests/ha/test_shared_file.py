"""The shared-file locker (seed 000 §3.1, seed 003; ActiveMQ SharedFileLockerTest, LockFileTest)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from ferrymq.ha.locker import LockerError
from ferrymq.ha.shared_file import SharedFileLocker
from ferrymq.store.base import AddMessage, LockLostError
from ferrymq.store.sqlite import SqliteStore

INTERVAL_MS = 100


def _locker(directory: Path, holder: str, **options: int | bool) -> SharedFileLocker:
    return SharedFileLocker(
        directory,
        holder_id=holder,
        lock_acquire_sleep_interval_ms=INTERVAL_MS,
        **options,  # type: ignore[arg-type]
    )


async def test_one_master_at_a_time_and_the_slave_takes_over(tmp_path: Path) -> None:
    master = _locker(tmp_path, "a")
    await master.acquire()
    slave = _locker(tmp_path, "b", keep_alive_period_ms=200)
    waiting = asyncio.create_task(slave.acquire())
    done, _ = await asyncio.wait([waiting], timeout=0.4)
    assert not done, "the slave became master while the master held the lock"
    released_at = time.monotonic()
    await master.release()
    await asyncio.wait_for(waiting, 5)
    # It waited one lockKeepAlivePeriod after getting the lock (AMQ-4705).
    assert time.monotonic() - released_at >= 0.2
    assert slave.held
    assert slave.status().held
    await slave.release()


async def test_fail_if_locked_refuses_instead_of_waiting(tmp_path: Path) -> None:
    master = _locker(tmp_path, "a")
    await master.acquire()
    with pytest.raises(LockerError, match="failIfLocked"):
        await _locker(tmp_path, "b", fail_if_locked=True).acquire()
    await master.release()


async def test_a_deleted_lock_file_ends_mastership(tmp_path: Path) -> None:
    """seed 003: the master checks that the lock file still exists."""
    master = _locker(tmp_path, "a", keep_alive_period_ms=INTERVAL_MS)
    await master.acquire()
    assert await master.keep_alive()
    os.unlink(tmp_path / "lock")
    with pytest.raises(LockLostError, match="no longer holds"):
        master.fence()
    assert not await master.keep_alive()
    await master.release()
    # A new slave recreates the missing file and becomes master.
    successor = _locker(tmp_path, "b")
    await successor.acquire()
    assert (tmp_path / "lock").exists()
    await successor.release()


async def test_a_replaced_lock_file_taken_by_another_broker_ends_mastership(
    tmp_path: Path,
) -> None:
    """What an expired NFSv4 lease looks like: the file at the path is no longer ours."""
    master = _locker(tmp_path, "a", keep_alive_period_ms=INTERVAL_MS)
    await master.acquire()
    os.unlink(tmp_path / "lock")
    other = _locker(tmp_path, "b")
    await other.acquire()
    assert not await master.keep_alive()
    await master.release()
    await other.release()


async def test_a_replaced_lock_file_nobody_holds_is_taken_again(tmp_path: Path) -> None:
    master = _locker(tmp_path, "a", keep_alive_period_ms=INTERVAL_MS)
    await master.acquire()
    os.unlink(tmp_path / "lock")
    (tmp_path / "lock").write_bytes(b"")
    assert await master.keep_alive()
    master.fence()
    await master.release()


async def test_a_fenced_store_cannot_write_after_the_lock_is_lost(tmp_path: Path) -> None:
    master = _locker(tmp_path, "a")
    await master.acquire()
    store = SqliteStore(tmp_path, lock=False, fence=master.fence)
    await store.start()
    await store.write([AddMessage("queue://q", 1, b"before")])
    os.unlink(tmp_path / "lock")
    with pytest.raises(LockLostError):
        await store.write([AddMessage("queue://q", 2, b"after")])
    with pytest.raises(LockLostError):
        await store.write([AddMessage("queue://q", 3, b"later")])
    await store.stop()
    await master.release()
    reopened = SqliteStore(tmp_path)
    await reopened.start()
    stored = await reopened.load("queue://q", 0, 10)
    assert [m.blob for m in stored] == [b"before"]
    await reopened.stop()
