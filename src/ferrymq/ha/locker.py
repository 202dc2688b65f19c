"""The ``Locker`` protocol: what decides which broker of a shared-storage group is master.

ActiveMQ's `Locker` (reference §5.1): a broker ``acquire``s before it starts anything (a slave
waits there), then calls ``keep_alive`` every ``keep_alive_period_ms``; ``False`` means the lock
is gone and the broker must stop serving at once, before it can write again.  ``release`` gives it
up on a clean stop.  The database lease locker (``LeaseDatabaseLocker``) and the shared-file
locker both implement it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class LockerError(Exception):
    """The lock cannot be taken as configured (``failIfLocked`` and it is held, no lock table,
    the database unreachable with ``failIfLocked``); the message names the resource, ``fix``
    (when known) says what the user can do."""

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        super().__init__(message)
        self.fix = fix


@dataclass(frozen=True, slots=True)
class LockStatus:
    """A locker's state for the admin API and ``ferrymq stat``."""

    locker: str
    """The configuration element: ``lease-database-locker``, ``shared-file-locker``."""
    resource: str
    """What is locked: ``ACTIVEMQ_LOCK on postgresql://...``, a lock file's path."""
    holder_id: str
    """This broker's name in the lock (``leaseHolderId``)."""
    held: bool
    """Whether this broker holds the lock, as far as it knows locally right now."""
    lease_expires_ms: int | None
    """When the lease ends, ms since the epoch by the database's clock; None without a lease."""
    current_holder: str | None
    """Who held the lock when this broker last looked (itself when master)."""
    keep_alive_period_ms: int
    lock_acquire_sleep_interval_ms: int


class Locker(Protocol):
    @property
    def keep_alive_period_ms(self) -> int:
        """How often the master must call ``keep_alive``."""
        ...

    async def acquire(self) -> None:
        """Return once this broker holds the lock, retrying every lockAcquireSleepInterval.

        Raises ``LockerError`` instead of waiting when ``failIfLocked`` is set.
        """
        ...

    async def keep_alive(self) -> bool:
        """Renew or check the lock; ``False``: it is lost, stop serving now."""
        ...

    async def release(self) -> None:
        """Give the lock up (if held) and close what the locker opened."""
        ...

    def status(self) -> LockStatus: ...
