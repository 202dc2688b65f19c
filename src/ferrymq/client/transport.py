"""The seam between a ``Connection`` and the network: one broker, or several.

A ``Connection`` (the API) keeps what the application sees: receipts it waits for,
subscriptions, transactions, the producer id. A ``Transport`` carries commands to a broker and
events back. ``TcpTransport`` is one socket to one broker; issue 3's failover, discovery,
masterslave and fanout transports own several and present the same interface, so the
``Connection`` does not change when the URL does (ActiveMQ's ``Transport`` chain, where
``FailoverTransport`` wraps the ``TcpTransport`` of whichever broker it is on).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Protocol

from ferrymq.client.commands import Command
from ferrymq.client.errors import ClientError, ConnectAttempt, ConnectionClosed
from ferrymq.stomp.events import Connected, ErrorEvent, MessageEvent, ReceiptEvent

log = logging.getLogger(__name__)

BrokerEvent = MessageEvent | ReceiptEvent | ErrorEvent
"""What a transport hands up after CONNECTED; heart-beats stay below it."""


class TransportListener(Protocol):
    """The side a transport reports to (the ``Connection``). Called on the event loop, in the
    order the broker sent; neither method may block."""

    def on_event(self, event: BrokerEvent) -> None: ...

    def on_closed(self, error: ConnectionClosed) -> None:
        """The transport is gone for good and will report nothing more (not called when the
        listener itself closed it)."""

    def on_transport_interrupted(self) -> None:
        """A fault-tolerant transport lost its broker and is reconnecting (ActiveMQ's
        ``transportInterupted``): called before any reconnect attempt, after ``generation``
        has moved on. What the broker delivered before is stale from now on."""

    def on_transport_resumed(self, connected: Connected) -> None:
        """Reconnected and the connection's state restored (``transportResumed``);
        ``connected`` is the new broker's CONNECTED."""

    def on_request_failed(self, receipt_id: str, error: ClientError) -> None:
        """The transport answers the command that asked for ``receipt_id`` itself, with a
        failure (a commit that a failover rolled back, for instance)."""


@dataclass(frozen=True, slots=True)
class TransportStatistics:
    frames_sent: int
    bytes_sent: int
    bytes_received: int
    heart_beats_sent: int
    heart_beats_received: int
    send_interval_ms: int
    """Negotiated: we send something at least this often (0: never)."""
    receive_timeout_ms: int
    """Negotiated: the broker sends something at least this often (0: not checked)."""
    remote_url: str = ""
    """The broker connected to now (the last one while reconnecting)."""
    failovers: int = 0
    """Times a fault-tolerant transport moved to a (possibly the same) broker after a loss or
    on request (priority, rebalance)."""
    reconnect_attempts: int = 0
    """Connect attempts after the first connection, failed or not."""
    connect_attempts: tuple[ConnectAttempt, ...] = ()
    """The most recent attempts, oldest first (a bounded history)."""
    updated_urls: tuple[str, ...] = ()
    """Brokers learnt from a broker (``ferrymq.cluster-brokers``) or ``updateURIsURL``."""
    standbys: int = 0
    """Standby connections held (``backup``, ``priorityBackup``)."""
    replayed_commands: int = 0
    """Commands written again to a new broker (subscriptions, sends, transactions)."""


Traffic = tuple[int, int, int, int, int]
"""Frames sent, bytes sent, bytes received, heart-beats sent, heart-beats received."""
NO_TRAFFIC: Traffic = (0, 0, 0, 0, 0)


def unexpected_end(url: str, task: asyncio.Task[None]) -> ConnectionClosed:
    """The error that closes a connection whose transport's supervisor task ended although
    nobody closed it: ended, it would leave the application waiting for a broker that nobody
    looks for any more, so the transport fails instead (its next call raises, a blocked
    ``get()`` wakes). Logged here, with the cause."""
    level = logging.ERROR
    if task.cancelled():
        # Most often the event loop ending (asyncio.run cancels what is left) with the
        # connection still open: worth a word, not an alarm.
        reason = "it was cancelled, but not by a close"
        level = logging.WARNING
    elif (error := task.exception()) is not None:
        reason = repr(error)
    else:
        reason = "it returned"
    log.log(level, "%s: the reconnect loop ended unexpectedly: %s", url, reason)
    return ConnectionClosed(f"{url}: the reconnect loop ended unexpectedly ({reason})")


def add_traffic(totals: Traffic, stats: TransportStatistics) -> Traffic:
    """``totals`` plus one connection's counts: what a transport over several connections
    (failover's successive links, fanout's members) reports as its own."""
    return (
        totals[0] + stats.frames_sent,
        totals[1] + stats.bytes_sent,
        totals[2] + stats.bytes_received,
        totals[3] + stats.heart_beats_sent,
        totals[4] + stats.heart_beats_received,
    )


def combined_statistics(
    totals: Traffic, current: TransportStatistics | None, **fields: Any
) -> TransportStatistics:
    """Statistics of a transport over several connections: the summed ``totals``, the
    negotiated intervals of the ``current`` connection, and its own ``fields``."""
    frames, bytes_sent, bytes_received, beats_sent, beats_received = totals
    return TransportStatistics(
        frames_sent=frames,
        bytes_sent=bytes_sent,
        bytes_received=bytes_received,
        heart_beats_sent=beats_sent,
        heart_beats_received=beats_received,
        send_interval_ms=current.send_interval_ms if current is not None else 0,
        receive_timeout_ms=current.receive_timeout_ms if current is not None else 0,
        **fields,
    )


class Transport(Protocol):
    """Commands down, events up. Every task a transport starts is its own, cancelled and
    awaited by ``close``."""

    @property
    def remote_url(self) -> str:
        """The broker this transport is connected to now, as a URL."""
        ...

    @property
    def generation(self) -> int:
        """How many times the transport lost its broker; messages carry the generation they
        arrived on, so an ack from before a failover is known to be stale."""
        ...

    async def open(self, listener: TransportListener) -> Connected:
        """Connect and exchange CONNECT/CONNECTED; raises ``ConnectFailedError`` or the
        broker's ``BrokerErrorFrame``."""
        ...

    async def write(self, command: Command) -> None:
        """Queue ``command`` for the broker; waits while the outgoing buffer is full.

        Returning means queued, not delivered: what needs confirmation asks for a receipt.
        Raises ``ConnectionClosed`` once closed and ``UsageError`` for what the negotiated
        version cannot express.
        """
        ...

    def abort(self) -> None:
        """Start closing now, dropping anything unsent; safe to call from ``on_event``."""
        ...

    async def close(self) -> None:
        """Abort if needed, and wait until every task and the socket are gone. Idempotent."""
        ...

    def statistics(self) -> TransportStatistics: ...
