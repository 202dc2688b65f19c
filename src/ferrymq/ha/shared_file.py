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
import socket
import time
from pathlib import Path

from ferrymq.ha.locker import LockerError, LockStatus
from ferrymq.store.base import LockLostError
from ferrymq.store.directory import CHOOSE_ANOTHER, directory_error
from ferrymq.store.lockfile import LockFile

log = logging.getLogger(__name__)

LOCK_FILE = "lock"
HOLDER_MAX_BYTES = 200
"""The holder's line in the lock file is read back only this far (it is shown in messages)."""


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
        self._seen_holder: str | None = None
        """Who held the lock when this broker last found it taken, as its lock file says."""

    def _other_holder(self) -> str:
        holder = self._seen_holder
        return f"another broker ({holder})" if holder else "another broker"

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
                    f"data directory {self.directory} is in use by {self._other_holder()} "
                    "and failIfLocked is set",
                    fix=f"stop that broker, {CHOOSE_ANOTHER}",
                )
            if not waited:
                # Said once, plainly: a second broker started on the same directory by mistake
                # looks exactly like a slave of a shared-file group (ActiveMQ's own line is
                # "Database ... is locked by another server").
                log.info(
                    "data directory %s is in use by %s: this broker waits as its slave and "
                    "takes over when it stops (shared-file master/slave); to run a separate "
                    "broker instead, give it its own data directory (--data DIR)",
                    self.directory,
                    self._other_holder(),
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
        """Take the lock on the file at the path now (recreated when missing), and write who
        holds it into the file for the brokers that find it taken."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            lock = LockFile(self.path)
            if not lock.try_acquire():
                self._seen_holder = _read_holder(self.path)
                return False
        except OSError as exc:
            error = directory_error(self.directory, exc)
            raise LockerError(str(error), fix=error.fix) from exc
        _write_holder(lock.fileno(), self.holder_id)
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
            current_holder=self.holder_id if self._lock is not None else self._seen_holder,
            keep_alive_period_ms=self._keep_alive_period_ms,
            lock_acquire_sleep_interval_ms=self.lock_acquire_sleep_interval_ms,
        )


def _write_holder(fd: int, holder_id: str) -> None:
    """Say in the lock file who holds it: a broker that finds the directory taken names it."""
    line = f"broker {holder_id}, pid {os.getpid()} on host {socket.gethostname()}\n"
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, line.encode(), 0)
    except OSError as exc:  # only a courtesy to the other brokers: never a reason to fail
        log.debug("cannot write the holder into the lock file: %s", exc)


def _read_holder(path: Path) -> str | None:
    """The holder's line of a lock file, printable characters only; None if there is none."""
    try:
        with path.open("rb") as file:
            data = file.read(HOLDER_MAX_BYTES)
    except OSError:
        return None
    text = data.decode("utf-8", "replace").splitlines()[0] if data.strip() else ""
    return "".join(c for c in text if c.isprintable()).strip() or None
