"""The slave's end of pure master/slave replication: ``<masterConnector remoteURI=...>``.

The slave opens nothing of its own (no listener, no network connector); it connects to the
master's STOMP listener as a replication client, applies every batch of store operations the
master sends to its own store, and acknowledges each batch only once it is durable there, so
that the master receipts nothing the slave could lose.  ``run`` returns when the master is gone;
the broker then takes over (or shuts down, with ``shutdownOnMasterFailure``).  The replication
protocol itself is described in ``ferrymq.service.replication``.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable
from dataclasses import dataclass

from ferrymq.stomp import constants as h
from ferrymq.stomp.client import ClientSession
from ferrymq.stomp.events import Connected, ErrorEvent, MessageEvent
from ferrymq.store.base import (
    AddDestination,
    AddDurableSubscription,
    AddMessage,
    MessageStore,
    PurgeContainer,
    RemoveDestination,
    RemoveDurableSubscription,
    StoreOp,
)
from ferrymq.store.oplog import decode_ops
from ferrymq.util.heartbeat import HeartBeatWatchdog
from ferrymq.util.tls import CLIENT_SCHEMES, TlsError, cached_client_context, client_options
from ferrymq.util.uri import URI, parse_uri, redact_url

log = logging.getLogger(__name__)

RETRY_S = 1.0
"""How often a slave retries a master that is not up yet."""
HEART_BEAT_MS = 5000
"""Asked both ways on the replication link; the master drops a silent slave the same way."""
HEART_BEAT_GRACE = 1.5
"""Silence beyond the heart-beat interval after which the master counts as gone."""


class ReplicationError(Exception):
    """The master refused the slave (another slave is attached, wrong credentials)."""


@dataclass
class ReplicaStatistics:
    attached: bool = False
    batches: int = 0
    operations: int = 0
    snapshots: int = 0


def master_tls(uri: URI) -> ssl.SSLContext | None:
    """``ssl://`` (``stomp+ssl://``) masterConnector: TLS with the client URL options."""
    if uri.scheme.lower() not in CLIENT_SCHEMES:
        return None
    try:
        return cached_client_context(client_options(uri.query))
    except TlsError as exc:
        raise ReplicationError(f"masterConnector {redact_url(str(uri))}: {exc}") from None


class MasterConnector:
    def __init__(
        self,
        remote_uri: str,
        store: MessageStore,
        *,
        name: str,
        login: str | None = None,
        passcode: str | None = None,
        on_attached: Callable[[], None] | None = None,
    ) -> None:
        self.remote_uri = redact_url(remote_uri)
        """The master's URL as logs and the admin API show it: without its passwords."""
        uri = parse_uri(remote_uri)
        if not isinstance(uri, URI) or uri.host is None or uri.port is None:
            raise ReplicationError(f"masterConnector: {self.remote_uri!r} is not tcp://host:port")
        self._host, self._port = uri.host, uri.port
        self._tls = master_tls(uri)
        self.store = store
        self.name = name
        self._login = login
        self._passcode = passcode
        self._on_attached = on_attached
        self.statistics = ReplicaStatistics()
        self._opened = False
        self._known: set[StoreOp] = set()
        """What the slave's store holds that a reset must remove (containers, subscriptions,
        destinations), as the operations that would remove them."""

    async def open(self) -> None:
        """Open the slave's own store (``StoreError`` if it cannot be used) and note what it
        holds; ``run`` does this itself when it was not done before."""
        recovery = await self.store.start()
        self._opened = True
        self._known.update(PurgeContainer(c) for c in recovery.containers)
        self._known.update(
            RemoveDurableSubscription(r.client_id, r.subscription_name)
            for r in recovery.durable_subscriptions
        )
        self._known.update(RemoveDestination(d) for d in recovery.destinations)

    async def run(self) -> None:
        """Replicate until the master is gone; returns then (after having been attached)."""
        if not self._opened:
            await self.open()
        reader, writer = await self._connect()
        try:
            await self._replicate(reader, writer)
        finally:
            writer.close()
            self.statistics.attached = False

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        announced = False
        while True:
            try:
                return await asyncio.open_connection(self._host, self._port, ssl=self._tls)
            except OSError as exc:
                if not announced:
                    log.info(
                        "slave %s: master %s not reachable yet (%s); retrying",
                        self.name,
                        self.remote_uri,
                        exc,
                    )
                    announced = True
                await asyncio.sleep(RETRY_S)

    async def _replicate(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        session = ClientSession()
        writer.write(
            session.connect_frame(
                host=self._host,
                login=self._login,
                passcode=self._passcode,
                heart_beat=(HEART_BEAT_MS, HEART_BEAT_MS),
                headers={h.FERRYMQ_REPLICATION: "true", h.FERRYMQ_REPLICA: self.name},
            )
        )
        await writer.drain()
        # Heart-beats both ways: a master whose host vanished without closing the connection
        # (power loss, partition) is noticed within 1.5 intervals; a keep-alive goes out after
        # half an interval without a write.
        interval_s = HEART_BEAT_MS / 1000
        heart_beat = HeartBeatWatchdog(
            keep_alive_after_s=interval_s / 2,
            read_timeout_s=interval_s,
            grace=HEART_BEAT_GRACE,
            send_keep_alive=lambda: writer.write(b"\n"),
            on_peer_gone=lambda silent_s: self._master_silent(writer, silent_s),
        )
        heart_beat.start()
        try:
            await self._receive(session, reader, writer, heart_beat)
        finally:
            heart_beat.stop()

    def _master_silent(self, writer: asyncio.StreamWriter, silent_s: float) -> None:
        log.warning(
            "slave %s: the master %s went silent (no heart-beat for %.1f s)",
            self.name,
            self.remote_uri,
            silent_s,
        )
        writer.transport.abort()  # ends the pending read: the link is over

    async def _receive(
        self,
        session: ClientSession,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        heart_beat: HeartBeatWatchdog,
    ) -> None:
        while True:
            try:
                data = await reader.read(256 * 1024)
            except OSError as exc:  # a killed master often resets the connection
                log.warning("slave %s: lost the master %s: %s", self.name, self.remote_uri, exc)
                return
            if heart_beat.peer_gone:
                return
            if not data:
                log.warning(
                    "slave %s: the master %s closed the connection", self.name, self.remote_uri
                )
                return
            heart_beat.touch_read()
            with heart_beat.receiving():  # a slow store write is no silence of the master
                for event in session.receive_data(data):
                    match event:
                        case Connected():
                            self.statistics.attached = True
                            log.info("slave %s: replicating from %s", self.name, self.remote_uri)
                            if self._on_attached is not None:
                                self._on_attached()
                        case ErrorEvent():
                            raise ReplicationError(
                                f"master {self.remote_uri} refused the slave: {event.message}"
                            )
                        case MessageEvent() if event.subscription == h.REPLICATION_SUBSCRIPTION:
                            await self._apply(event)
                            writer.write(session.ack(event))
                            heart_beat.touch_wrote()
                            try:
                                await writer.drain()
                            except OSError as exc:
                                log.warning(
                                    "slave %s: lost the master %s: %s",
                                    self.name,
                                    self.remote_uri,
                                    exc,
                                )
                                return

    async def _apply(self, event: MessageEvent) -> None:
        ops = decode_ops(event.body)
        if event.headers.get(h.FERRYMQ_REPLICATION_RESET) == "true":
            self.statistics.snapshots += 1
            wipe = sorted(self._known, key=repr)
            self._known.clear()
            ops = [*wipe, *ops]
        for op in ops:
            self._remember(op)
        await self.store.write(ops)
        self.statistics.batches += 1
        self.statistics.operations += len(ops)
        if h.FERRYMQ_BATCH not in event.headers or h.ACK_HEADER not in event.headers:
            raise ReplicationError("the master sent a batch without its number")

    def _remember(self, op: StoreOp) -> None:
        match op:
            case AddMessage():
                self._known.add(PurgeContainer(op.container))
            case AddDestination():
                self._known.add(RemoveDestination(op.qualified_name))
            case AddDurableSubscription():
                record = op.record
                self._known.add(
                    RemoveDurableSubscription(record.client_id, record.subscription_name)
                )
            case _:
                pass
