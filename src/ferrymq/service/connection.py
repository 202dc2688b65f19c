"""One client connection, protocol-neutral (ActiveMQ's TransportConnection).

Whatever the wire protocol, a connection needs the same things from the broker: an ordered
outbox whose frames wait on the store commits they depend on (``service.outbox``), producer flow
control (stop reading while the broker has no room, resume or fail later), an idle watchdog, a
deadline for the protocol's opening handshake, the registry the admin API reads, and an orderly
end (its consumers, transactions and temporary destinations go, its unacknowledged messages come
back).  The protocol itself (bytes to core commands, deliveries to bytes) is the
``ProtocolConverter`` an adapter gives it.

Its life is an explicit phase (``Phase``), not a set of flags: AWAITING_OPEN until the
protocol's handshake, OPEN (STALLED while flow control holds requests back), ENDING once it
handles nothing more but still has frames to flush, CLOSED once the socket is gone.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ferrymq.core.consumer import AckMode, Consumer
from ferrymq.core.effects import Delivery
from ferrymq.core.errors import BrokerError
from ferrymq.core.message import Message
from ferrymq.core.region import RegionBroker
from ferrymq.service.adapter import ProtocolConverter
from ferrymq.service.outbox import Outbox
from ferrymq.service.registry import ConnectionRegistry
from ferrymq.transport.connection import TransportConnection
from ferrymq.transport.inactivity import InactivityMonitor

log = logging.getLogger(__name__)

OPEN_TIMEOUT_S = 30.0
"""A socket whose protocol handshake does not come in this time is closed (ActiveMQ's
connectionAttemptTimeout)."""


class Phase(enum.Enum):
    AWAITING_OPEN = "awaiting open"
    """Accepted; the protocol's handshake (STOMP CONNECT, AMQP open) has not come yet."""
    OPENING = "opening"
    """The handshake came; its login is checked off the loop, later requests wait unread."""
    OPEN = "open"
    STALLED = "stalled"
    """Open, with requests held back by producer flow control; the socket is not read."""
    ENDING = "ending"
    """No request is handled any more; queued frames still leave, then the socket closes."""
    CLOSED = "closed"
    """The socket is gone (or going): nothing more is written."""


# Compared by identity on the hot path (hashing an Enum member runs Python code).
_ENDING = Phase.ENDING
_CLOSED = Phase.CLOSED
_AUTO = AckMode.AUTO
_WAITING = (Phase.STALLED, Phase.OPENING)


class ConnectionHost(Protocol):
    """What a connection needs of the service that accepted it."""

    @property
    def region(self) -> RegionBroker: ...

    @property
    def registry(self) -> ConnectionRegistry[BrokerConnection]: ...

    @property
    def send_fail_after_ms(self) -> int | None: ...

    def commit_barrier(self) -> asyncio.Future[None] | None: ...

    def last_write(self) -> asyncio.Future[None] | None: ...

    def tick_clock(self) -> None: ...

    def process(self) -> None: ...


@dataclass(frozen=True, slots=True)
class BridgePeer:
    broker_id: str
    broker_name: str


class BrokerConnection:
    """The service's side of one accepted connection; ``converter`` speaks its protocol."""

    converter: ProtocolConverter
    _render: Callable[[Delivery], bytes]

    def __init__(self, host: ConnectionHost, connector: str, connection_id: str) -> None:
        self.host = host
        self.region = host.region
        self.connector = connector
        self.connection_id = connection_id
        self.transport: TransportConnection | None = None
        self.phase = Phase.AWAITING_OPEN
        self.network_bridge: str | None = None
        """Set (the connector's name) when another broker's network bridge opened this
        connection (ActiveMQ's ``isNetworkConnection``)."""
        self.duplex_peer: BridgePeer | None = None
        """The broker whose duplex bridge this connection is: it carries both ways, so this
        broker lists it among its own bridges."""
        self.outbox = Outbox(self)
        registry = host.registry
        self._wrote = registry.wrote
        self._auto_acked = registry.auto_acked
        self._close_when_flushed = False
        self._held_auto: list[Delivery] = []
        self._stalled: list[object] = []
        self._stall_timer: asyncio.TimerHandle | None = None
        self._monitor: InactivityMonitor | None = None
        self._open_timer: asyncio.TimerHandle | None = None

    def attach(self, converter: ProtocolConverter) -> None:
        """The adapter's converter for this connection (set once, before the socket is read)."""
        self.converter = converter
        self._render = converter.render

    @property
    def connected(self) -> bool:
        """The protocol's handshake completed and requests are handled (the admin API's
        "connected"; a cluster update goes only to such a connection)."""
        return self.phase is Phase.OPEN or self.phase is Phase.STALLED

    @property
    def version(self) -> str | None:
        """The protocol version agreed at the handshake."""
        return self.converter.version if self.connected else None

    @property
    def handling(self) -> bool:
        """Requests are still handled (not ENDING, not CLOSED)."""
        return self.phase in (Phase.AWAITING_OPEN, Phase.OPENING, Phase.OPEN, Phase.STALLED)

    @property
    def closed(self) -> bool:
        return self.phase is Phase.CLOSED

    # -- transport callbacks ------------------------------------------------------------------

    def connection_made(self, connection: TransportConnection) -> None:
        self.transport = connection
        self.host.registry.register(self)
        log.debug(
            "connection %s accepted from %s by %s",
            self.connection_id,
            connection.remote_address or "this process (vm://)",
            self.connector,
        )
        self._open_timer = asyncio.get_running_loop().call_later(
            OPEN_TIMEOUT_S, self._open_timed_out
        )

    def data_received(self, data: bytes) -> None:
        if self.handling:
            self.converter.receive(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if log.isEnabledFor(logging.DEBUG):
            remote = self.transport.remote_address if self.transport is not None else None
            why = f": {exc}" if exc is not None else ""
            log.debug("connection %s from %s closed%s", self.connection_id, remote, why)
        self._teardown()

    def writing_paused(self) -> None:
        pass

    def writing_resumed(self) -> None:
        if self._held_auto:
            held, self._held_auto = self._held_auto, []
            for delivery in held:
                self._auto_acked(delivery)
            self.host.process()

    # -- requests -----------------------------------------------------------------------------

    def run(self, work: Sequence[object]) -> None:
        """Handle decoded requests in order, then carry out what the core decided."""
        if not work:
            return
        if self.phase in _WAITING:
            self._stalled.extend(work)
            return
        self._run(work)

    def _run(self, work: Sequence[object]) -> None:
        host = self.host
        converter = self.converter
        host.tick_clock()
        for index, item in enumerate(work):
            phase = self.phase
            if phase is _ENDING or phase is _CLOSED:
                break
            try:
                if converter.handle(item):
                    self._stall(list(work[index:]))
                    break
            except BrokerError as exc:
                host.process()
                self.refuse(exc, item)
                if exc.fatal:
                    return
        host.process()

    def refuse(self, error: BrokerError, work: object | None) -> None:
        """Tell the client a request failed; a fatal failure ends the connection after it."""
        frame = self.converter.refusal(error, work)
        self.fail(frame, error.message, fatal=error.fatal)

    def fail(self, frame: bytes, reason: str, *, fatal: bool) -> None:
        """Queue ``frame``, which reports a failure; a fatal one ends the connection after it."""
        log.info(
            "connection %s: ERROR %s%s", self.connection_id, reason, "" if fatal else " (kept open)"
        )
        if not fatal:
            self.outbox.put(frame, None)
            return
        # Requests handled before the fatal one keep their answers: their receipts still go
        # out (after their commit), then the failure, then the socket closes.
        self.end()
        self.outbox.put(frame, None)
        self.close_when_flushed()

    def open(self, *, read_timeout_ms: int, write_interval_ms: int) -> None:
        """The protocol's handshake completed: watch the peer's heart-beats from now on."""
        if self._open_timer is not None:
            self._open_timer.cancel()
            self._open_timer = None
        if self.phase is Phase.AWAITING_OPEN:
            self.phase = Phase.OPEN
        transport = self.transport
        if transport is not None and (read_timeout_ms or write_interval_ms):
            self._monitor = InactivityMonitor(
                transport,
                read_timeout_ms=read_timeout_ms,
                write_interval_ms=write_interval_ms,
                on_read_timeout=self._heart_beat_missed,
                send_keepalive=self._send_keepalive,
            )
            self._monitor.start()

    def confirm(self, frame: bytes | None, *, needs_commit: bool) -> None:
        """Queue a confirmation; one that depends on the store leaves once the write that the
        end of this read makes is durable (every confirmation of a read shares that write)."""
        if frame is None:
            return
        self.outbox.put(frame, self.host.commit_barrier() if needs_commit else None)

    def confirm_after_all(self, frame: bytes) -> None:
        """Queue a confirmation that waits for every store write so far (a DISCONNECT's
        receipt: everything the client sent before it is durable)."""
        self.outbox.put(frame, self.host.last_write())

    def send(self, frame: bytes, wait: asyncio.Future[None] | None = None) -> None:
        """Queue a frame of the protocol's own (a replication batch, a cluster update)."""
        self.outbox.put(frame, wait)
        if self.transport is not None:
            self._wrote(self.transport)  # flushed by the ``process`` under way

    # -- producer flow control ----------------------------------------------------------------

    def hold(self, login: asyncio.Future[Any]) -> None:
        """Handle nothing until the handshake's ``login`` is known, then the handshake again
        (its converter now has the answer) and the requests that waited (read no more)."""
        self.phase = Phase.OPENING
        if self.transport is not None:
            self.transport.pause_reading()
        login.add_done_callback(self._login_known)

    def _login_known(self, login: asyncio.Future[Any]) -> None:
        if self.phase is not Phase.OPENING:
            return
        self.phase = Phase.AWAITING_OPEN
        if login.cancelled():  # the broker is stopping
            self.close("the broker stopped before the login was checked")
        else:
            self.resume()

    def _stall(self, work: list[object]) -> None:
        """Stop reading until the broker has room for the request at the head of ``work``."""
        if self.phase is Phase.OPENING:
            self._stalled = work  # ``hold`` waits for the login, not for room
            return
        self.phase = Phase.STALLED
        self._stalled = work
        if self.transport is not None:
            self.transport.pause_reading()
        self.host.registry.wait_for_space(self)
        timeout_ms = self.host.send_fail_after_ms
        if timeout_ms is not None:
            self._stall_timer = asyncio.get_running_loop().call_later(
                timeout_ms / 1000, self._stall_timed_out
            )

    def _stall_timed_out(self) -> None:
        """``sendFailIfNoSpaceAfterTimeout``: the blocked request fails, the rest carries on."""
        self._stall_timer = None
        if self.phase is not Phase.STALLED or not self._stalled:
            return
        blocked = self._stalled.pop(0)
        self.host.registry.stop_waiting(self)
        self.refuse(
            BrokerError(
                "Usage Manager is still full after sendFailIfNoSpaceAfterTimeout; the message "
                "was not accepted",
                fatal=False,
            ),
            blocked,
        )
        self.resume()

    def resume(self) -> None:
        """Flow control lifted: handle the requests that were waiting, then read again."""
        if self._stall_timer is not None:
            self._stall_timer.cancel()
            self._stall_timer = None
        work, self._stalled = self._stalled, []
        if self.phase is Phase.STALLED:
            self.phase = Phase.OPEN
        if self.transport is not None:
            self.transport.resume_reading()
        if work and self.handling:
            self._run(work)

    # -- deliveries and the outbox ------------------------------------------------------------

    def deliver(self, delivery: Delivery, wait: asyncio.Future[None] | None) -> None:
        phase = self.phase
        if phase is _ENDING or phase is _CLOSED:
            return  # an ending connection writes no more messages: they were released
        auto = delivery if delivery.consumer.ack_mode is _AUTO else None
        self.outbox.put(self._render(delivery), wait, auto, message=True)

    def deliver_browsed(self, consumer: Consumer, message: Message) -> None:
        if self.phase is not Phase.ENDING:
            self.outbox.put(self.converter.render_browsed(consumer, message), None, message=True)

    def browse_ended(self, consumer: Consumer) -> None:
        if self.phase is not Phase.ENDING:
            self.outbox.put(self.converter.render_browse_end(consumer), None, message=True)

    def write_frame(self, data: bytes, auto: Delivery | None) -> None:
        transport = self.transport
        if transport is None or self.phase is _CLOSED:
            return
        transport.write(data)
        self._wrote(transport)
        if auto is not None:
            if transport.write_paused:
                self._held_auto.append(auto)
            else:
                self._auto_acked(auto)

    def store_failed(self) -> None:
        # The store failed (its lock was lost, or the disk): the broker stops serving. What
        # depended on the write is not confirmed, and the connection closes without an ERROR,
        # as ActiveMQ's does when it stops its connectors: a failover client takes that for the
        # loss of the broker and replays what it had in flight on the next one, where an ERROR
        # would be the application's failure; a plain client sees the broker go away.
        self.close("the broker's store failed; the operation was not completed")

    def outbox_drained(self) -> None:
        self._maybe_close()

    def commit_settled(self) -> None:
        self.host.process()

    def close_when_flushed(self) -> None:
        self._close_when_flushed = True
        self._maybe_close()

    def _maybe_close(self) -> None:
        if self._close_when_flushed and not self.outbox and self.transport is not None:
            self.transport.close()

    # -- the end ------------------------------------------------------------------------------

    def _heart_beat_missed(self) -> None:
        log.info(
            "connection %s: no heart-beat from the client in time; closing", self.connection_id
        )
        if self.transport is not None:
            self.transport.abort()
        self._teardown()

    def _send_keepalive(self) -> None:
        if self.transport is not None and not self.outbox:
            self.transport.write(self.converter.keepalive())

    def _open_timed_out(self) -> None:
        self._open_timer = None
        if self.phase in (Phase.AWAITING_OPEN, Phase.OPENING) and self.transport is not None:
            log.info(
                "connection %s: no CONNECT (the protocol's opening) within %.0f s; closing",
                self.connection_id,
                OPEN_TIMEOUT_S,
            )
            self.transport.abort()
            self._teardown()

    def end(self) -> None:
        """Handle no more requests and make the broker forget this connection: its consumers,
        transactions and temporary destinations go, its unacknowledged messages go back."""
        if not self.handling:
            return
        self.phase = Phase.ENDING
        self.converter.session_ended()
        if self._monitor is not None:
            self._monitor.stop()
        if self._open_timer is not None:
            self._open_timer.cancel()
        self._held_auto.clear()
        self._stalled.clear()
        if self._stall_timer is not None:
            self._stall_timer.cancel()
        self.host.registry.unregister(self)
        self.region.remove_connection(self.connection_id)
        self.outbox.drop_messages()
        self.host.process()

    def _teardown(self) -> None:
        """The socket is gone: forget everything, write nothing more."""
        self.end()
        if self.phase is Phase.CLOSED:
            return
        self.phase = Phase.CLOSED
        self.outbox.clear()

    def close(self, reason: str) -> None:
        """The broker closes this connection (shutdown, a store failure)."""
        log.info("connection %s: closing: %s", self.connection_id, reason)
        if self.transport is not None:
            self.transport.close()
        self._teardown()
