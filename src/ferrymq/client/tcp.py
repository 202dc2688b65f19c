"""One socket to one broker: ``tcp://host:port`` and ``stomp://host:port``.

Tasks run under one ``TaskGroup`` that the transport owns: the reader (bytes in, events up),
the writer (everything queued during a loop turn goes out in one ``writelines``), and, when a
broker heart-beat is negotiated, one that fails once the heart-beat watchdog
(``ferrymq.util.heartbeat``; its timer queues the keep-alives) declares the broker gone. The
first to fail ends all of them and the transport reports ``on_closed`` once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import replace
from typing import cast

from ferrymq.client import sockets
from ferrymq.client.commands import Command, ConnectionInfo, encode_command
from ferrymq.client.errors import (
    BrokerErrorFrame,
    ClientError,
    ConnectFailedError,
    ConnectionClosed,
    UsageError,
)
from ferrymq.client.tcp_options import TcpOptions, tcp_options
from ferrymq.client.transport import TransportListener, TransportStatistics
from ferrymq.stomp.client import ClientSession
from ferrymq.stomp.encoder import HEARTBEAT_BYTES
from ferrymq.stomp.errors import LocalProtocolError, RemoteProtocolError
from ferrymq.stomp.events import ClientEvent, Connected, ErrorEvent
from ferrymq.stomp.frame import HeartBeat
from ferrymq.stomp.negotiation import negotiate_heart_beat
from ferrymq.util.heartbeat import HeartBeatWatchdog
from ferrymq.util.uri import URI

log = logging.getLogger(__name__)

DEFAULT_PORT = 61613
"""STOMP's usual port (DESIGN.md), used when a URL names none."""
READ_BYTES = 256 * 1024
WRITE_HIGH_WATER_BYTES = 1024 * 1024
"""``write`` waits while more than this is queued and not yet taken by the socket."""
HEART_BEAT_GRACE = 1.5
"""Silence allowed beyond the broker's heart-beat interval before the connection counts as
dead (stomp.py uses the same factor; ActiveMQ's broker side calls it hbGracePeriodMultiplier)."""


class TcpTransport:
    def __init__(self, uri: URI, info: ConnectionInfo, options: TcpOptions | None = None) -> None:
        self._host = uri.host or ""
        self._port = uri.port if uri.port is not None else DEFAULT_PORT
        self._url = f"{uri.scheme}://{_host_text(self._host)}:{self._port}"
        self._options = options if options is not None else tcp_options(uri)
        if self._options.max_inactivity_ms is not None:
            beat = self._options.max_inactivity_ms
            info = replace(info, heart_beat=(beat, beat))
        self._info = info
        self._session = ClientSession()
        self._listener: TransportListener | None = None
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._runner: asyncio.Task[None] | None = None
        self._early: list[ClientEvent] = []
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._wake = asyncio.Event()
        self._writable = asyncio.Event()
        self._writable.set()
        self._closed: ConnectionClosed | None = None
        self._aborted = False
        """``abort`` was called: the end of the connection is its owner's doing."""
        self._send_interval_ms = 0
        self._receive_timeout_ms = 0
        self._heart_beat = self._watchdog(0, 0)
        self._broker_silent: asyncio.Future[None] | None = None
        self._frames_sent = self._bytes_sent = self._bytes_received = 0
        self._beats_sent = self._beats_received = 0

    @property
    def remote_url(self) -> str:
        return self._url

    @property
    def generation(self) -> int:
        """One socket, one generation: messages can never outlive it here."""
        return 0

    @property
    def options(self) -> TcpOptions:
        return self._options

    # ---- opening ----

    async def preconnect(self) -> None:
        """Open the TCP connection only; ``open`` then sends CONNECT on it. A failover
        transport's standby for a connection with a client-id, which the broker allows only
        once: the broker closes such a socket after its connect timeout (30 s)."""
        if self._writer is not None:
            raise UsageError("already connected")
        self._reader, self._writer = await sockets.preconnect(
            self._url, self._host, self._port, self._options, self._info.connect_timeout_s
        )

    async def _connect_socket(self) -> None:
        self._reader, self._writer = await sockets.open_socket(
            self._host, self._port, self._options
        )

    async def open(self, listener: TransportListener) -> Connected:
        if self._listener is not None:
            raise UsageError("a transport opens once")
        self._listener = listener
        info = self._info
        stage = "the TCP connection"
        try:
            async with asyncio.timeout(info.connect_timeout_s):
                if self._writer is None:
                    await self._connect_socket()
                writer = self._writer
                assert writer is not None
                stage = "CONNECTED from the broker"
                writer.write(
                    self._session.connect_frame(
                        host=self._host,
                        login=info.login,
                        passcode=info.passcode,
                        client_id=info.client_id,
                        heart_beat=info.heart_beat,
                        accept_version=info.versions,
                        headers=info.headers,
                    )
                )
                connected = await self._handshake()
        except TimeoutError:
            self._drop_socket()
            raise ConnectFailedError(f"timed out waiting for {stage}", url=self._url) from None
        except OSError as exc:
            self._drop_socket()
            reason = exc.strerror or str(exc) or type(exc).__name__
            raise ConnectFailedError(reason, url=self._url) from exc
        except BaseException:
            self._drop_socket()
            raise
        timing = negotiate_heart_beat(connected.heart_beat, info.heart_beat)
        self._send_interval_ms = timing.send_interval_ms
        self._receive_timeout_ms = timing.receive_timeout_ms
        self._heart_beat = self._watchdog(self._send_interval_ms, self._receive_timeout_ms)
        loop = asyncio.get_running_loop()
        self._broker_silent = loop.create_future()
        self._heart_beat.start()
        self._runner = loop.create_task(self._run(), name=f"ferrymq-client {self._url}")
        return connected

    async def _handshake(self) -> Connected:
        assert self._reader is not None
        while True:
            data = await self._reader.read(READ_BYTES)
            if not data:
                raise ConnectFailedError(
                    "the broker closed the connection before CONNECTED", url=self._url
                )
            self._bytes_received += len(data)
            try:
                events = self._session.receive_data(data)
            except RemoteProtocolError as exc:
                raise ConnectFailedError(
                    f"protocol error from the broker: {exc}", url=self._url
                ) from None
            for index, event in enumerate(events):
                if isinstance(event, Connected):
                    self._early = events[index + 1 :]
                    return event
                if isinstance(event, ErrorEvent):
                    raise BrokerErrorFrame.from_event(event)

    def _drop_socket(self) -> None:
        if self._writer is not None:
            self._writer.transport.abort()

    # ---- running ----

    async def _run(self) -> None:
        error: ConnectionClosed | None = None
        try:
            async with asyncio.TaskGroup() as tasks:
                tasks.create_task(self._read_loop())
                tasks.create_task(self._write_loop())
                if self._receive_timeout_ms:
                    tasks.create_task(self._until_broker_silent())
        except* Exception as group:
            error = _as_closed(group.exceptions[0])
        finally:
            self._heart_beat.stop()
            self._mark_closed(error or ConnectionClosed("connection closed"))
            await self._close_socket()
        if error is not None and self._listener is not None and not self._aborted:
            self._listener.on_closed(error)

    async def _read_loop(self) -> None:
        reader = self._reader
        assert reader is not None
        early, self._early = self._early, []
        self._dispatch(early)
        receive = self._session.receive_data
        heart_beat = self._heart_beat
        while True:
            data = await reader.read(READ_BYTES)
            if not data:
                raise ConnectionClosed("the broker closed the connection")
            heart_beat.touch_read()
            self._bytes_received += len(data)
            try:
                events = receive(data)
            except RemoteProtocolError as exc:
                self._dispatch(cast(list[ClientEvent], list(exc.events)))
                raise ConnectionClosed(f"protocol error from the broker: {exc}") from None
            self._dispatch(events)

    def _dispatch(self, events: list[ClientEvent]) -> None:
        listener = self._listener
        assert listener is not None
        for event in events:
            if isinstance(event, HeartBeat):
                self._beats_received += 1
            elif not isinstance(event, Connected):
                listener.on_event(event)

    async def _write_loop(self) -> None:
        writer = self._writer
        heart_beat = self._heart_beat
        assert writer is not None
        wake = self._wake
        while True:
            await wake.wait()
            wake.clear()
            chunks, self._pending = self._pending, []
            self._bytes_sent += self._pending_bytes
            self._pending_bytes = 0
            writer.writelines(chunks)
            heart_beat.touch_wrote()
            await writer.drain()
            if self._pending_bytes <= WRITE_HIGH_WATER_BYTES:
                self._writable.set()

    def _watchdog(self, send_interval_ms: int, receive_timeout_ms: int) -> HeartBeatWatchdog:
        # An EOL whenever nothing was written for half the interval, so the broker, which checks
        # once per interval, always sees something (STOMP 1.2 "Heart-beating").
        return HeartBeatWatchdog(
            keep_alive_after_s=send_interval_ms / 1000 / 2,
            read_timeout_s=receive_timeout_ms / 1000,
            grace=HEART_BEAT_GRACE,
            send_keep_alive=self._send_heart_beat,
            on_peer_gone=self._broker_went_silent,
        )

    def _send_heart_beat(self) -> None:
        if not self._pending:  # else the writer is about to write anyway
            self._enqueue(HEARTBEAT_BYTES)
            self._beats_sent += 1

    def _broker_went_silent(self, silent_s: float) -> None:
        reason = (
            f"nothing from the broker for {silent_s * 1000:.0f} ms "
            f"(heart-beat every {self._receive_timeout_ms} ms negotiated): the connection is dead"
        )
        if self._broker_silent is not None and not self._broker_silent.done():
            self._broker_silent.set_exception(ConnectionClosed(reason))

    async def _until_broker_silent(self) -> None:
        """Fails, ending the others, once the watchdog declares the broker gone."""
        assert self._broker_silent is not None
        await self._broker_silent

    # ---- writing ----

    async def write(self, command: Command) -> None:
        if self._closed is not None:
            raise self._closed
        try:
            data = encode_command(self._session, command)
        except LocalProtocolError as exc:
            raise UsageError(f"{exc} (STOMP {self._session.version})") from None
        self._enqueue(data)
        self._frames_sent += 1
        while self._pending_bytes > WRITE_HIGH_WATER_BYTES:
            self._writable.clear()
            await self._writable.wait()
            if self._closed is not None:
                raise self._closed

    def _enqueue(self, data: bytes) -> None:
        self._pending.append(data)
        self._pending_bytes += len(data)
        self._wake.set()

    # ---- closing ----

    def _mark_closed(self, error: ConnectionClosed) -> None:
        if self._closed is None:
            self._closed = error
        self._writable.set()

    def abort(self) -> None:
        # On 3.11 a reader failing in the same loop turn wins over the cancel in the runner's
        # TaskGroup; the owner that aborted must not hear of that as a lost connection.
        self._aborted = True
        self._heart_beat.stop()
        self._mark_closed(ConnectionClosed("connection closed by the application"))
        if self._runner is not None:
            self._runner.cancel()
        else:
            self._drop_socket()

    async def close(self) -> None:
        self.abort()
        if self._runner is not None:
            await asyncio.wait([self._runner])
            if self._writer is not None and not self._writer.transport.is_closing():
                # A runner cancelled before its first step (a close right after open, as a
                # network bridge that finds a loop does) never ran its ``finally``.
                self._writer.transport.abort()
        else:
            await self._close_socket()

    async def _close_socket(self) -> None:
        writer = self._writer
        if writer is None:
            return
        writer.transport.abort()
        with contextlib.suppress(OSError, RuntimeError):  # the reason was already reported
            await writer.wait_closed()

    def statistics(self) -> TransportStatistics:
        return TransportStatistics(
            frames_sent=self._frames_sent,
            bytes_sent=self._bytes_sent,
            bytes_received=self._bytes_received,
            heart_beats_sent=self._beats_sent,
            heart_beats_received=self._beats_received,
            send_interval_ms=self._send_interval_ms,
            receive_timeout_ms=self._receive_timeout_ms,
        )


def _host_text(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _as_closed(exc: BaseException) -> ConnectionClosed:
    if isinstance(exc, ConnectionClosed):
        return exc
    if isinstance(exc, OSError):
        reason = exc.strerror or str(exc) or type(exc).__name__
        closed = ConnectionClosed(f"connection lost: {reason}")
    elif isinstance(exc, ClientError):
        closed = ConnectionClosed(str(exc))
    else:
        log.error("client transport failed", exc_info=exc)
        closed = ConnectionClosed(f"client transport failed: {exc!r}")
    closed.__cause__ = exc
    return closed
