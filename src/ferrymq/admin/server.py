"""The admin HTTP listener: asyncio streams carrying h11's events to the router and back.

h11 does the HTTP/1.1 framing (keep-alive, pipelining, HEAD, Connection: close); the router
decides a read synchronously from a snapshot, so it never waits on the broker; a write
(``admin.operations``) waits until the broker's store has made it durable.
Each connection is one task owned by the server: ``stop`` cancels and awaits all of them.
Limits are checked here because h11 bounds only an *incomplete* head: a complete oversized
head, an oversized body and a client that never finishes its request are refused explicitly.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Iterable
from dataclasses import dataclass
from email.utils import formatdate
from http import HTTPStatus
from typing import Final, Self
from urllib.parse import urlsplit

import h11

from ferrymq import __version__
from ferrymq.admin.api import ROUTES
from ferrymq.admin.auth import AdminAccess
from ferrymq.admin.health import HEALTH_ROUTE
from ferrymq.admin.routing import Response, Route, Router, error_response
from ferrymq.admin.source import AdminSource, BrokerServiceView, as_source
from ferrymq.config.model import AdminConfig
from ferrymq.config.tls import SslContextConfig
from ferrymq.util.tls import KeyStore, TlsError, TlsOptions, new_server_context

log = logging.getLogger(__name__)

MAX_HEAD_BYTES: Final = 16 * 1024
"""Request line plus header fields: h11's default for an incomplete head; admin URLs are short."""
MAX_BODY_BYTES: Final = 64 * 1024
"""GET and HEAD carry no body; this leaves room for the small JSON documents of later methods."""
IDLE_TIMEOUT_S: Final = 30.0
"""Time for one whole request, from accepting the connection or from the previous response: it
bounds both an idle keep-alive connection and a client trickling its request (nginx allows 75 s
and 60 s for those; a Prometheus scrape reconnects cheaply)."""
WRITE_TIMEOUT_S: Final = 30.0
"""Time for a response to leave the socket buffer before the connection is dropped."""
MAX_CONNECTIONS: Final = 64
"""Open admin connections; one more is answered 503 and closed. Logins held back by the throttle
take at most ``admin.auth.MAX_PENDING_LOGINS`` of them per client address (extras: 429)."""
LINGER_TIMEOUT_S: Final = 2.0
"""After an error answer to a request not read to its end, how long to drain what the client
still sends, so the close does not reset the connection before it read the error (RFC 9112
"Tear-down")."""
READ_CHUNK_BYTES: Final = 64 * 1024
SERVER_HEADER: Final = f"FerryMQ/{__version__}"


@dataclass(frozen=True, slots=True)
class _Reply:
    response: Response
    head: bool = False
    """Answering HEAD: headers as for GET, no body."""
    close: bool = False
    """Close after this response (an error that leaves the request stream unusable)."""


class AdminServer:
    def __init__(
        self,
        service: AdminSource | BrokerServiceView,
        host: str = "127.0.0.1",
        port: int = 8161,
        *,
        routes: Iterable[Route] = (*ROUTES, HEALTH_ROUTE),
        idle_timeout_s: float = IDLE_TIMEOUT_S,
        write_timeout_s: float = WRITE_TIMEOUT_S,
        max_head_bytes: int = MAX_HEAD_BYTES,
        max_body_bytes: int = MAX_BODY_BYTES,
        max_connections: int = MAX_CONNECTIONS,
        access: AdminAccess | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.source = as_source(service)
        self.access = access
        """Basic auth against the broker's users; None: the API is open (no authentication)."""
        self.ssl_context = tls
        """HTTPS (``--admin https://...``, ``admin_ssl_context``); None: plain HTTP."""
        self.router = Router(routes)
        self.host = host
        self._port = port
        self.idle_timeout_s = idle_timeout_s
        self.write_timeout_s = write_timeout_s
        self.max_head_bytes = max_head_bytes
        self.max_body_bytes = max_body_bytes
        self.max_connections = max_connections
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._stopping = False

    @property
    def port(self) -> int:
        """The bound port once started (the one the OS chose when constructed with 0)."""
        return self._port

    @property
    def url(self) -> str:
        scheme = "http" if self.ssl_context is None else "https"
        return f"{scheme}://{self.host}:{self._port}"

    async def start(self) -> None:
        if self._server is not None:
            raise RuntimeError("the admin server is already started")
        self._stopping = False
        # A plain (not async) callback: asyncio calls it directly and creates no task of its own.
        self._server = await asyncio.start_server(
            self._accept, self.host, self._port, ssl=self.ssl_context
        )
        self._port = self._server.sockets[0].getsockname()[1]
        log.info("admin API listening on %s", self.url)

    async def stop(self) -> None:
        self._stopping = True
        server, self._server = self._server, None
        if server is not None:
            server.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if server is not None:
            await server.wait_closed()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    # -- connections ----------------------------------------------------------------------------

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._stopping:
            writer.transport.abort()
            return
        if len(self._tasks) >= self.max_connections:
            refusal = h11.Connection(h11.SERVER)
            reply = _Reply(error_response(503, "too many admin connections"), close=True)
            writer.writelines(_encode(refusal, reply))
            writer.close()
            return
        task = asyncio.get_running_loop().create_task(self._serve(reader, writer))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await self._converse(reader, writer)
            writer.close()
            async with asyncio.timeout(self.write_timeout_s):
                await writer.wait_closed()
        except (ConnectionError, TimeoutError) as exc:
            log.debug("admin connection dropped: %r", exc)
        except Exception:
            log.exception("admin connection failed")
        finally:
            # However the conversation ended (cancellation by stop() included), release the
            # socket now; after a clean close this does nothing.
            writer.transport.abort()

    async def _converse(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Requests and responses until either side ends the connection."""
        connection = h11.Connection(h11.SERVER, max_incomplete_event_size=self.max_head_bytes)
        peer = writer.get_extra_info("peername")
        address = str(peer[0]) if isinstance(peer, tuple) and peer else None
        while True:
            reply = await self._next_reply(connection, reader, address)
            if reply is None:
                return
            writer.writelines(_encode(connection, reply))
            async with asyncio.timeout(self.write_timeout_s):
                await writer.drain()
            if connection.our_state is not h11.DONE:
                break
            connection.start_next_cycle()
        if connection.their_state not in (h11.DONE, h11.MUST_CLOSE, h11.CLOSED):
            await self._linger(reader, writer)

    async def _next_reply(
        self, connection: h11.Connection, reader: asyncio.StreamReader, address: str | None
    ) -> _Reply | None:
        """Read one request and decide its answer; None when the client is gone or idle."""
        try:
            async with asyncio.timeout(self.idle_timeout_s):
                request, refusal, body = await self._receive(connection, reader)
        except TimeoutError:
            if connection.their_state is h11.IDLE and not connection.trailing_data[0]:
                return None
            message = f"the request did not arrive within {self.idle_timeout_s} s"
            return _Reply(error_response(408, message), close=True)
        except h11.RemoteProtocolError as exc:
            response = error_response(exc.error_status_hint, f"malformed request: {exc}")
            return _Reply(response, close=True)
        if request is None:
            return None
        head = request.method == b"HEAD"
        if refusal is not None:
            return _Reply(refusal, head=head, close=True)
        return _Reply(await self._answer(request, body, address), head=head)

    async def _answer(self, request: h11.Request, body: bytes, address: str | None) -> Response:
        """The response to a whole request: refused by the access rule, or routed."""
        method = request.method.decode("latin-1")
        target = request.target.decode("latin-1")
        identified = True
        if self.access is not None:
            path = urlsplit(target).path
            authorization = _header(request, b"authorization")
            denied = await self.access.admit(method, path, authorization, address)
            if denied is not None:
                return denied
            identified = authorization is not None
        content_type = _header(request, b"content-type")
        return await self.router.respond(
            self.source, method, target, body, content_type, identified=identified
        )

    async def _receive(
        self, connection: h11.Connection, reader: asyncio.StreamReader
    ) -> tuple[h11.Request | None, Response | None, bytes]:
        """The next request and its body, read to its end unless it breaks a limit (then the
        refusal)."""
        request: h11.Request | None = None
        body: list[bytes] = []
        body_bytes = 0
        while True:
            event = connection.next_event()
            if event is h11.NEED_DATA:
                connection.receive_data(await reader.read(READ_CHUNK_BYTES))
            elif isinstance(event, h11.Request):
                request = event
                if _head_bytes(event) > self.max_head_bytes:
                    limit = f"the request head exceeds {self.max_head_bytes} bytes"
                    return request, error_response(431, limit), b""
                if _content_length(event) > self.max_body_bytes:
                    return request, error_response(413, self._body_limit()), b""
            elif isinstance(event, h11.Data):
                body_bytes += len(event.data)
                if body_bytes > self.max_body_bytes:
                    return request, error_response(413, self._body_limit()), b""
                body.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                return request, None, b"".join(body)
            elif isinstance(event, h11.ConnectionClosed):
                return None, None, b""
            else:
                raise AssertionError(f"h11 event {event!r} at the start of a request")

    def _body_limit(self) -> str:
        return f"the request body exceeds {self.max_body_bytes} bytes"

    async def _linger(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if writer.can_write_eof():
            writer.write_eof()
        with contextlib.suppress(TimeoutError, ConnectionError):
            async with asyncio.timeout(LINGER_TIMEOUT_S):
                while await reader.read(READ_CHUNK_BYTES):
                    pass


def _encode(connection: h11.Connection, reply: _Reply) -> list[bytes]:
    response = reply.response
    headers = [
        ("Content-Type", response.content_type),
        ("Content-Length", str(len(response.body))),
        ("Cache-Control", "no-store"),
        ("Date", formatdate(usegmt=True)),
        ("Server", SERVER_HEADER),
        *response.headers,
    ]
    if reply.close:
        headers.append(("Connection", "close"))
    reason = HTTPStatus(response.status).phrase.encode()
    events: list[h11.Event] = [
        h11.Response(status_code=response.status, headers=headers, reason=reason)
    ]
    if not reply.head:
        events.append(h11.Data(data=response.body))
    events.append(h11.EndOfMessage())
    out: list[bytes] = []
    for event in events:
        data = connection.send(event)
        if data:
            out.append(data)
    return out


def _head_bytes(request: h11.Request) -> int:
    """The size of the request line and header fields as sent (CRLFs included)."""
    line = len(request.method) + len(request.target) + len(b"  HTTP/1.1\r\n")
    return line + sum(len(name) + len(value) + 4 for name, value in request.headers) + 2


def _header(request: h11.Request, name: bytes) -> str | None:
    for field_name, value in request.headers:
        if field_name == name:
            return value.decode("latin-1")
    return None


def _content_length(request: h11.Request) -> int:
    for name, value in request.headers:
        if name == b"content-length":
            return int(value)
    return 0


def admin_ssl_context(
    admin: AdminConfig, ssl_config: SslContextConfig | None
) -> ssl.SSLContext | None:
    """The admin API's HTTPS context: the broker's ``<sslContext>`` key, as its TLS listeners
    use it; ``TlsError`` (one line) when HTTPS is asked for and there is no key."""
    if not admin.tls:
        return None
    if ssl_config is None or ssl_config.key_store is None:
        raise TlsError(
            "the admin API over HTTPS needs the broker's key: add <sslContext><sslContext "
            'keyStore="broker.p12" keyStorePassword="..."/></sslContext> to <broker>'
        )
    key = KeyStore(
        ssl_config.key_store, ssl_config.key_store_password, ssl_config.key_store_key_password
    )
    return new_server_context(TlsOptions(key_store=key))
