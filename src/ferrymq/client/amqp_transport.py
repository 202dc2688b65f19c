"""``amqp://host:port`` (and ``amqps://``, ``amqp+ssl://``): the client over AMQP 1.0.

One socket, one ``ClientEngine`` (python-qpid-proton's engine, sans-IO) on the event loop, and
the ``AmqpSession`` that translates the client's STOMP-shaped commands and events. The transport
owns one reader task and, when either side asked for an idle timeout, one timer that calls the
engine's ``tick`` (it sends the empty frames that keep the broker's idle timeout happy and closes
the connection when the broker's go missing). The connection's heart-beat asks for the idle
timeout: ``heart_beat=(cx, cy)`` advertises ``cy`` ms (AMQP 1.0 section 2.4.5, "Idle Timeout Of
A Connection"; proton advertises half the timeout it enforces, so the connection is declared dead
after ``2 * cy`` ms of silence, where STOMP allows 1.5 times).

Authentication is SASL: PLAIN with the connection's login and passcode, else ANONYMOUS; the
client id is the AMQP container id, which ActiveMQ (and FerryMQ) take as the JMS client id.
The URL takes the ``tcp://`` options (``connectionTimeout``, ``keepAlive``, ``tcpNoDelay``,
``wireFormat.maxInactivityDuration``) and, over TLS, the ``ssl://`` ones (``client.tls``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Callable
from dataclasses import replace

from ferrymq.amqp.client import ClientEngine, Closed, EngineEvent, Opened
from ferrymq.client import sockets
from ferrymq.client.amqp_session import AmqpSession
from ferrymq.client.commands import (
    Abort,
    Begin,
    Command,
    Commit,
    ConnectionInfo,
    Disconnect,
    Send,
)
from ferrymq.client.errors import (
    BrokerErrorFrame,
    BrokerURLError,
    ConnectFailedError,
    ConnectionClosed,
    UsageError,
)
from ferrymq.client.tcp_options import TcpOptions, tcp_options
from ferrymq.client.transport import BrokerEvent, TransportListener, TransportStatistics
from ferrymq.stomp.events import Connected
from ferrymq.util.uri import URI

__all__ = ["AMQP_SCHEMES", "AmqpTransport", "amqp_options"]

log = logging.getLogger(__name__)

AMQP_SCHEMES = frozenset({"amqp", "amqps", "amqp+ssl"})
TLS_SCHEMES = frozenset({"amqps", "amqp+ssl"})
DEFAULT_PORT = 5672
DEFAULT_TLS_PORT = 5671
"""IANA's AMQP ports, which ActiveMQ's amqp:// and amqp+ssl:// connectors use too."""
READ_BYTES = 256 * 1024
WRITE_HIGH_WATER_BYTES = 1024 * 1024
MAX_IN_FLIGHT = 5000
"""Unsettled sends allowed before ``write`` waits: proton would queue beyond the broker's
credit without bound."""
FLUSH_SENDS = 64
"""Sends written to the socket together: proton frames whatever is pending in one call, and a
call per message costs more than the message (a producer that does not yield still writes
every ``FLUSH_SENDS``; the rest goes when the loop next runs)."""


def amqp_options(uri: URI) -> TcpOptions:
    """The options of an AMQP URL: those of ``tcp://`` (``ssl://`` for the TLS schemes)."""
    tls = uri.scheme.lower() in TLS_SCHEMES
    raw = uri.raw or str(uri)
    try:
        return tcp_options(replace(uri, scheme="ssl" if tls else "tcp", raw=raw))
    except BrokerURLError as exc:
        message = exc.message.replace("for ssl:", f"for {uri.scheme}:")
        raise BrokerURLError(message.replace("for tcp:", f"for {uri.scheme}:"), url=raw) from None


class AmqpTransport:
    def __init__(self, uri: URI, info: ConnectionInfo, options: TcpOptions | None = None) -> None:
        tls = uri.scheme.lower() in TLS_SCHEMES
        self._host = uri.host or ""
        default_port = DEFAULT_TLS_PORT if tls else DEFAULT_PORT
        self._port = uri.port if uri.port is not None else default_port
        host = f"[{self._host}]" if ":" in self._host else self._host
        self._url = f"{uri.scheme}://{host}:{self._port}"
        self._options = options if options is not None else amqp_options(uri)
        if self._options.max_inactivity_ms is not None:
            beat = self._options.max_inactivity_ms
            info = replace(info, heart_beat=(beat, beat))
        self._info = info
        self._engine = ClientEngine(
            hostname=self._host,
            # The container id is the client id (ActiveMQ's mapping); without one, unique.
            container_id=info.client_id or f"ferrymq-{secrets.token_hex(8)}",
            user=info.login,
            password=info.passcode,
            idle_timeout_s=2 * info.heart_beat[1] / 1000,
        )
        self._session = AmqpSession(self._engine)
        self._listener: TransportListener | None = None
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._runner: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._early: list[EngineEvent] = []
        self._closed: ConnectionClosed | None = None
        self._broker_error: str | None = None
        self._aborted = False
        self._settled = asyncio.Event()
        """Set when fewer than ``MAX_IN_FLIGHT`` sends are unsettled."""
        self._progress = asyncio.Event()
        """Set whenever the broker said something (outcomes, for ``_until_settled``)."""
        self._frames_sent = self._bytes_sent = self._bytes_received = 0
        self._unflushed = 0
        """Sends not yet taken from the engine (``_flush_soon``)."""
        self._flush_handle: asyncio.Handle | None = None

    @property
    def remote_url(self) -> str:
        return self._url

    @property
    def generation(self) -> int:
        return 0

    @property
    def options(self) -> TcpOptions:
        return self._options

    # ---- opening ----

    async def preconnect(self) -> None:
        """Open the socket only (a failover standby); ``open`` then speaks AMQP on it."""
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
        stage = "the TCP connection"
        try:
            async with asyncio.timeout(self._info.connect_timeout_s):
                if self._writer is None:
                    await self._connect_socket()
                stage = "the broker's AMQP open"
                self._engine.open()
                self._flush()
                opened = await self._handshake()
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
        self._tick()
        loop = asyncio.get_running_loop()
        self._runner = loop.create_task(self._run(), name=f"ferrymq-amqp-client {self._url}")
        return self._connected(opened)

    async def _handshake(self) -> Opened:
        """Until the broker's open. A close or SASL failure it sent is its refusal
        (``BrokerErrorFrame``, as a STOMP ERROR to CONNECT); the socket ending is a failure to
        connect, which a failover transport answers by trying the next broker."""
        assert self._reader is not None
        while True:
            data = await self._reader.read(READ_BYTES)
            if not data:
                refusal = self._engine.refusal()
                if refusal is not None:
                    raise BrokerErrorFrame(refusal)
                raise ConnectFailedError(
                    "the broker closed the connection before the AMQP open", url=self._url
                )
            self._bytes_received += len(data)
            events = self._engine.receive_data(data)
            self._flush()
            events += self._engine.events()
            closed = [event for event in events if isinstance(event, Closed)]
            if closed:
                raise BrokerErrorFrame(closed[0].error or "the broker closed the connection")
            for index, event in enumerate(events):
                if isinstance(event, Opened):
                    self._early = events[index + 1 :]
                    return event

    def _connected(self, opened: Opened) -> Connected:
        properties = opened.properties
        product = properties.get("product", "")
        version = properties.get("version", "")
        server = f"{product}/{version}" if product and version else product or None
        headers = {"amqp-container-id": opened.container_id, **properties}
        return Connected("1.2", opened.container_id or None, server, self._heart_beat(), headers)

    def _heart_beat(self) -> tuple[int, int]:
        return (round(self._engine.remote_idle_timeout_s * 500), self._info.heart_beat[1])

    def _drop_socket(self) -> None:
        if self._writer is not None:
            self._writer.transport.abort()

    # ---- running ----

    async def _run(self) -> None:
        error: ConnectionClosed | None = None
        try:
            self._dispatch(self._early)
            self._early = []
            await self._read_loop()
        except ConnectionClosed as exc:
            error = exc
        except OSError as exc:
            error = ConnectionClosed(f"connection lost: {exc.strerror or exc}")
        finally:
            self._stop_timer()
            self._mark_closed(error or ConnectionClosed("connection closed"))
            await self._close_socket()
        if error is not None and self._listener is not None and not self._aborted:
            self._listener.on_closed(error)

    async def _read_loop(self) -> None:
        reader = self._reader
        assert reader is not None
        while not self._engine.closed:
            data = await reader.read(READ_BYTES)
            self._bytes_received += len(data)
            events = self._engine.receive_data(data) if data else self._engine.received_eof()
            self._dispatch(events)
            self._flush()
        if self._broker_error is not None:
            frame = BrokerErrorFrame(self._broker_error)
            raise ConnectionClosed(f"connection closed: {frame.message}", frame)
        if not self._session.disconnecting:
            raise ConnectionClosed("the broker closed the connection")

    def _dispatch(self, events: list[EngineEvent]) -> None:
        listener = self._listener
        assert listener is not None
        for event in events:
            if isinstance(event, Closed) and not self._session.disconnecting:
                self._broker_error = event.error or "closed without a reason"
        translated: list[BrokerEvent] = self._session.events(events)
        self._progress.set()
        if self._session.in_flight < MAX_IN_FLIGHT:
            self._settled.set()
        for stomp_event in translated:
            listener.on_event(stomp_event)

    def _flush_soon(self) -> None:
        """A send's bytes: written with the next ones, within ``FLUSH_SENDS`` sends or once
        the loop runs again, whichever comes first."""
        self._unflushed += 1
        if self._unflushed >= FLUSH_SENDS:
            self._flush()
        elif self._flush_handle is None:
            self._flush_handle = asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._unflushed = 0
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        data = self._engine.data_to_send()
        if data and self._writer is not None and not self._writer.transport.is_closing():
            self._writer.write(data)
            self._bytes_sent += len(data)

    def _tick(self) -> None:
        """proton's idle-timeout clock: empty frames out, a silent broker detected."""
        self._timer = None
        if self._closed is not None:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        deadline = self._engine.tick(now)
        self._flush()  # proton reports its own close once the close frame is taken
        events = self._engine.events()
        if events and self._listener is not None:
            self._dispatch(events)
        if self._engine.closed:
            self._drop_socket()  # the reader sees the end and reports the reason
        elif deadline:
            self._timer = loop.call_at(deadline, self._tick)

    def _stop_timer(self) -> None:
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    # ---- writing ----

    async def write(self, command: Command) -> None:
        if self._closed is not None:
            raise self._closed
        if isinstance(command, Begin):
            await self._begin(command)
            return
        if isinstance(command, Commit | Abort):
            transaction = command.transaction
            await self._until_settled(lambda: self._session.in_flight_in(transaction) == 0)
        elif isinstance(command, Disconnect):
            await self._until_settled(lambda: self._session.in_flight == 0)
        events = self._session.command(command)
        self._frames_sent += 1
        if isinstance(command, Send):
            self._flush_soon()
        else:
            self._flush()
        if events and self._listener is not None:
            for event in events:
                self._listener.on_event(event)
        await self._wait_writable()

    async def _begin(self, command: Begin) -> None:
        declared: asyncio.Future[bytes | None] = asyncio.get_running_loop().create_future()
        self._session.begin(command, declared)
        self._frames_sent += 1
        self._flush()
        closed: asyncio.Future[None] = asyncio.ensure_future(self._until_closed())
        waited: list[asyncio.Future[bytes | None] | asyncio.Future[None]] = [declared, closed]
        try:
            await asyncio.wait(waited, return_when=asyncio.FIRST_COMPLETED)
        finally:
            closed.cancel()
        if self._closed is not None:
            raise self._closed
        txn_id = declared.result()
        if txn_id is not None:
            self._session.declared(command.transaction, txn_id)

    async def _until_closed(self) -> None:
        if self._runner is not None:
            await asyncio.wait([self._runner])

    async def _until_settled(self, done: Callable[[], bool]) -> None:
        """Wait (for outcomes from the broker) until ``done``; raises once closed."""
        while not done() and self._closed is None:
            self._progress.clear()
            await self._progress.wait()
        if self._closed is not None:
            raise self._closed

    async def _wait_writable(self) -> None:
        writer = self._writer
        if writer is not None and writer.transport.get_write_buffer_size() > WRITE_HIGH_WATER_BYTES:
            with contextlib.suppress(OSError, RuntimeError):
                await writer.drain()
        while self._session.in_flight >= MAX_IN_FLIGHT and self._closed is None:
            self._settled.clear()
            await self._settled.wait()
        if self._closed is not None:
            raise self._closed

    # ---- closing ----

    def _mark_closed(self, error: ConnectionClosed) -> None:
        if self._closed is None:
            self._closed = error
        self._settled.set()
        self._progress.set()

    def abort(self) -> None:
        self._aborted = True
        self._stop_timer()
        self._mark_closed(ConnectionClosed("connection closed by the application"))
        if self._runner is not None:
            self._runner.cancel()
        else:
            self._drop_socket()

    async def close(self) -> None:
        self.abort()
        if self._runner is None:
            await self._close_socket()
            return
        await asyncio.wait([self._runner])
        if self._writer is not None and not self._writer.transport.is_closing():
            # A runner cancelled before its first step never ran its ``finally``.
            self._writer.transport.abort()

    async def _close_socket(self) -> None:
        writer = self._writer
        if writer is None:
            return
        writer.transport.abort()
        with contextlib.suppress(OSError, RuntimeError):
            await writer.wait_closed()

    def statistics(self) -> TransportStatistics:
        send_ms, receive_ms = self._heart_beat()
        return TransportStatistics(
            frames_sent=self._frames_sent,
            bytes_sent=self._bytes_sent,
            bytes_received=self._bytes_received,
            heart_beats_sent=0,
            heart_beats_received=0,
            send_interval_ms=send_ms,
            receive_timeout_ms=receive_ms,
            remote_url=self._url,
        )
