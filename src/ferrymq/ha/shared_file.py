"""The shared-file locker: master/slave over a shared data directory (seed 000 §3.1, seed 003).

Every broker of the group points at the same kahaDB directory; whoever holds an exclusive lock
on its ``lock`` file is master (ActiveMQ's ``SharedFileLocker``).  A slave retries every
``lockAcquireSleepInterval`` (10 s); when it finally gets the lock after waiting it sleeps one
``lockKeepAlivePeriod`` before serving, so that a master which lost the lock without noticing
has passed its next keep-alive check first (AMQ-4705).  A missing lock file is recreated by the
slave that takes it.

The master's keep-alive (every ``lockKeepAlivePeriod``, ActiveMQ's kahaDB default 0 = never)
checks that the lock file at the path is still the very file it locked: deleted, or replaced by
another file (an NFSv4 lease that expired and was taken over looks the same), means the lock is
lost: it tries to take the file now at the path, and if that fails, or the file is gone, it
reports the lock lost and the broker stops serving.

FerryMQ does better than ActiveMQ's keep-alive alone: ``fence`` makes the same check before
every store transaction begins and again just before it commits, so even with
``lockKeepAlivePeriod=0`` a master whose lock file was taken from it cannot write another byte
(two masters, each writing, is how ActiveMQ corrupts a store when NFS drops a lock, pain point
§9.4).  On a local file system a paused (SIGSTOPped) master keeps its kernel lock, so no second
master can appear, and it serves on when resumed.

FerryMQ also deviates from ActiveMQ's "0 = never": the master runs the same cheap check
(``still_held``, one ``stat``) every second whatever ``lockKeepAlivePeriod`` says, and steps down
when it fails.  The SQLite store holds its database in EXCLUSIVE locking mode until it closes,
so an idle master that lost its lock file would otherwise keep its successor from opening the
store until it next tried to write.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from pathlib import Path

from ferrymq.ha.locker import LockerError, LockStatus
from ferrymq.store.base import LockLostError
from ferrymq.store.lockfile import LockFile

log = logging.getLogger(__name__)

LOCK_FILE = "lock"


class SharedFileLocker:
    def __init__(
        self,
        directory: Path,
        *,
        holder_id: str,
        lock_acquire_sleep_interval_ms: int = 10000,
        keep_alive_period_ms: int = 0,
        fail_if_locked: bool = False,
    ) -> None:
        self.directory = Path(directory)
        self.path = self.directory / LOCK_FILE
        self.holder_id = holder_id
        self.lock_acquire_sleep_interval_ms = lock_acquire_sleep_interval_ms
        self._keep_alive_period_ms = keep_alive_period_ms
        self.fail_if_locked = fail_if_locked
        self._lock: LockFile | None = None
        self._identity: tuple[int, int] | None = None
        self._held_since: float | None = None

    @property
    def keep_alive_period_ms(self) -> int:
        return self._keep_alive_period_ms

    @property
    def held(self) -> bool:
        return self._lock is not None

    async def acquire(self) -> None:
        waited = False
        while True:
            if await asyncio.to_thread(self._try_lock):
                break
            if self.fail_if_locked:
                raise LockerError(
                    f"lock file {self.path} is held by another broker and failIfLocked is set"
                )
            if not waited:
                log.info(
                    "Database %s is locked by another server. This broker is now in slave "
                    "mode waiting a lock to be acquired",
                    self.path,
                )
                waited = True
            await asyncio.sleep(self.lock_acquire_sleep_interval_ms / 1000)
        if waited and self._keep_alive_period_ms > 0:
            # AMQ-4705: let a master that lost the lock unawares reach its keep-alive first.
            await asyncio.sleep(self._keep_alive_period_ms / 1000)
            if not await self.keep_alive():
                await self.release()
                await self.acquire()
                return
        log.info("lock %s acquired: this broker is the master", self.path)

    def _try_lock(self) -> bool:
        """Take the lock on the file at the path now (recreated when missing)."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            lock = LockFile(self.path)
            if not lock.try_acquire():
                return False
        except OSError as exc:
            raise LockerError(f"cannot use lock file {self.path}: {exc}") from exc
        previous, self._lock = self._lock, lock
        if previous is not None:
            previous.release()
        stat = os.fstat(lock.fileno())
        self._identity = (stat.st_dev, stat.st_ino)
        self._held_since = time.time()
        return True

    def still_held(self) -> bool:
        """Whether the file at the path is still the one this broker locked: one ``stat``, cheap
        enough to run every second; ``keep_alive`` then decides what a failure means."""
        if self._identity is None:
            return False
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            return False
        return (stat.st_dev, stat.st_ino) == self._identity

    def fence(self) -> None:
        """Called by the store before each write transaction and again before its commit:
        raise ``LockLostError`` unless the lock file at the path is still the one this broker
        locked."""
        if not self.still_held():
            raise LockLostError(
                f"broker {self.holder_id} no longer holds lock file {self.path} "
                "(deleted or replaced under it)"
            )

    async def keep_alive(self) -> bool:
        if self._lock is None:
            return False
        if await asyncio.to_thread(self.still_held):
            return True
        exists = await asyncio.to_thread(self.path.exists)
        if exists and await asyncio.to_thread(self._try_lock):
            log.warning("lock file %s was replaced; this broker took the new one", self.path)
            return True
        log.error(
            "no longer able to keep the exclusive lock %s so giving up being a master", self.path
        )
        return False

    async def release(self) -> None:
        lock, self._lock = self._lock, None
        self._identity = None
        self._held_since = None
        if lock is not None:
            await asyncio.to_thread(lock.release)

    def status(self) -> LockStatus:
        return LockStatus(
            locker="shared-file-locker",
            resource=str(self.path),
            holder_id=self.holder_id,
            held=self._lock is not None,
            lease_expires_ms=None,
            current_holder=self.holder_id if self._lock is not None else None,
            keep_alive_period_ms=self._keep_alive_period_ms,
            lock_acquire_sleep_interval_ms=self.lock_acquire_sleep_interval_ms,
        )
