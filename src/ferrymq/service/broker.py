"""``BrokerService``: one broker process's services around the region broker.

It owns the store, the transport listeners and the connections, and it is where "decide, then do"
is done: after every batch of client frames (and after every store completion) ``process`` drains
what the core decided, submits the store operations as one write, hands deliveries to their
connections (those that depend on that write wait for it), closes connections, and starts
page-ins.  Services start in order (store, recovery, listeners, timers) and stop in reverse.
Every task it starts is kept in ``_tasks`` and cancelled and awaited by ``stop``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import socket
import time
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from ferrymq import __version__
from ferrymq.config.model import BrokerConfig, StompLimitsConfig, TransportConnectorConfig
from ferrymq.config.persistence import JdbcPersistenceConfig, KahaDBConfig
from ferrymq.core.consumer import Consumer
from ferrymq.core.effects import Delivery, PageIn
from ferrymq.core.errors import BrokerError
from ferrymq.core.region import RegionBroker, decode_all
from ferrymq.core.scheduler import SCHEDULED_CONTAINER
from ferrymq.core.usage import UsageLimits
from ferrymq.service.cluster import ClusterMembership
from ferrymq.service.policies import PolicyResolver
from ferrymq.service.protocol import StompConnection
from ferrymq.service.replication import ReplicaLink, both_done
from ferrymq.service.snapshot import snapshot_batches
from ferrymq.service.trace import MessageTrace
from ferrymq.stomp.limits import Limits
from ferrymq.store.base import MessageStore, StoreBusyError, StoreError
from ferrymq.store.memory import MemoryStore
from ferrymq.store.sqlite import SqliteStore
from ferrymq.transport.connection import TransportConnection
from ferrymq.transport.tcp import TcpListener
from ferrymq.util import vm
from ferrymq.util.aio import wait_event

log = logging.getLogger(__name__)

STOMP_SCHEMES = frozenset({"tcp", "stomp", "nio", "stomp+nio", "auto", "auto+nio"})
TICK_INTERVAL_S = 1.0
BROWSE_PAGE = 500


class BrokerStartError(Exception):
    """The broker cannot start; the message says what and where."""


class BrokerStoreBusyError(BrokerStartError):
    """The store is held by another process (a paused or deposed master): a broker that holds
    the group's lock may retry the start later, unlike after any other start failure."""


def _observed(future: asyncio.Future[None]) -> None:
    """Mark a failure as seen: whoever waited on it is told through its own callbacks, and a
    connection that closed meanwhile leaves nobody to read it."""
    if not future.cancelled():
        future.exception()


def _copy_outcome(source: asyncio.Future[None], target: asyncio.Future[None]) -> None:
    if target.done():
        return
    if source.cancelled():
        target.cancel()
    elif (exc := source.exception()) is not None:
        target.set_exception(exc)
    else:
        target.set_result(None)


def published_url(listener: TcpListener, scheme: str = "tcp") -> str:
    """The URL clients should use for a listener: its address, or the host name when it is
    bound to every interface (ActiveMQ's default publishedAddressPolicy)."""
    host = listener.host
    if host in ("0.0.0.0", "::", ""):
        host = socket.gethostname()
    return f"{scheme}://{host}:{listener.port}"


def _physical_memory() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def generate_broker_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{int(time.time() * 1000):x}"


def _to_limits(config: StompLimitsConfig) -> Limits:
    return Limits(max_body_bytes=config.max_data_length, max_frame_bytes=config.max_frame_size)


def create_store(config: BrokerConfig, fence: Callable[[], Any] | None = None) -> MessageStore:
    """The configured store.  ``fence`` is the master/slave locker's: for SQLite a check run
    before each commit (the locker then holds the directory's lock, not the store); for
    PostgreSQL the lease record that every write transaction verifies."""
    if not config.persistent or config.persistence is None:
        return MemoryStore(producer_id_window=config.duplicate_window)
    if isinstance(config.persistence, KahaDBConfig):
        directory = config.store_directory
        assert directory is not None
        return SqliteStore(
            directory,
            producer_id_window=config.duplicate_window,
            lock=fence is None and config.persistence.use_lock,
            fence=fence,
        )
    if isinstance(config.persistence, JdbcPersistenceConfig):
        from ferrymq.store.postgres import PostgresStore  # psycopg: only when configured

        jdbc = config.persistence
        source = jdbc.data_source
        return PostgresStore(
            source.url or "",
            username=source.username,
            password=source.password,
            table_prefix=jdbc.table_prefix,
            producer_id_window=config.duplicate_window,
            fence=fence,
            create_tables_on_startup=jdbc.create_tables_on_startup,
        )
    raise BrokerStartError(
        f"{type(config.persistence).__name__}: this persistence adapter is not supported"
    )


class Attachment(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class BrokerService:
    def __init__(
        self,
        config: BrokerConfig,
        *,
        store: MessageStore | None = None,
        fence: Callable[[], Any] | None = None,
        on_halt: Callable[[str], None] | None = None,
    ) -> None:
        self.config = config
        self._on_halt = on_halt
        """Called, with the reason, when this service stops serving for good (its store
        failed, or its slave was lost with shutdownOnSlaveFailure)."""
        self.halt_reason: str | None = None
        """Why this service stopped serving for good, once it has."""
        self.broker_id = config.broker_id or generate_broker_id()
        self.incarnation = f"{int(time.time() * 1000):x}"
        usage = config.system_usage
        self.region = RegionBroker(
            self.broker_id,
            config.broker_name,
            incarnation=self.incarnation,
            policies=PolicyResolver(config),
            usage_limits=UsageLimits(
                memory_bytes=usage.effective_memory_limit(_physical_memory()),
                store_bytes=usage.store_limit,
                temp_bytes=usage.temp_limit,
            ),
            duplicate_window=config.duplicate_window,
            advisory_support=config.advisory_support,
            scheduler_support=config.scheduler_support,
        )
        self.store = store if store is not None else create_store(config, fence)
        trace = config.message_trace
        self.trace = (
            MessageTrace(trace, self.broker_id, config.broker_name, self.incarnation)
            if trace is not None
            else None
        )
        self.region.tracing = self.trace is not None
        self.server_name = f"FerryMQ/{__version__}"
        self.send_fail_if_no_space = usage.send_fail_if_no_space
        self.send_fail_after_ms = usage.send_fail_if_no_space_after_timeout_ms
        self.listeners: list[TcpListener] = []
        self.served: list[tuple[TransportConnectorConfig, TcpListener]] = []
        """Each configured listener with its configuration (discoveryUri, cluster updates)."""
        self.cluster = ClusterMembership()
        self.connections: dict[str, StompConnection] = {}
        self.last_commit: asyncio.Future[None] | None = None
        self._next_commit: asyncio.Future[None] | None = None
        self.started = False
        self.started_at = 0.0
        self._connection_ids = itertools.count(1)
        self.unflushed: set[TransportConnection] = set()
        """Sockets written to during this ``process`` pass, flushed at its end."""
        self.auto_acks: list[Delivery] = []
        """Auto-ack deliveries written to their sockets, acknowledged in one batch."""
        self._flow_waiters: list[StompConnection] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._processing = False
        self._tick_handle: asyncio.TimerHandle | None = None
        self._scheduler_handle: asyncio.TimerHandle | None = None
        self._scheduler_due: int | None = None
        self._store_failed: BaseException | None = None
        self.halted = asyncio.Event()
        """Set when this broker stopped serving for good (its store failed, its slave was lost
        with shutdownOnSlaveFailure); the process should stop."""
        self.replica: ReplicaLink | None = None
        self.replica_attached = asyncio.Event()
        self.accepting_clients = not config.services.wait_for_slave
        """waitForSlave: clients are refused until the slave is attached and in sync."""
        self._store_failure = asyncio.Event()
        self._vm_names: tuple[str, ...] = ()
        self.attachments: list[Attachment] = []
        """Services that run while this one serves (network connectors): started after the
        listeners, stopped before them."""

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        try:
            recovery = await self.store.start()
        except StoreBusyError as exc:
            raise BrokerStoreBusyError(str(exc)) from exc
        except StoreError as exc:
            raise BrokerStartError(str(exc)) from exc
        if self.trace is not None:
            try:
                await self.trace.start()
            except OSError as exc:
                await self.store.stop()
                raise BrokerStartError(f"cannot write the message trace: {exc}") from exc
        self.tick_clock()
        self.region.recover(recovery)
        if self.region.scheduler is not None and SCHEDULED_CONTAINER in recovery.containers:
            await self._restore_scheduled()
        self.process()
        try:
            for connector in self.config.transport_connectors:
                await self._start_listener(connector)
        except BaseException:
            await self.stop()
            raise
        if self.listeners:
            first = self.listeners[0]
            self.region.broker_url = f"tcp://{first.host}:{first.port}"
        self._vm_names = vm.register((self.broker_id, self.config.broker_name), self.open_vm_socket)
        self._tick_handle = asyncio.get_running_loop().call_later(TICK_INTERVAL_S, self._tick)
        self.started = True
        self.started_at = time.time()
        try:
            for attachment in self.attachments:
                await attachment.start()
        except BaseException:
            await self.stop()
            raise
        log.info(
            "broker %s (%s) started, store recovered %d destinations",
            self.config.broker_name,
            self.broker_id,
            len(recovery.containers),
        )

    async def _restore_scheduled(self) -> None:
        """Scheduled jobs are all held in memory: read them back, page by page."""
        scheduler = self.region.scheduler
        assert scheduler is not None
        cursor = 0
        while True:
            records = await self.store.load(SCHEDULED_CONTAINER, cursor, BROWSE_PAGE)
            scheduler.restore(records)
            if len(records) < BROWSE_PAGE:
                return
            cursor = records[-1].seq + 1

    async def _start_listener(self, connector: TransportConnectorConfig) -> None:
        scheme = connector.scheme
        if scheme not in STOMP_SCHEMES:
            raise BrokerStartError(
                f"transport connector {connector.display_name}: scheme {scheme}:// is not "
                "supported yet (FerryMQ serves STOMP on tcp:// and stomp://)"
            )
        limits = _to_limits(connector.stomp)
        grace = max(connector.stomp.hb_grace_period_multiplier, 1.5)

        listener = TcpListener(
            connector.host or "0.0.0.0",
            connector.port,
            lambda: StompConnection(
                self,
                connector.display_name,
                limits=limits,
                grace=grace,
            ),
            maximum_connections=connector.maximum_connections,
            name=connector.display_name,
        )
        await listener.start()
        self.listeners.append(listener)
        self.served.append((connector, listener))
        self.cluster.add_listener(connector, published_url(listener, connector.scheme))
        log.info("listening for STOMP on %s:%d (%s)", listener.host, listener.port, connector.uri)

    async def open_vm_socket(self) -> socket.socket:
        """``vm://``: serve one end of a socket pair as a connection, return the other."""
        if not self.started:
            raise OSError(f"broker {self.config.broker_name} is not serving")
        ours, theirs = socket.socketpair()
        handler = StompConnection(self, "vm", limits=Limits(), grace=1.5)
        try:
            await asyncio.get_running_loop().connect_accepted_socket(
                lambda: TransportConnection(handler), ours
            )
        except BaseException:
            ours.close()
            theirs.close()
            raise
        return theirs

    async def stop(self) -> None:
        self.started = False
        if self.trace is not None:
            self.trace.stopping()
        vm.unregister(self._vm_names, self.open_vm_socket)
        self._vm_names = ()
        for handle in (self._tick_handle, self._scheduler_handle):
            if handle is not None:
                handle.cancel()
        self._tick_handle = self._scheduler_handle = None
        for attachment in reversed(self.attachments):
            try:
                await attachment.stop()
            except Exception:
                log.exception("stopping %r failed", attachment)
        for listener in reversed(self.listeners):
            await listener.stop()
        self.listeners.clear()
        self.served.clear()
        self.cluster.clear_listeners()
        for connection in list(self.connections.values()):
            connection.close("broker stopping")
        self.process()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if self.last_commit is not None and not self.last_commit.done():
            await asyncio.wait([self.last_commit])
        await self.store.stop()
        if self.trace is not None:
            await self.trace.stop()

    def cluster_url(self) -> str | None:
        """The URL failover clients use for this broker, given to peers over bridges: the
        first listener that updates cluster clients, else the first (ActiveMQ's
        ``getDefaultSocketURIString``)."""
        for connector, listener in self.served:
            if connector.update_cluster_clients or connector.rebalance_cluster_clients:
                return published_url(listener, connector.scheme)
        if self.served:
            connector, listener = self.served[0]
            return published_url(listener, connector.scheme)
        return None

    @property
    def ports(self) -> list[int]:
        return [listener.port for listener in self.listeners]

    # -- connections --------------------------------------------------------------------------

    def new_connection_id(self) -> str:
        return f"ID:{self.broker_id}-{next(self._connection_ids)}"

    def register(self, connection: StompConnection) -> None:
        self.connections[connection.connection_id] = connection

    def unregister(self, connection: StompConnection) -> None:
        self.connections.pop(connection.connection_id, None)
        if connection in self._flow_waiters:
            self._flow_waiters.remove(connection)

    def wait_for_space(self, connection: StompConnection) -> None:
        """A producer is blocked by flow control; ``process`` resumes it when space frees."""
        if connection not in self._flow_waiters:
            self._flow_waiters.append(connection)

    def stop_waiting(self, connection: StompConnection) -> None:
        if connection in self._flow_waiters:
            self._flow_waiters.remove(connection)

    def tick_clock(self) -> None:
        self.region.now = int(time.time() * 1000)

    # -- decide, then do ----------------------------------------------------------------------

    def process(self) -> None:
        """Carry out what the core decided, until it has nothing more to say."""
        if self._processing:
            return
        self._processing = True
        try:
            region = self.region
            while True:
                effects = region.drain()
                if not effects:
                    if self.auto_acks:
                        acks, self.auto_acks = self.auto_acks, []
                        region.acknowledge_written(acks)
                        continue
                    if self._flow_waiters and not self._usage_full():
                        waiters, self._flow_waiters = self._flow_waiters, []
                        for waiter in waiters:
                            waiter.resume()
                        continue
                    break
                if effects.trace and self.trace is not None:
                    self.trace.record(effects.trace)
                if effects.store_ops:
                    self._write(effects.store_ops)
                commit = self.last_commit
                connections = self.connections
                for delivery in effects.deliveries:
                    connection = connections.get(delivery.consumer.connection_id)
                    if connection is not None:
                        connection.deliver(delivery, commit if delivery.after_commit else None)
                for close in effects.closes:
                    connection = connections.get(close.connection_id)
                    if connection is not None:
                        connection.close(close.reason)
                for page_in in effects.page_ins:
                    self.spawn(self._page_in(page_in))
            # Everything this batch wrote leaves now, one write per socket, rather than a loop
            # turn later: the latency of a lone message is one pass through here.
            unflushed, self.unflushed = self.unflushed, set()
            for transport in unflushed:
                transport.flush()
            if self.region.scheduler is not None:
                self._arm_scheduler()
        finally:
            self._processing = False

    def _arm_scheduler(self) -> None:
        """Wake up when the next scheduled message is due (the 1 s tick is too coarse)."""
        scheduler = self.region.scheduler
        assert scheduler is not None
        due = scheduler.next_due()
        if due is None or (self._scheduler_due is not None and self._scheduler_due <= due):
            return
        if self._scheduler_handle is not None:
            self._scheduler_handle.cancel()
        self._scheduler_due = due
        delay_s = max(0.0, (due - int(time.time() * 1000)) / 1000)
        self._scheduler_handle = asyncio.get_running_loop().call_later(
            delay_s, self._scheduler_fired
        )

    def _scheduler_fired(self) -> None:
        self._scheduler_handle = None
        self._scheduler_due = None
        self.tick_clock()
        scheduler = self.region.scheduler
        if scheduler is not None:
            scheduler.fire_due()
        self.process()

    def _usage_full(self) -> bool:
        usage = self.region.usage
        return usage.store_full or usage.memory_full

    def commit_barrier(self) -> asyncio.Future[None] | None:
        """A future done once everything the core has decided so far is durable (None: it is).

        A receipt waits on it instead of forcing a store write of its own: all the frames of
        one read share the single write that ``process`` makes at the end of the read.
        """
        if self.region.effects.store_ops:
            if self._next_commit is None:
                self._next_commit = asyncio.get_running_loop().create_future()
            return self._next_commit
        last = self.last_commit
        return last if last is not None and not last.done() else None

    def _write(self, ops: list[Any]) -> None:
        barrier, self._next_commit = self._next_commit, None
        if self._store_failed is not None:
            if barrier is not None:
                barrier.set_exception(StoreError(f"the store failed: {self._store_failed}"))
            return
        future = self.store.write(ops)
        future.add_done_callback(self._commit_done)
        if self.replica is not None:
            # Pure master/slave: done when the slave has the batch too (seed 002).
            future = both_done(future, self.replica.replicate(ops))
        if barrier is not None:
            barrier.add_done_callback(_observed)
            future.add_done_callback(lambda done: _copy_outcome(done, barrier))
        future.add_done_callback(_observed)
        self.last_commit = future

    def _commit_done(self, future: asyncio.Future[None]) -> None:
        if future.cancelled():
            return
        exc = future.exception()
        if exc is not None and self._store_failed is None:
            self._store_failed = exc
            self._store_failure.set()
            log.critical("store write failed, the broker stops serving: %s", exc)
            self.spawn(self._stop_after_store_failure())

    async def wait_store_failed(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s``; True once the store has failed (a lost lock included)."""
        return await wait_event(self._store_failure, timeout_s)

    def announce_master(self) -> None:
        """``ActiveMQ.Advisory.MasterBroker``: this broker just became master."""
        self.tick_clock()
        self.region.announce_master()
        self.process()

    async def _stop_after_store_failure(self) -> None:
        await self._stop_serving("the broker's store failed")

    async def _stop_serving(self, reason: str) -> None:
        """Close every listener and connection; the broker process then stops (``halted``)."""
        self.halt_reason = reason
        self.halted.set()
        if self._on_halt is not None:
            self._on_halt(reason)
        for listener in self.listeners:
            await listener.stop()
        for connection in list(self.connections.values()):
            connection.close(reason)

    # -- pure master/slave: the master's side ----------------------------------------------

    def attach_replica(self, connection: StompConnection, name: str) -> ReplicaLink:
        """A slave connected (``ferrymq.replication:true``): snapshot it, then stream to it."""
        if self.replica is not None and not self.replica.closed:
            raise BrokerError(
                f"Only one slave can be connected to the master ({self.replica.name} is)"
            )
        link = ReplicaLink(name, connection.send_replication_batch)
        self.replica = link
        log.info("slave %s attached; sending it a snapshot of the store", name)
        self.spawn(self._synchronise(link))
        return link

    def detach_replica(self, link: ReplicaLink) -> None:
        link.close()
        if self.replica is not link:
            return
        self.replica = None
        self.replica_attached.clear()
        if self.config.services.shutdown_on_slave_failure and self.started:
            log.error("slave %s lost and shutdownOnSlaveFailure is set: stopping", link.name)
            self.spawn(self._stop_serving("the slave was lost (shutdownOnSlaveFailure)"))
        else:
            log.warning("slave %s lost; the master goes on alone", link.name)

    async def _synchronise(self, link: ReplicaLink) -> None:
        batches = await snapshot_batches(self.region, self.store)
        await link.send_snapshot(batches)
        link.go_live()
        if link.closed:
            return
        log.info("slave %s is in sync", link.name)
        self.replica_attached.set()
        self.accepting_clients = True

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("broker task failed", exc_info=task.exception())

    async def _page_in(self, request: PageIn) -> None:
        records = await self.store.load(request.container, request.from_seq, request.limit)
        self.tick_clock()
        self.region.paged_in(request.container, records, request.limit)
        self.process()

    def _tick(self) -> None:
        self.tick_clock()
        self.region.tick()
        self.process()
        self._tick_handle = asyncio.get_running_loop().call_later(TICK_INTERVAL_S, self._tick)

    # -- browsing -----------------------------------------------------------------------------

    def browse(self, connection: StompConnection, consumer: Consumer) -> None:
        """Send a snapshot of a queue to a browser subscription, then ``browser:end``."""
        messages, key, cursor, paged_out = self.region.browse(consumer)
        for message in messages:
            connection.send_browsed(consumer, message)
        if paged_out:
            self.spawn(self._browse_store(connection, consumer, key, cursor))
        else:
            connection.send_browse_end(consumer)

    async def _browse_store(
        self, connection: StompConnection, consumer: Consumer, key: str, cursor: int
    ) -> None:
        while not connection.closed:
            records = await self.store.load(key, cursor, BROWSE_PAGE)
            for message in decode_all(records):
                if not message.is_expired(self.region.now) and self.region.selects(
                    consumer, message
                ):
                    connection.send_browsed(consumer, message)
            if len(records) < BROWSE_PAGE:
                break
            cursor = records[-1].seq + 1
        connection.send_browse_end(consumer)

    # -- what the admin API shows -------------------------------------------------------------

    def statistics(self) -> dict[str, Any]:
        usage = self.region.usage
        store = self.store.statistics()
        return {
            "name": self.config.broker_name,
            "id": self.broker_id,
            "version": __version__,
            "uptime_s": time.time() - self.started_at if self.started else 0.0,
            "connections": len(self.connections),
            "listeners": [
                {"name": listener.name, "address": listener.address} for listener in self.listeners
            ],
            "memory": {"used": usage.memory_used, "limit": usage.limits.memory_bytes},
            "store": {
                "used": usage.store_used,
                "limit": usage.limits.store_bytes,
                "commits": store.commits,
                "operations": store.operations,
                "last_commit_ms": store.last_commit_ms,
                "total_commit_ms": store.total_commit_ms,
            },
            "temp": {"used": usage.temp_used, "limit": usage.limits.temp_bytes},
            "duplicates_suppressed": self.region.dedup.duplicates,
        }
