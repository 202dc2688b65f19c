"""A broker process: configuration in, every service of the broker started in order.

``Broker`` is ActiveMQ's ``BrokerService``, the composition root ("config -> Broker") and the one
place that names the protocol adapters (``ferrymq.adapters``). It starts the admin HTTP listener
first (a slave's role must be visible too), then, for a store shared by a master/slave group,
the lock (a slave waits there and starts nothing else), then the messaging service (store,
recovery, listeners), the discovery advertiser, the network connectors and the broker
connections; ``stop`` runs in reverse order. Configuration not served yet is logged at start.

A master keeps its lock alive every ``lockKeepAlivePeriod`` (a shared-file master also checks
its lock file every second, whatever that period); when the lock is lost (or the store's fence
finds it lost before a commit) the broker stops serving at once, closes its listeners and
store, and goes back to waiting as a slave, as ActiveMQ's launcher restarts it.  A broker that
wins the lock but finds the store held by another process (a paused or deposed master) keeps
the lock and retries the open while the lock stays its own.  A broker that ends by a failure
records why in ``failure`` (``ferrymq broker`` exits 1).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable
from typing import Self

from ferrymq.adapters.amqp import AmqpAdapter
from ferrymq.adapters.stomp import StompAdapter
from ferrymq.admin.auth import admin_access
from ferrymq.admin.server import AdminServer, admin_ssl_context
from ferrymq.admin_view import AdminView
from ferrymq.config.model import BrokerConfig
from ferrymq.config.pending import pending_features
from ferrymq.connections.service import BrokerConnections, BrokerConnectionsError
from ferrymq.discovery import DiscoveryAdvertiser, DiscoveryAdvertiserError
from ferrymq.ha.locker import Locker, LockerError
from ferrymq.ha.replica import MasterConnector, ReplicationError
from ferrymq.ha.role import Role, locker_for
from ferrymq.ha.shared_file import SharedFileLocker
from ferrymq.network import LocalBroker, NetworkService
from ferrymq.service.broker import BrokerService
from ferrymq.service.errors import BrokerStartError, BrokerStoreBusyError, bind_error
from ferrymq.service.exposure import exposure_warnings
from ferrymq.service.listeners import published_url
from ferrymq.service.local_consumer import in_process_readers
from ferrymq.service.stores import create_store
from ferrymq.store.base import MessageStore, StoreError
from ferrymq.util.uri import AnyURI

__all__ = ["Broker", "Role", "locker_for", "wait_first"]

log = logging.getLogger(__name__)

ADAPTERS = (StompAdapter, AmqpAdapter)  # the wire protocols, each on the schemes it names

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


async def wait_first(*waits: Awaitable[object]) -> None:
    """Wait until one of ``waits`` is done; cancel the others that this call wrapped (a task
    or future passed in is left running: its owner ends it)."""
    futures = [asyncio.ensure_future(wait) for wait in waits]
    try:
        await asyncio.wait(futures, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait, future in zip(waits, futures, strict=True):
            if future is not wait:
                future.cancel()


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
        self.role = Role.STARTING
        self.halted = asyncio.Event()
        """Set when the broker stopped serving for good and its process should end."""
        self.failure: str | None = None
        """Why the broker halted, if a failure ended it (None: stopped, or still running)."""
        self.replica: MasterConnector | None = None
        self._role_changed = asyncio.Event()
        try:
            self.locker = locker_for(config) if shared else None
            self.service = self._new_service()
        except (StoreError, LockerError, BrokerConnectionsError) as exc:  # a url it cannot use
            raise BrokerStartError(str(exc), exc.fix) from exc
        self.admin: AdminServer | None = None
        self.became_master = asyncio.Event()
        self.standing_by = asyncio.Event()
        """Set when this broker found the lock taken and waits as a slave."""
        self.terms = 0
        """How many times this broker became master."""
        self._supervisor: asyncio.Task[None] | None = None
        self._stopping = False
        self._starting = False
        self._stopped = False

    def _new_service(self) -> BrokerService:
        fence = getattr(self.locker, "fence", None)
        service = BrokerService(
            self.config,
            adapters=ADAPTERS,
            store=self._store_override,
            fence=fence,
            on_halt=self._service_halted,
        )
        self.network = NetworkService(
            self.config,
            LocalBroker(service.broker_id, self.config.broker_name, service.cluster_url),
            lambda: [published_url(listener) for listener in service.listeners],
        )
        readers = in_process_readers(service)  # a mirror's forwarder reads its queue so
        self.broker_connections = BrokerConnections.for_service(self.config, service, readers)
        service.attachments += [_Advertising(service), self.network, self.broker_connections]
        return service

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        """Start; returns once serving, or, for a slave of a master/slave group, once it waits
        for the lock (``became_master`` is set when it takes over).  Whatever keeps it from
        starting is raised as a ``BrokerStartError`` that says what and how to fix it."""
        self._starting = True
        try:
            await self._start()
        except (LockerError, StoreError) as exc:
            await self.stop()
            raise BrokerStartError(str(exc), exc.fix) from exc
        except BaseException:
            await self.stop()
            raise
        finally:
            self._starting = False

    async def _start(self) -> None:
        secured = self.service.security.authenticator is not None
        for line in [*pending_features(self.config), *exposure_warnings(self.config, secured)]:
            log.warning("%s", line)
        await self._start_admin()
        if self.master_connector is not None:
            await self._start_replica()
            return
        if self.locker is None:
            await self._serve()
            if not self.halted.is_set():
                self._now_master(Role.STANDALONE)
            return
        self._supervisor = self._supervise(self._hold_mastership(), "role")
        # A broker that gets the lock at once is serving when start() returns; a slave
        # returns once it knows it waits.
        await wait_first(self.became_master.wait(), self.standing_by.wait(), self._supervisor)
        if self._supervisor.done():
            self._supervisor.result()  # raises why it ended

    async def _start_admin(self) -> None:
        admin = self.config.admin
        if not admin.enabled:
            return
        security = self.service.security
        access = admin_access(admin, security.authenticator, security.throttle)
        tls = admin_ssl_context(admin, self.config.ssl_context)  # TlsError: one line
        self.admin = AdminServer(AdminView(self), admin.host, admin.port, access=access, tls=tls)
        try:
            await self.admin.start()
        except OSError as exc:
            self.admin = None
            move = "choose another address with --admin HOST:PORT, or --admin off"
            raise bind_error("the admin API", admin.host, admin.port, exc, move) from exc

    async def _start_replica(self) -> None:
        """Pure master/slave slave: open its own store now (so that a store it cannot use
        fails the start), then copy the master in the background."""
        connector = self.master_connector
        assert connector is not None
        try:
            self.replica = MasterConnector(
                connector.remote_uri,
                create_store(self.config),
                name=self.config.broker_name,
                login=connector.user_name,
                passcode=connector.password,
            )
        except ReplicationError as exc:
            raise BrokerStartError(
                str(exc), "give masterConnector remoteURI=tcp://HOST:PORT"
            ) from exc
        await self.replica.open()
        self._supervisor = self._supervise(self._replicate_then_serve(self.replica), "replica")
        self._set_role(Role.REPLICATING)
        self.standing_by.set()

    def _supervise(self, coro: Awaitable[None], what: str) -> asyncio.Task[None]:
        task = asyncio.ensure_future(coro)
        task.set_name(f"ferrymq-{self.config.broker_name}-{what}")
        task.add_done_callback(self._supervisor_done)
        return task

    def _supervisor_done(self, task: asyncio.Task[None]) -> None:
        """The role loop ended: by stop(), or by a failure, which ends the broker process
        (while ``start`` runs, it raises the failure itself)."""
        if task.cancelled() or self._starting:
            return
        exc = task.exception()
        if exc is not None:
            debug = log.isEnabledFor(logging.DEBUG)
            log.critical("broker %s failed: %s", self.config.broker_name, exc, exc_info=debug)
            self._halt(str(exc) or type(exc).__name__)

    def _service_halted(self, reason: str) -> None:
        """The service stopped serving.  A master of a shared-store group whose store failed
        steps down (its lock was taken: the role loop sees it and waits for the lock again);
        every other halt (shutdownOnSlaveFailure, a store failure without a lock) is final."""
        if self.locker is None or not self.service.store_failed:
            self._halt(reason)

    def _halt(self, failure: str) -> None:
        """Stop for good because of ``failure`` (the process then exits non-zero)."""
        if self.failure is None:
            self.failure = failure
        self._set_role(Role.FAILED)
        self.halted.set()

    def _now_master(self, role: Role) -> None:
        self.terms += 1
        self._set_role(role)
        self.service.announce_master()
        self.became_master.set()

    async def _serve(self) -> None:
        """Start the messaging service; with waitForSlave, return once the slave is in sync
        (clients are refused until then) or the broker halted (the slave was lost)."""
        await self.service.start()
        if self.config.services.wait_for_slave and not self.service.replica_attached.is_set():
            self._set_role(Role.WAITING_FOR_SLAVE)
            log.info(
                "broker %s is waiting for its slave to connect and catch up before it accepts "
                "clients (waitForSlave)",
                self.config.broker_name,
            )
            await wait_first(self.service.replica_attached.wait(), self.halted.wait())

    async def _replicate_then_serve(self, replica: MasterConnector) -> None:
        """Pure master/slave slave: copy the master until it is lost, then take over."""
        try:
            await replica.run()
        except ReplicationError as exc:
            log.error("%s", exc)
            self._halt(str(exc))
            return
        finally:
            await replica.store.stop()
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
        self.replica = None  # the replication is over: the admin API no longer shows it
        self.service = self._new_service()
        await self.service.start()
        self._now_master(Role.MASTER)

    async def _hold_mastership(self) -> None:
        """Wait for the lock, serve while it is held, step down when it is lost; repeat."""
        locker = self.locker
        assert locker is not None
        first = True
        while not self._stopping:
            if not first:
                self._set_role(Role.WAITING)
                self.service = self._new_service()
            first = False
            acquiring = asyncio.ensure_future(locker.acquire())
            try:
                done, _ = await asyncio.wait([acquiring], timeout=SLAVE_AFTER_S)
                if not done:
                    log.debug("broker %s is a slave, waiting for the lock", self.config.broker_name)
                    self._stand_by()
                await acquiring
            finally:
                acquiring.cancel()
            try:
                opened = await self._serve_when_store_free(locker)
            except BaseException:
                await locker.release()
                raise
            if self.halted.is_set():
                return
            if not opened:
                await locker.release()
                continue
            self._now_master(Role.MASTER)
            await self._keep_lock(locker)
            if self.stopping() or self.halted.is_set():
                return
            log.error("broker %s lost its lock: stepping down to slave", self.config.broker_name)
            self.became_master.clear()
            self._set_role(Role.STOPPING)
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
                self._stand_by()
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

    def _stand_by(self) -> None:
        """Alive and waiting for the lock (or for the store): let start() return."""
        if self.role is Role.STARTING:
            self._set_role(Role.WAITING)
        self.standing_by.set()

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
        if self._stopped:
            return
        self._stopping = True
        if self.role is not Role.FAILED:
            self._set_role(Role.STOPPING)
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
        self._stopped = True
        self._set_role(Role.STOPPED if self.failure is None else Role.FAILED)

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
