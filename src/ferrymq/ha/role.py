"""A broker's master/slave role, and the lock that decides it for a shared store.

``Role`` values are short phrases: the admin API shows them as they are (``role``), and
``ferrymq stat`` and ``GET /health`` read them.  Only ``MASTER`` and ``STANDALONE`` serve
clients (``Role.serving``).
"""

from __future__ import annotations

import enum

from ferrymq.config.model import BrokerConfig
from ferrymq.config.persistence import JdbcPersistenceConfig, KahaDBConfig, SharedFileLockerConfig
from ferrymq.ha.locker import Locker
from ferrymq.ha.shared_file import SharedFileLocker


class Role(enum.Enum):
    STARTING = "starting"
    """Opening its store and listeners, or trying the lock for the first time."""
    STANDALONE = "standalone"
    """No shared store: nothing to be master of.  Serving."""
    WAITING = "waiting for lock"
    """A slave of a shared-store group (file lock or database lease)."""
    REPLICATING = "replicating"
    """The slave of a pure master/slave pair, copying its master's store."""
    WAITING_FOR_SLAVE = "waiting for slave"
    """A master with ``waitForSlave``: its store is open, clients are refused until its slave
    is attached and in sync."""
    MASTER = "master"
    """Serving, as the master of its group."""
    STOPPING = "stopping"
    """Closing its listeners and store: stepping down after losing its lock, or shutting down.
    Not serving, so probes send no new clients to a broker that is about to close."""
    FAILED = "failed"
    """Stopped serving for good because of a failure; the process is ending."""
    STOPPED = "stopped"

    @property
    def serving(self) -> bool:
        """Whether clients are served in this role."""
        return self in (Role.MASTER, Role.STANDALONE)


def locker_for(config: BrokerConfig) -> Locker | None:
    """The lock that makes this broker master of a shared store, or None (no group)."""
    persistence = config.persistence
    if not config.persistent or persistence is None:
        return None
    if isinstance(persistence, KahaDBConfig):
        if not persistence.use_lock:
            return None
        locker = persistence.locker
        options = locker if isinstance(locker, SharedFileLockerConfig) else SharedFileLockerConfig()
        directory = config.store_directory
        assert directory is not None
        return SharedFileLocker(
            directory,
            holder_id=config.broker_name,
            lock_acquire_sleep_interval_ms=options.lock_acquire_sleep_interval_ms,
            keep_alive_period_ms=persistence.lock_keep_alive_period_ms,
            fail_if_locked=options.fail_if_locked,
        )
    if isinstance(persistence, JdbcPersistenceConfig):
        from ferrymq.ha.lease import LeaseDatabaseLocker  # psycopg: only when configured

        return LeaseDatabaseLocker.from_config(persistence, config.broker_name)
    raise TypeError(f"unknown persistence adapter {persistence!r}")
