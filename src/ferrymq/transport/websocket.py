"""WebSocket listeners (``ws://``, ``wss://``): the same ``TransportConnection`` as TCP, framed.

A browser cannot open a plain socket, so ActiveMQ serves its protocols over WebSocket too
(ActiveMQ documentation, "WebSockets"). Here the WebSocket layer is ``websockets``' sans-I/O
``ServerProtocol`` inside a ``TransportConnection`` subclass: asyncio still calls
``data_received`` directly, the handler still sees a byte stream (the payloads of every data
frame of one read, joined), and it still writes through ``write``. So the protocol adapter,
its limits, heart-beats, flow control and authentication do not know which transport they run
on; pausing reading pauses the socket, and a full kernel buffer pauses the handler as over TCP.

What WebSocket adds:
- each ``write`` leaves as one WebSocket message (the adapter writes one protocol frame per
  call, as a STOMP client over WebSocket expects one frame per message); a text message when
  the frame is UTF-8 (what stomp.js and browsers expect), a binary one otherwise (a binary
  body would not be valid text);
- the opening handshake picks the first subprotocol the client offers among the adapter's
  (STOMP: ``v12.stomp``, ``v11.stomp``, ``v10.stomp``, ``stomp``); a client that offers none of
  them is served without one, as ActiveMQ's server does. Any request path is served;
- a handshake carrying an ``Origin`` (a browser's) that the listener's ``OriginPolicy`` does
  not allow is refused with HTTP 403 (``util.origins``; the service chooses the policy, from
  the connector's ``allowedOrigins`` and the broker's kind of login); a request without
  ``Origin`` (not a browser) is always served;
- ``close`` starts the closing handshake: the socket closes when the client answers the close
  frame, or after ``CLOSE_TIMEOUT_S``;
- a message larger than ``max_message_bytes`` fails the connection (close code 1009). The
  listener sets it above the protocol's own frame limit, so that a frame over that limit
  reaches the adapter, which answers it as it does over TCP (STOMP: an ERROR).

TLS (``wss://``) is the listener's ``ssl`` context, below all of this.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable, Collection, Sequence
from typing import Any

from websockets.frames import BINARY, CLOSE, CONT, TEXT, CloseCode, Frame
from websockets.http11 import Request
from websockets.protocol import OPEN
from websockets.server import ServerProtocol
from websockets.typing import Subprotocol

from ferrymq.transport.connection import ConnectionHandler, TransportConnection
from ferrymq.transport.tcp import TcpListener
from ferrymq.util.origins import ANY_ORIGIN, OriginPolicy

log = logging.getLogger(__name__)

CLOSE_TIMEOUT_S = 2.0
"""How long a closing connection waits for the client's close frame before dropping the socket."""

_DATA = (TEXT, BINARY, CONT)


class _Quiet(logging.LoggerAdapter[logging.Logger]):
    """The library's per-connection "connection open/closed" lines, at DEBUG: the broker logs
    its connections itself."""

    def info(self, msg: object, *args: Any, **kwargs: Any) -> None:
        self.debug(msg, *args, **kwargs)


_WIRE_LOG = _Quiet(logging.getLogger(__name__ + ".protocol"), {})


class WebSocketConnection(TransportConnection):
    """One accepted socket speaking WebSocket; the handler sees the messages' payload bytes."""

    def __init__(
        self,
        handler: ConnectionHandler,
        *,
        subprotocols: Sequence[str] = (),
        max_message_bytes: int | None = None,
        origins: OriginPolicy = ANY_ORIGIN,
    ) -> None:
        super().__init__(handler)
        self._origins = origins
        offered = frozenset(subprotocols)

        def select(_: ServerProtocol, asked: Sequence[Subprotocol]) -> Subprotocol | None:
            return next((name for name in asked if name in offered), None)

        self._ws = ServerProtocol(
            select_subprotocol=select, max_size=max_message_bytes, logger=_WIRE_LOG
        )
        self._close_timer: asyncio.TimerHandle | None = None
        self.subprotocol: str | None = None
        """The subprotocol agreed at the handshake (None: none, or not yet)."""
        self.path: str | None = None
        """The request path of the handshake (any path is served)."""

    def data_received(self, data: bytes) -> None:
        self.bytes_in += len(data)
        self.read_activity += 1
        ws = self._ws
        ws.receive_data(data)
        payloads: list[bytes] = []
        closed = False
        for event in ws.events_received():
            if isinstance(event, Frame):
                if event.opcode in _DATA and event.data:
                    payloads.append(bytes(event.data))
                elif event.opcode is CLOSE:
                    closed = True
            elif isinstance(event, Request):
                self._handshake(event)
        if payloads and not self._closing:
            self.handler.data_received(payloads[0] if len(payloads) == 1 else b"".join(payloads))
        if closed:
            self._closing = True  # the client closed: nothing more is written
        self._send_ws()
        if ws.parser_exc is not None and not self._closing:
            self._closing = True
            log.info(
                "WebSocket connection from %s failed: %s",
                self.remote_address,
                ws.parser_exc,
            )

    def _handshake(self, request: Request) -> None:
        ws = self._ws
        refusal = self._origin_refusal(request)
        response = ws.accept(request) if refusal is None else ws.reject(403, refusal + "\n")
        ws.send_response(response)
        if response.status_code == 101:
            self.subprotocol = ws.subprotocol
            self.path = request.path
        else:
            log.info(
                "WebSocket handshake from %s refused (%d): %s",
                self.remote_address,
                response.status_code,
                refusal or ws.handshake_exc,
            )

    def _origin_refusal(self, request: Request) -> str | None:
        """Why the page that sent this handshake may not connect; None if it may."""
        origins = request.headers.get_all("Origin")
        if not origins:
            return None
        if len(origins) > 1:
            return "the handshake carries several Origin headers"
        if self._origins.allows(origins[0]):
            return None
        # The answer does not list the allowed origins: a prober learns nothing from it.
        shown = origins[0][:200]
        return (
            f"Origin {shown!r} is not allowed on this listener "
            "(its allowedOrigins URI option names the web pages it serves)"
        )

    def _send_ws(self) -> None:
        """Put what the WebSocket protocol produced on the socket; its end of stream closes
        the socket (a server closes TCP first once the closing handshake is done)."""
        transport = self._transport
        if transport is None:
            return
        writes = self._ws.data_to_send()
        if writes and not writes[-1]:
            transport.writelines(writes[:-1])
            transport.close()
        elif writes:
            transport.writelines(writes)

    def _flush(self) -> None:
        self._flush_scheduled = False
        if not self._pending or self._transport is None:
            return
        chunks, self._pending = self._pending, []
        self.bytes_out += sum(len(c) for c in chunks)
        ws = self._ws
        if self._transport.is_closing() or ws.state is not OPEN:
            return
        for chunk in chunks:
            if chunk.isascii() or _is_utf8(chunk):
                ws.send_text(chunk)
            else:
                ws.send_binary(chunk)
        self._send_ws()

    def close(self) -> None:
        """Flush what was written, then close the WebSocket (closing handshake)."""
        if self._transport is None or self._closing:
            return
        self._flush()
        self._closing = True
        ws = self._ws
        if ws.state is not OPEN:
            self._transport.close()
            return
        ws.send_close(CloseCode.NORMAL_CLOSURE)
        self._send_ws()
        if self._close_timer is None:
            self._close_timer = asyncio.get_running_loop().call_later(
                CLOSE_TIMEOUT_S, self._close_timed_out
            )

    def _close_timed_out(self) -> None:
        self._close_timer = None
        if self._transport is not None:
            self._transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._close_timer is not None:
            self._close_timer.cancel()
            self._close_timer = None
        super().connection_lost(exc)


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class WebSocketListener(TcpListener):
    """A ``TcpListener`` whose connections speak WebSocket (``ssl`` set: ``wss://``)."""

    def __init__(
        self,
        host: str,
        port: int,
        handler_factory: Callable[[], ConnectionHandler],
        *,
        subprotocols: Collection[str] = (),
        max_message_bytes: int | None = None,
        ssl_context: ssl.SSLContext | None = None,
        maximum_connections: int | None = None,
        name: str = "",
    ) -> None:
        super().__init__(
            host,
            port,
            handler_factory,
            maximum_connections=maximum_connections,
            name=name,
            ssl_context=ssl_context,
        )
        self.subprotocols = tuple(subprotocols)
        self.max_message_bytes = max_message_bytes
        self.origins: OriginPolicy = ANY_ORIGIN
        """The browser pages served (a request without ``Origin`` always is); the service sets
        it before ``start`` from the connector's ``allowedOrigins`` and the broker's logins."""

    def _protocol_factory(self) -> TransportConnection:
        return self._tracked(WebSocketConnection)(
            self._handler_factory(),
            subprotocols=self.subprotocols,
            max_message_bytes=self.max_message_bytes,
            origins=self.origins,
        )
