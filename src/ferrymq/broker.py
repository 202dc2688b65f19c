"""A broker process: configuration in, every service of the broker started in order.

``Broker`` is ActiveMQ's ``BrokerService``, the composition root ("config -> Broker"): the
admin HTTP listener first (a slave's role must be visible too), then, for a store shared by a
master/slave group, the lock (a slave waits there and starts nothing else), then the messaging
service (``service.broker.BrokerService``: store, recovery, listeners with their protocol
adapters), then the discovery advertiser and the network connectors.  It is the one place that
names the protocol adapters (``ferrymq.adapters``).  ``stop`` runs in reverse order.
Whatever the configuration asks for that FerryMQ does not do yet is logged at start, with file
and line, so nothing in a file is silently without effect.

A master keeps its lock alive every ``lockKeepAlivePeriod`` (a shared-file master also checks
its lock file every second, whatever that period); when the lock is lost (or the store's fence
finds it lost before a commit) the broker stops serving at once, closes its listeners and
store, and goes back to waiting as a slave, as ActiveMQ's launcher restarts it.  A broker that
wins the lock but finds the store held by another process (a paused or deposed master) keeps
the lock and retries the open while the lock stays its own.

A broker that ends because of a failure records why in ``failure`` (``ferrymq broker`` then
exits 1); one stopped by ``stop`` has none.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import signal
import time
from typing import Self

from ferrymq.adapters.stomp import StompAdapter
from ferrymq.admin import AdminServer
from ferrymq.admin_view import AdminView
from ferrymq.config.model import BrokerConfig
from ferrymq.config.pending import pending_features
from ferrymq.config.persistence import (
    JdbcPersistenceConfig,
    KahaDBConfig,
    SharedFileLockerConfig,
)
from ferrymq.discovery import DiscoveryAdvertiser, DiscoveryAdvertiserError
from ferrymq.ha.locker import Locker
from ferrymq.ha.replica import MasterConnector, ReplicationError
from ferrymq.ha.shared_file import SharedFileLocker
from ferrymq.network import LocalBroker, NetworkService
from ferrymq.service.broker import BrokerService
from ferrymq.service.errors import BrokerStartError, BrokerStoreBusyError
from ferrymq.service.listeners import published_url
from ferrymq.service.stores import create_store
from ferrymq.store.base import MessageStore
from ferrymq.util.uri import AnyURI

log = logging.getLogger(__name__)

SLAVE_AFTER_S = 1.0
"""A lock not granted within this time means another broker is master: this one is a slave."""
LOCAL_CHECK_INTERVAL_S = 1.0
"""How often a master runs its locker's cheap local check (the lock file's identity)."""
STORE_RETRY_S = 0.5
"""Between two opens of a busy store (each also waits up to the store's 1 s busy timeout): the
lock is held already, so the wait is for the old master to close the store, which it does
within a second of noticing its lost lock."""
BUSY_WARNING_INTERVAL_S = 30.0
"""A broker waiting for a busy store repeats its warning at most this often."""


class Role(enum.Enum):
    STANDALONE = "standalone"
    """No shared store: nothing to be master of."""
    WAITING = "waiting for lock"
    REPLICATING = "replicating"
    """The slave of a pure master/slave pair, copying its master's store."""
    MASTER = "master"
    STOPPED = "stopped"


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


class _Advertising:
    """The listeners' ``discoveryUri`` agents, failing the start as the broker's own error."""

    def __init__(self, service: BrokerService) -> None:
        def advertised() -> list[tuple[str, AnyURI, str]]:
            return [
                (str(c.location or c.display_name), c.discovery_uri, published_url(lis, c.scheme))
                for c, lis in service.served
                if c.discovery_uri is not None
            ]

        self.advertiser = DiscoveryAdvertiser(advertised)

    async def start(self) -> None:
        try:
            await self.advertiser.start()
        except DiscoveryAdvertiserError as exc:
            raise BrokerStartError(str(exc)) from None

    async def stop(self) -> None:
        await self.advertiser.stop()


class Broker:
    def __init__(self, config: BrokerConfig, *, store: MessageStore | None = None) -> None:
        self.config = config
        self._store_override = store
        self.master_connector = config.services.master_connector
        # A pure master/slave slave has its own store, locked by the store itself.
        shared = store is None and self.master_connector is None
        self.locker = locker_for(config) if shared else None
        if self.master_connector is not None:
            self.role = Role.REPLICATING
        else:
            self.role = Role.STANDALONE if self.locker is None else Role.WAITING
        self.halted = asyncio.Event()
        """Set when the broker stopped serving for good and its process should end."""
        self.failure: str | None = None
        """Why the broker halted, if a failure ended it (None: stopped, or still running)."""
        self.replica: MasterConnector | None = None
        self._role_changed = asyncio.Event()
        self.service = self._new_service()
        self.admin: AdminServer | None = None
        self.became_master = asyncio.Event()
        self.standing_by = asyncio.Event()
        """Set when this broker found the lock taken and waits as a slave."""
        self.terms = 0
        """How many times this broker became master."""
        self._supervisor: asyncio.Task[None] | None = None
        self._stopping = False

    def _new_service(self) -> BrokerService:
        fence = getattr(self.locker, "fence", None)
        # A broker of a shared-store group steps down when its store fails (its lock was
        # taken); any other broker stops for good.
        on_halt = None if self.locker is not None else self._halt
        service = BrokerService(
            self.config,
            adapters=(StompAdapter,),
            store=self._store_override,
            fence=fence,
            on_halt=on_halt,
        )
        self.network = NetworkService(
            self.config,
            LocalBroker(service.broker_id, self.config.broker_name, service.cluster_url),
            lambda: [published_url(listener) for listener in service.listeners],
        )
        service.attachments.append(_Advertising(service))
        service.attachments.append(self.network)
        return service

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        """Start; returns once serving, or, for a slave of a master/slave group, once it waits
        for the lock (``became_master`` is set when it takes over)."""
        for line in pending_features(self.config):
            log.warning("%s", line)
        admin = self.config.admin
        if admin.enabled:
            self.admin = AdminServer(AdminView(self), admin.host, admin.port)
            await self.admin.start()
        try:
            if self.master_connector is not None:
                self._supervisor = asyncio.get_running_loop().create_task(
                    self._replicate_then_serve(),
                    name=f"ferrymq-{self.config.broker_name}-replica",
                )
                self._supervisor.add_done_callback(self._supervisor_done)
                self.standing_by.set()
                return
            if self.locker is None:
                await self._serve()
                self.became_master.set()
                self.terms += 1
                self._set_role(Role.STANDALONE)
                return
            self._supervisor = asyncio.get_running_loop().create_task(
                self._hold_mastership(), name=f"ferrymq-{self.config.broker_name}-role"
            )
            self._supervisor.add_done_callback(self._supervisor_done)
            # A broker that gets the lock at once is serving when start() returns; a slave
            # returns once it knows it waits.
            master = asyncio.ensure_future(self.became_master.wait())
            slave = asyncio.ensure_future(self.standing_by.wait())
            try:
                done, _ = await asyncio.wait(
                    [master, slave, self._supervisor], return_when=asyncio.FIRST_COMPLETED
                )
            finally:
                master.cancel()
                slave.cancel()
            if self._supervisor in done:
                self._supervisor.result()  # raises why it ended
        except BaseException:
            await self.stop()
            raise

    def _supervisor_done(self, task: asyncio.Task[None]) -> None:
        """The role loop ended: by stop(), or by a failure, which ends the broker process."""
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            log.critical("broker %s failed: %s", self.config.broker_name, exc, exc_info=exc)
            self._halt(str(exc) or type(exc).__name__)

    def _halt(self, failure: str) -> None:
        """Stop for good because of ``failure`` (the process then exits non-zero)."""
        if self.failure is None:
            self.failure = failure
        self.halted.set()

    async def _serve(self) -> None:
        """Start the messaging service; with waitForSlave, return once the slave is in sync
        (clients are refused until then)."""
        await self.service.start()
        if self.config.services.wait_for_slave:
            log.info("broker %s waits for its slave (waitForSlave)", self.config.broker_name)
            await self.service.replica_attached.wait()

    async def _replicate_then_serve(self) -> None:
        """Pure master/slave slave: copy the master until it is lost, then take over."""
        connector_config = self.master_connector
        assert connector_config is not None
        store = create_store(self.config)
        self.replica = MasterConnector(
            connector_config.remote_uri,
            store,
            name=self.config.broker_name,
            login=connector_config.user_name,
            passcode=connector_config.password,
        )
        try:
            await self.replica.run()
        except ReplicationError as exc:
            log.error("%s", exc)
            self._halt(str(exc))
            return
        finally:
            await store.stop()
        if self.stopping():
            return
        if self.config.services.shutdown_on_master_failure:
            log.error(
                "broker %s: master lost and shutdownOnMasterFailure is set: shutting down",
                self.config.broker_name,
            )
            self._halt("master lost and shutdownOnMasterFailure is set")
            return
        log.warning("broker %s: master lost, taking over as master", self.config.broker_name)
        self.service = self._new_service()
        await self.service.start()
        self.terms += 1
        self._set_role(Role.MASTER)
        self.service.announce_master()
        self.became_master.set()

    async def _hold_mastership(self) -> None:
        """Wait for the lock, serve while it is held, step down when it is lost; repeat."""
        locker = self.locker
        assert locker is not None
        first = True
        while not self._stopping:
            self._set_role(Role.WAITING)
            if not first:
                self.service = self._new_service()
            first = False
            acquiring = asyncio.ensure_future(locker.acquire())
            try:
                done, _ = await asyncio.wait([acquiring], timeout=SLAVE_AFTER_S)
                if not done:
                    log.info("broker %s is a slave, waiting for the lock", self.config.broker_name)
                    self.standing_by.set()  # let start() return while this broker waits
                await acquiring
            finally:
                acquiring.cancel()
            try:
                opened = await self._serve_when_store_free(locker)
            except BaseException:
                await locker.release()
                raise
            if not opened:
                await locker.release()
                continue
            self.terms += 1
            self._set_role(Role.MASTER)
            self.service.announce_master()
            self.became_master.set()
            await self._keep_lock(locker)
            if self.stopping() or self.halted.is_set():
                return
            log.error("broker %s lost its lock: stepping down to slave", self.config.broker_name)
            self.became_master.clear()
            await self.service.stop()
            await locker.release()

    async def _serve_when_store_free(self, locker: Locker) -> bool:
        """Serve; while another process holds the store (a paused or deposed master), keep the
        lock and retry every ``STORE_RETRY_S``.  False: the lock was lost meanwhile."""
        warned_at: float | None = None
        while True:
            try:
                await self._serve()
            except BrokerStoreBusyError as exc:
                now = time.monotonic()
                if warned_at is None or now - warned_at >= BUSY_WARNING_INTERVAL_S:
                    warned_at = now
                    log.warning(
                        "broker %s holds the lock but cannot open its store yet: %s; it keeps "
                        "the lock and retries every %.1f s",
                        self.config.broker_name,
                        exc,
                        STORE_RETRY_S,
                    )
                self.standing_by.set()  # alive and waiting: let start() return
            else:
                return True
            await asyncio.sleep(STORE_RETRY_S)
            if not await locker.keep_alive():
                log.warning(
                    "broker %s lost the lock while waiting for its store: back to waiting",
                    self.config.broker_name,
                )
                return False
            self.service = self._new_service()

    def stopping(self) -> bool:
        """Whether ``stop`` was called (a method: it changes while the role loop awaits)."""
        return self._stopping

    async def _keep_lock(self, locker: Locker) -> None:
        """Return when the lock is lost (keep-alive says so, the lock file's cheap check or the
        store's fence found it lost), or when the service halted for another reason
        (shutdownOnSlaveFailure), which halts the broker."""
        period_s = locker.keep_alive_period_ms / 1000
        check_s = period_s if period_s > 0 else LOCAL_CHECK_INTERVAL_S
        still_held = locker.still_held if isinstance(locker, SharedFileLocker) else None
        if still_held is not None:
            check_s = min(check_s, LOCAL_CHECK_INTERVAL_S)
        keep_alive_at = time.monotonic() + period_s
        while not self._stopping:
            if await self.service.wait_store_failed(check_s):
                return
            if self.service.halted.is_set():
                self._halt(self.service.halt_reason or "the broker stopped serving")
                return
            # Half a check early counts as due: a wake-up a hair before the keep-alive's time
            # must not put it off by a whole check (a lease could lapse meanwhile).
            due = period_s > 0 and time.monotonic() >= keep_alive_at - check_s / 2
            # The check is a stat: off the loop, since a stalled NFS server would hold it.
            if due or (still_held is not None and not await asyncio.to_thread(still_held)):
                if not await locker.keep_alive():
                    return
                keep_alive_at = time.monotonic() + period_s

    async def stop(self) -> None:
        self._stopping = True
        supervisor, self._supervisor = self._supervisor, None
        if supervisor is not None:
            supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await supervisor
        if self.admin is not None:
            await self.admin.stop()
            self.admin = None
        await self.service.stop()
        if self.locker is not None:
            await self.locker.release()
        self._set_role(Role.STOPPED)

    def _set_role(self, role: Role) -> None:
        self.role = role
        changed, self._role_changed = self._role_changed, asyncio.Event()
        changed.set()

    async def next_role_change(self) -> Role:
        """Wait until the role changes (slave to master, master stepping down); the new role."""
        await self._role_changed.wait()
        return self.role

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    @property
    def stomp_ports(self) -> list[int]:
        return self.service.ports

    @property
    def stomp_urls(self) -> list[str]:
        return [f"tcp://{listener.host}:{listener.port}" for listener in self.service.listeners]

    async def run_until_signalled(self) -> None:
        """Serve until SIGINT or SIGTERM, then stop cleanly."""
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        waits = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(self.halted.wait())]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(signum)
