"""``BrokerService``: the protocol-neutral service around the region broker.

It owns the store, the listeners (each served by the protocol adapter its scheme names) and the
connections, and it is where "decide, then do" is done: after every batch of requests (and
after every store completion) ``process`` drains what the core decided, submits the store
operations as one write (``commit.CommitPipeline``), hands deliveries to their connections
(those that depend on that write wait for it, in each connection's ``outbox``), closes
connections, and starts page-ins.  It knows no wire protocol: ``ferrymq.adapters`` does.
Services start in order (store, recovery, listeners, timers, attachments) and stop in reverse.
Every task it starts is kept in ``_tasks`` and cancelled and awaited by ``stop``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import socket
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, Protocol

from ferrymq import __version__
from ferrymq.config.model import BrokerConfig, TransportConnectorConfig
from ferrymq.core.consumer import Consumer
from ferrymq.core.effects import PageIn
from ferrymq.core.errors import BrokerError
from ferrymq.core.scheduler import SCHEDULED_CONTAINER
from ferrymq.service.browse import BROWSE_PAGE, browse_store
from ferrymq.service.cluster import ClusterMembership
from ferrymq.service.commit import CommitPipeline
from ferrymq.service.connection import BrokerConnection
from ferrymq.service.errors import BrokerStartError, BrokerStoreBusyError
from ferrymq.service.listeners import ListenerError, Listeners, ProtocolAdapter, published_url
from ferrymq.service.regions import create_region, recover_region
from ferrymq.service.registry import ConnectionRegistry
from ferrymq.service.replication import ReplicaLink
from ferrymq.service.security import BrokerSecurity
from ferrymq.service.snapshot import snapshot_batches
from ferrymq.service.stores import create_store
from ferrymq.service.timers import BrokerTimers, now_ms
from ferrymq.service.trace import MessageTrace
from ferrymq.store.base import MessageStore, StoreBusyError, StoreError
from ferrymq.transport.tcp import TcpListener
from ferrymq.util import vm
from ferrymq.util.aio import wait_event

__all__ = ["BrokerService", "BrokerStartError", "BrokerStoreBusyError", "create_store"]

log = logging.getLogger(__name__)


AdapterFactory = Callable[["BrokerService"], ProtocolAdapter]
"""Makes a protocol adapter for a service (``ferrymq.adapters.stomp.StompAdapter``)."""


class Attachment(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...


def generate_broker_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{int(time.time() * 1000):x}"


class BrokerService:
    def __init__(
        self,
        config: BrokerConfig,
        *,
        adapters: Sequence[AdapterFactory],
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
        self.incarnation = f"{now_ms():x}"
        self.region = create_region(config, self.broker_id, self.incarnation)
        self.security = BrokerSecurity.from_config(config, self.region)
        self.store = store if store is not None else create_store(config, fence)
        trace = config.message_trace
        self.trace = (
            MessageTrace(trace, self.broker_id, config.broker_name, self.incarnation)
            if trace is not None
            else None
        )
        self.region.tracing = self.trace is not None
        self.server_name = f"FerryMQ/{__version__}"
        usage = config.system_usage
        self.send_fail_if_no_space = usage.send_fail_if_no_space
        self.send_fail_after_ms = usage.send_fail_if_no_space_after_timeout_ms
        self.connectors = Listeners.of(config, [make(self) for make in adapters])
        """The transport connectors: listeners, each served by its scheme's protocol adapter."""
        self.cluster = ClusterMembership()
        self.registry: ConnectionRegistry[BrokerConnection] = ConnectionRegistry()
        self.timers = BrokerTimers(self.region, self.process)
        self.commits = CommitPipeline(self.store, self._store_failed, self.region.mirror)
        self.started = False
        self.started_at = 0.0
        self._connection_ids = itertools.count(1)
        self._tasks: set[asyncio.Task[None]] = set()
        self._processing = False
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
            raise BrokerStartError(str(exc), exc.fix) from exc
        if self.trace is not None:
            try:
                await self.trace.start()
            except OSError as exc:
                await self.store.stop()
                fix = "choose a directory this broker can write to with --trace DIR"
                raise BrokerStartError(f"cannot write the message trace: {exc}", fix) from exc
        self.tick_clock()
        recover_region(self.region, recovery, self.config)
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
        self.timers.start()
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
        try:
            listener = await self.connectors.start(connector)
        except ListenerError as exc:
            raise BrokerStartError(str(exc)) from None
        if listener is not None:  # a vm:// connector has no address to tell clients about
            self.cluster.add_listener(connector, published_url(listener, connector.scheme))

    async def open_vm_socket(self) -> socket.socket:
        """``vm://``: serve one end of a socket pair as a connection, return the other."""
        if not self.started:
            raise OSError(f"broker {self.config.broker_name} is not serving")
        return await self.connectors.open_vm_socket()

    async def stop(self) -> None:
        self.started = False
        if self.trace is not None:
            self.trace.stopping()
        vm.unregister(self._vm_names, self.open_vm_socket)
        self._vm_names = ()
        self.timers.stop()
        for attachment in reversed(self.attachments):
            try:
                await attachment.stop()
            except Exception:
                log.exception("stopping %r failed", attachment)
        await self.connectors.stop()
        self.cluster.clear_listeners()
        for connection in self.registry:
            connection.close("broker stopping")
        self.process()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        await self.commits.settled()
        await self.security.close()
        await self.store.stop()
        if self.trace is not None:
            await self.trace.stop()

    @property
    def listeners(self) -> list[TcpListener]:
        return self.connectors.listeners

    @property
    def served(self) -> list[tuple[TransportConnectorConfig, TcpListener]]:
        """Each configured listener with its configuration (discoveryUri, cluster updates)."""
        return self.connectors.served

    @property
    def ports(self) -> list[int]:
        return self.connectors.ports

    def cluster_url(self) -> str | None:
        return self.connectors.cluster_url()

    # -- connections --------------------------------------------------------------------------

    @property
    def connections(self) -> Mapping[str, BrokerConnection]:
        return self.registry.connections

    def new_connection_id(self) -> str:
        return f"ID:{self.broker_id}-{next(self._connection_ids)}"

    def tick_clock(self) -> None:
        self.region.begin_batch(now_ms())

    def commit_barrier(self) -> asyncio.Future[None] | None:
        """A future done once everything the core has decided so far is durable (None: it is).

        A confirmation waits on it instead of forcing a store write of its own: all the
        requests of one read share the single write that ``process`` makes at the end of it.
        """
        return self.commits.barrier(self.region.has_pending_writes())

    def last_write(self) -> asyncio.Future[None] | None:
        """The latest store write (a DISCONNECT's receipt waits for it)."""
        return self.commits.last_commit

    # -- decide, then do ----------------------------------------------------------------------

    def process(self) -> None:
        """Carry out what the core decided, until it has nothing more to say."""
        if self._processing:
            return
        self._processing = True
        try:
            self._process()
        finally:
            self._processing = False

    def _process(self) -> None:
        region = self.region
        registry = self.registry
        connections = registry.connections
        while True:
            effects = region.drain()
            if not effects:
                acks = registry.take_auto_acks()
                if acks:
                    region.acknowledge_written(acks)
                    continue
                if registry.producers_waiting and not self._usage_full():
                    registry.resume_producers()
                    continue
                break
            if effects.trace and self.trace is not None:
                self.trace.record(effects.trace)
            if effects.store_ops:
                self.commits.write(effects.store_ops)
            commit = self.commits.last_commit
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
        registry.flush()
        if region.scheduler is not None:
            self.timers.arm_scheduler()

    def _usage_full(self) -> bool:
        usage = self.region.usage
        return usage.store_full or usage.memory_full

    def _store_failed(self, exc: BaseException) -> None:
        self._store_failure.set()
        self.spawn(self._stop_after_store_failure())

    @property
    def store_failed(self) -> bool:
        """Whether a store write failed (a lost lock included): this service serves no more."""
        return self._store_failure.is_set()

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

    def attach_replica(
        self, send_batch: Callable[[int, bytes, bool], None], name: str
    ) -> ReplicaLink:
        """A slave connected (``ferrymq.replication:true``): snapshot it, then stream to it."""
        if self.replica is not None and not self.replica.closed:
            raise BrokerError(
                f"Only one slave can be connected to the master ({self.replica.name} is)"
            )
        link = ReplicaLink(name, send_batch)
        self.replica = self.commits.replica = link
        log.info("slave %s attached; sending it a snapshot of the store", name)
        self.spawn(self._synchronise(link))
        return link

    def detach_replica(self, link: ReplicaLink) -> None:
        link.close()
        if self.replica is not link:
            return
        self.replica = self.commits.replica = None
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

    # -- browsing -----------------------------------------------------------------------------

    def browse(self, connection: BrokerConnection, consumer: Consumer) -> None:
        """Send a snapshot of a queue to a browser subscription, then its end."""
        snapshot = self.region.browse(consumer)
        for message in snapshot.messages:
            connection.deliver_browsed(consumer, message)
        if snapshot.paged_out:
            self.spawn(
                browse_store(
                    self.store,
                    self.region,
                    connection,
                    consumer,
                    snapshot.container,
                    snapshot.cursor,
                )
            )
        else:
            connection.browse_ended(consumer)

    # -- what the admin API shows -------------------------------------------------------------

    def statistics(self) -> dict[str, Any]:
        usage = self.region.usage
        store = self.store.statistics()
        return {
            "name": self.config.broker_name,
            "id": self.broker_id,
            "version": __version__,
            "uptime_s": time.time() - self.started_at if self.started else 0.0,
            "connections": len(self.registry),
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
