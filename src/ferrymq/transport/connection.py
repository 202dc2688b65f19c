"""One accepted socket: bytes in to a handler, bytes out with writes coalesced per loop turn.

Built on asyncio's Protocol API: the loop calls ``data_received`` directly, so reading a batch of
frames costs no task switch.  Writes made while handling one batch are gathered and handed to the
socket in one ``writelines`` on the next loop turn (one syscall instead of one per frame).  When
the kernel buffer backs up, the handler is told (``pause_writing``) so it can stop producing, and
reading can be paused for producer flow control.  This module holds no broker state.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol, cast

from ferrymq.transport.tls import peer_subject

log = logging.getLogger(__name__)

WRITE_HIGH_WATER_BYTES = 1024 * 1024
WRITE_LOW_WATER_BYTES = 256 * 1024


class ConnectionHandler(Protocol):
    """What a transport connection drives: the protocol side of one connection."""

    def connection_made(self, connection: TransportConnection) -> None: ...

    def data_received(self, data: bytes) -> None: ...

    def connection_lost(self, exc: Exception | None) -> None: ...

    def writing_paused(self) -> None: ...

    def writing_resumed(self) -> None: ...


class TransportConnection(asyncio.Protocol):
    def __init__(self, handler: ConnectionHandler, on_close: object = None) -> None:
        self.handler = handler
        self._transport: asyncio.Transport | None = None
        self._pending: list[bytes] = []
        self._flush_scheduled = False
        self._closing = False
        self.write_paused = False
        self.reading_paused = False
        self.bytes_in = 0
        self.bytes_out = 0
        self.remote_address: str | None = None
        self.peer_certificate_subject: str | None = None
        """On a TLS listener: the subject DN (RFC 4514, "CN=client,O=Test") of the client
        certificate the handshake verified; None without TLS or without a certificate."""
        self.read_activity = 0
        """Incremented on every read; the inactivity monitor compares snapshots."""
        self.write_activity = 0

    # -- asyncio.Protocol ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement the interface without subclassing asyncio.Transport.
        self._transport = cast(asyncio.Transport, transport)
        transport = self._transport
        transport.set_write_buffer_limits(WRITE_HIGH_WATER_BYTES, WRITE_LOW_WATER_BYTES)
        peer = transport.get_extra_info("peername")
        if isinstance(peer, tuple) and len(peer) >= 2:
            self.remote_address = f"{peer[0]}:{peer[1]}"
        self.peer_certificate_subject = peer_subject(transport.get_extra_info("ssl_object"))
        self.handler.connection_made(self)

    def data_received(self, data: bytes) -> None:
        self.bytes_in += len(data)
        self.read_activity += 1
        if self._closing:
            return
        self.handler.data_received(data)

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        self._pending.clear()
        self.handler.connection_lost(exc)

    def pause_writing(self) -> None:
        self.write_paused = True
        self.handler.writing_paused()

    def resume_writing(self) -> None:
        self.write_paused = False
        self.handler.writing_resumed()

    # -- used by the handler ------------------------------------------------------------------

    @property
    def closing(self) -> bool:
        return self._closing

    def write(self, data: bytes) -> None:
        if self._closing:
            return
        self._pending.append(data)
        self.write_activity += 1
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def flush(self) -> None:
        """Write what is gathered now (before a close, or when order with a close matters)."""
        self._flush()

    def _flush(self) -> None:
        self._flush_scheduled = False
        if not self._pending or self._transport is None:
            return
        chunks, self._pending = self._pending, []
        self.bytes_out += sum(len(c) for c in chunks)
        if not self._transport.is_closing():
            self._transport.writelines(chunks)

    def close(self) -> None:
        """Flush what was written, then close the socket."""
        if self._transport is None or self._closing:
            return
        self._flush()
        self._closing = True
        self._transport.close()

    def abort(self) -> None:
        """Drop the socket now, unsent data included (a dead peer)."""
        if self._transport is None:
            return
        self._closing = True
        self._pending.clear()
        self._transport.abort()

    def pause_reading(self) -> None:
        if self._transport is not None and not self.reading_paused:
            self.reading_paused = True
            self._transport.pause_reading()

    def resume_reading(self) -> None:
        if self._transport is not None and self.reading_paused:
            self.reading_paused = False
            if not self._transport.is_closing():
                self._transport.resume_reading()

    @property
    def write_buffer_size(self) -> int:
        if self._transport is None:
            return 0
        return self._transport.get_write_buffer_size() + sum(len(c) for c in self._pending)
