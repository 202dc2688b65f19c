"""One AMQP 1.0 connection for the load generator: an asyncio protocol around proton's engine.

As ``wire.py`` does for STOMP: every read goes to proton at once, the worker's callback sees the
whole read with the time it arrived (one clock read per read, not per message) and walks its
link's deliveries itself, and what proton has to send then leaves in one write. The engine is
``ferrymq.amqp.engine.Engine`` in client mode; its event collector is released at once, so proton
makes no event objects at all: the load generator looks at endpoint states instead (a closed
connection or link is an error, with the broker's condition).

Logging in: SASL ANONYMOUS, or PLAIN with the URL's login (allowed without TLS: this is a load
generator on a test machine, and STOMP's CONNECT carries a passcode the same way).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Callable
from typing import Any, cast

import proton

from ferrymq.amqp.engine import Engine
from ferrymq.bench.options import Endpoint
from ferrymq.bench.wire import CONNECT_TIMEOUT_S, WRITE_HIGH_WATER, BrokerError, tls_for

ReadHandler = Callable[[int], None]
MAX_FRAME_SIZE = 1024 * 1024
TICK_S = 1.0
"""How often proton's timers run (heartbeats, when the broker asks for them)."""
_REMOTE_CLOSED = proton.Endpoint.REMOTE_CLOSED
_REMOTE_ACTIVE = proton.Endpoint.REMOTE_ACTIVE


def _no_reader(now: int) -> None:
    """Before a worker takes the wire, a read only moves the handshake on."""


def condition_text(endpoint: Any) -> str:
    condition = endpoint.remote_condition
    if condition is None:
        return "no error condition given"
    return f"{condition.name}: {condition.description}" if condition.description else condition.name


class AmqpWire(asyncio.Protocol):
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.connection = engine.connection
        self.on_read: ReadHandler = _no_reader
        self.links: list[proton.Link] = []
        """The worker's links: one closed by the broker ends the run with its condition."""
        self.transport: asyncio.Transport | None = None
        loop = asyncio.get_running_loop()
        self.closed: asyncio.Future[None] = loop.create_future()
        self.error: str | None = None
        self._drained: asyncio.Future[None] | None = None
        self._read: asyncio.Future[None] | None = None
        self._ticker: asyncio.Task[None] | None = None

    # ---- asyncio.Protocol ----

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        self.transport.set_write_buffer_limits(high=WRITE_HIGH_WATER)
        self._ticker = asyncio.get_running_loop().create_task(self._tick())

    def data_received(self, data: bytes) -> None:
        now = time.monotonic_ns()
        if not self.engine.push(data):
            condition = self.engine.transport.condition
            self.fail(
                f"protocol error: {condition.name}: {condition.description}"
                if condition
                else "the broker's AMQP input ended"
            )
            return
        self._check_endpoints()
        self.on_read(now)
        self.flush()
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.error is None:
            self.error = f"connection lost: {exc}" if exc else "the broker closed the connection"
        if self._ticker is not None:
            self._ticker.cancel()
        if not self.closed.done():
            self.closed.set_result(None)
        for future in (self._drained, self._read):
            if future is not None and not future.done():
                future.set_exception(BrokerError(self.error))
        self._drained = None

    def pause_writing(self) -> None:
        if self._drained is None:
            self._drained = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    # ---- for the workers ----

    def flush(self) -> None:
        """Write what proton has to send."""
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        data = self.engine.output()
        if data:
            transport.write(data)

    async def drain(self) -> None:
        if self._drained is not None:
            await self._drained

    def fail(self, message: str) -> None:
        if self.error is None:
            self.error = message
        if self.transport is not None:
            self.transport.close()

    def check(self) -> None:
        if self.error is not None:
            raise BrokerError(self.error)

    async def until(self, ready: Callable[[], bool], what: str, timeout_s: float) -> None:
        """Wait, read by read, until ``ready()``; raise ``BrokerError`` on an error or timeout."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not ready():
            self.check()
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise BrokerError(f"no {what} within {timeout_s:g} s")
            self._read = loop.create_future()
            try:
                await asyncio.wait_for(self._read, remaining)
            except TimeoutError:
                continue
            finally:
                self._read = None
        self.check()

    def _wake(self) -> None:
        read = self._read
        if read is not None and not read.done():
            read.set_result(None)

    def _check_endpoints(self) -> None:
        connection = self.connection
        if connection.state & _REMOTE_CLOSED:
            self.fail(f"the broker closed the connection ({condition_text(connection)})")
            return
        for link in self.links:
            if link.state & _REMOTE_CLOSED:
                self.fail(f"the broker closed link {link.name} ({condition_text(link)})")
                return

    async def _tick(self) -> None:
        transport = self.engine.transport
        while True:
            await asyncio.sleep(TICK_S)
            transport.tick(time.monotonic())
            self.flush()

    def attach(self, link: proton.Link, address: str, *, settled: bool) -> None:
        """Open ``link`` to or from ``address``; pre-settled transfers if ``settled``."""
        (link.target if link.is_sender else link.source).address = address
        link.snd_settle_mode = proton.Link.SND_SETTLED if settled else proton.Link.SND_MIXED
        link.open()
        self.links.append(link)
        self.flush()

    async def attached(self, link: proton.Link, timeout_s: float) -> None:
        """Wait for the broker's attach; a broker that refuses the node attaches without one
        and closes the link (AMQP 1.0 part 2.6.3), which ``check`` reports."""
        await self.until(
            lambda: bool(link.state & _REMOTE_ACTIVE), f"attach of {link.name}", timeout_s
        )

    async def close(self, timeout_s: float = 5.0) -> None:
        """Close the AMQP connection, wait for the broker's close (bounded), close the socket."""
        if self.transport is None or self.transport.is_closing():
            return
        self.connection.close()
        self.flush()
        with contextlib.suppress(BrokerError):
            await self.until(
                lambda: bool(self.connection.state & _REMOTE_CLOSED), "close", timeout_s
            )
        self.transport.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self.closed), timeout_s)
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker


def _engine(endpoint: Endpoint) -> Engine:
    login = endpoint.login
    engine = Engine(
        server=False,
        max_frame_size=MAX_FRAME_SIZE,
        idle_timeout_ms=0,
        container_id=f"ferrymq-bench-{secrets.token_hex(6)}",
        hostname=endpoint.host,
        login=(login, endpoint.passcode or "") if login is not None else None,
    )
    # No events: the workers look at the links themselves (see the module docstring).
    engine.collector.release()
    return engine


async def open_amqp(endpoint: Endpoint) -> tuple[AmqpWire, proton.Session]:
    """Connect, log in and open a session; raise ``BrokerError`` if the broker refuses."""
    loop = asyncio.get_running_loop()
    engine = _engine(endpoint)
    _, wire = await asyncio.wait_for(
        loop.create_connection(
            lambda: AmqpWire(engine), endpoint.host, endpoint.port, ssl=tls_for(endpoint)
        ),
        CONNECT_TIMEOUT_S,
    )
    connection = engine.connection
    connection.open()
    session = connection.session()
    session.open()
    wire.flush()
    try:
        await wire.until(
            lambda: bool(connection.state & _REMOTE_ACTIVE), "AMQP open", CONNECT_TIMEOUT_S
        )
    except BrokerError as exc:
        wire.fail(str(exc))
        raise BrokerError(f"{endpoint.url}: {exc}") from None
    return wire, session


def server_of(wire: AmqpWire) -> str | None:
    """``product/version`` from the broker's open properties (RabbitMQ sends them), else None."""
    properties = wire.connection.remote_properties or {}
    product = properties.get(proton.symbol("product"))
    if not product:
        return None
    version = properties.get(proton.symbol("version"))
    return f"{product}/{version}" if version else str(product)
