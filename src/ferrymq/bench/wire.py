"""One STOMP connection for the load generator: an asyncio protocol around ``ClientSession``.

A protocol, not streams: every read is decoded at once into a list of events and handed to the
worker's callback together with the time it arrived (one clock read per read, not per message),
and writes go straight to the transport. Writing pauses only when the transport's buffer passes
its high-water mark.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import Callable
from typing import Any, cast
from urllib.parse import parse_qsl

from ferrymq.bench.dialect import Dialect
from ferrymq.bench.options import Endpoint
from ferrymq.client.tls import tls_context
from ferrymq.stomp import (
    ClientEvent,
    ClientSession,
    Connected,
    ErrorEvent,
    ReceiptEvent,
    RemoteProtocolError,
)

EventHandler = Callable[[list[ClientEvent], int], None]

WRITE_HIGH_WATER = 4 * 1024 * 1024
CONNECT_TIMEOUT_S = 10.0


class BrokerError(Exception):
    """The broker answered ERROR, broke the protocol or closed the connection."""


class StompWire(asyncio.Protocol):
    def __init__(self, session: ClientSession) -> None:
        self.session = session
        self.on_events: EventHandler = self._handshake
        self.transport: asyncio.Transport | None = None
        self.connected: asyncio.Future[Connected] = asyncio.get_running_loop().create_future()
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.error: str | None = None
        self._drained: asyncio.Future[None] | None = None
        self._receipts: dict[str, asyncio.Future[int]] = {}

    # ---- asyncio.Protocol ----

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, but have its methods.
        self.transport = cast(asyncio.Transport, transport)
        self.transport.set_write_buffer_limits(high=WRITE_HIGH_WATER)

    def data_received(self, data: bytes) -> None:
        now = time.monotonic_ns()
        try:
            events = self.session.receive_data(data)
        except RemoteProtocolError as exc:
            self.fail(f"protocol error from the broker: {exc}")
            return
        self.on_events(events, now)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.error is None:
            self.error = f"connection lost: {exc}" if exc else "the broker closed the connection"
        if not self.closed.done():
            self.closed.set_result(None)
        waiting: list[asyncio.Future[Any]] = [self.connected, *self._receipts.values()]
        if self._drained is not None:
            waiting.append(self._drained)
        for future in waiting:
            if not future.done():
                future.set_exception(BrokerError(self.error))
        self._receipts.clear()

    def pause_writing(self) -> None:
        if self._drained is None:
            self._drained = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    # ---- for the workers ----

    def write(self, data: bytes) -> None:
        assert self.transport is not None
        self.transport.write(data)

    async def drain(self) -> None:
        """Wait until the transport's buffer is below its high-water mark."""
        if self._drained is not None:
            await self._drained

    def fail(self, message: str) -> None:
        """Record why the connection is no use any more, and close it."""
        if self.error is None:
            self.error = message
        if self.transport is not None:
            self.transport.close()

    def expect_receipt(self, receipt_id: str) -> asyncio.Future[int]:
        """A future for a RECEIPT the worker's handler passes to ``receipt_arrived``."""
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._receipts[receipt_id] = future
        return future

    def receipt_arrived(self, receipt_id: str, now: int) -> bool:
        """Resolve a waited-for receipt; False if nobody waits for it."""
        future = self._receipts.pop(receipt_id, None)
        if future is None:
            return False
        if not future.done():
            future.set_result(now)
        return True

    def error_arrived(self, event: ErrorEvent) -> None:
        detail = event.body.decode(errors="replace").strip()[:300]
        self.fail(f"ERROR from the broker: {event.message}" + (f" ({detail})" if detail else ""))

    def _handshake(self, events: list[ClientEvent], now: int) -> None:
        for event in events:
            if isinstance(event, Connected):
                if not self.connected.done():
                    self.connected.set_result(event)
            elif isinstance(event, ErrorEvent):
                self.error_arrived(event)
            elif isinstance(event, ReceiptEvent):
                self.receipt_arrived(event.receipt_id, now)

    async def close(self, timeout_s: float = 5.0) -> None:
        """DISCONNECT with a receipt, wait for it (bounded), then close the socket."""
        if self.transport is None or self.transport.is_closing():
            return
        receipt = self.expect_receipt("bench-disconnect")
        self.write(self.session.disconnect(receipt="bench-disconnect"))
        # Some brokers close at once instead of answering.
        with contextlib.suppress(TimeoutError, BrokerError):
            await asyncio.wait_for(asyncio.shield(receipt), timeout_s)
        self.transport.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self.closed), timeout_s)


def tls_for(endpoint: Endpoint) -> ssl.SSLContext | None:
    """The context of an ``ssl://`` endpoint: the client library's, from its URL options."""
    if endpoint.tls is None:
        return None
    _, context = tls_context("ssl", dict(parse_qsl(endpoint.tls)), url=endpoint.url)
    return context


async def open_wire(
    endpoint: Endpoint, dialect: Dialect, *, versions: tuple[str, ...] | None = None
) -> tuple[StompWire, Connected]:
    """Connect and log in; raise ``BrokerError`` if the broker refuses."""
    loop = asyncio.get_running_loop()
    session = ClientSession()
    _, wire = await asyncio.wait_for(
        loop.create_connection(
            lambda: StompWire(session), endpoint.host, endpoint.port, ssl=tls_for(endpoint)
        ),
        CONNECT_TIMEOUT_S,
    )
    login, passcode = endpoint.login, endpoint.passcode
    if login is None and dialect.default_login is not None:
        login, passcode = dialect.default_login
    wire.write(
        session.connect_frame(
            host=endpoint.host if dialect.vhost is None else dialect.vhost or None,
            login=login,
            passcode=passcode,
            accept_version=versions or dialect.versions,
        )
    )
    try:
        connected = await asyncio.wait_for(asyncio.shield(wire.connected), CONNECT_TIMEOUT_S)
    except TimeoutError:
        wire.fail("no CONNECTED within the connect timeout")
        raise BrokerError(f"{endpoint.url}: no CONNECTED within {CONNECT_TIMEOUT_S} s") from None
    except BrokerError as exc:
        raise BrokerError(f"{endpoint.url}: {exc}") from None
    return wire, connected
