"""The AMQP 1.0 connection a broker connection opens to its remote: ``RemoteConnection`` for real.

One socket (TCP, or TLS for ``amqps://`` or ``sslEnabled=true``), one ``amqp.peer.PeerEngine``
on the event loop, one reader task and one idle-timeout timer, both owned here and ended by
``close``. The login is SASL PLAIN with the connection's user and password, ANONYMOUS without;
the container id is the broker connection's (``<node id>:<name>``) and the open's properties carry
``broker-connection-info = {connectionName, nodeId}``, as Artemis announces its broker
connections (ActiveMQ Artemis documentation, "Broker Connections").

The URI's options per host (Artemis's connector parameters): ``sslEnabled``,
``trustStorePath``/``trustStorePassword``, ``keyStorePath``/``keyStorePassword``,
``verifyHost`` (FerryMQ's ``trustStore``, ``keyStore``, ``verifyHostName`` too),
``connectTimeoutMillis`` (also the time a link attach may take; default 30000) and
``amqpIdleTimeout`` (ms; default 60000, 0 for none).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Mapping

from ferrymq.amqp.peer import PeerEngine
from ferrymq.amqp.peer_events import (
    Drained,
    LinkDown,
    LinkRefused,
    LinkUp,
    PeerClosed,
    PeerEvent,
    PeerOpened,
    Settled,
    Transfer,
)
from ferrymq.client.tls import handshake_failure
from ferrymq.connections.api import LinkOptions, LinkSetupError
from ferrymq.connections.remote_address import RemoteAddress
from ferrymq.connections.remote_links import AmqpRemoteReceiver, AmqpRemoteSender, RemoteLink

__all__ = ["AmqpRemoteConnection", "RemoteConnectError"]

log = logging.getLogger(__name__)

READ_BYTES = 256 * 1024
CLOSE_WAIT_S = 1.0
"""How long ``close`` waits for the peer's close before dropping the socket."""


class RemoteConnectError(ConnectionError):
    """The connection to one host could not be opened (socket, TLS, SASL, the peer's open)."""


class AmqpRemoteConnection:
    """``connections.api.RemoteConnection`` over a socket; open it with ``connect``."""

    def __init__(
        self,
        address: RemoteAddress,
        engine: PeerEngine,
        streams: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    ) -> None:
        self.address = address
        self.url = address.url
        self.container_id = engine.container_id
        self.remote_container_id = ""
        self.remote_properties: Mapping[str, object] = {}
        self.remote_offered_capabilities: tuple[str, ...] = ()
        self.engine = engine
        self._reader, self._writer = streams
        self._links: dict[int, RemoteLink] = {}
        self.attaching = 0
        """Attaches sent and not answered yet."""
        self._opened: asyncio.Future[PeerOpened] = asyncio.get_running_loop().create_future()
        self._closed = asyncio.Event()
        self.error: str | None = None
        """Why the connection ended (None while open, or after a clean close)."""
        self._runner: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._flush_handle: asyncio.Handle | None = None
        self.bytes_sent = self.bytes_received = 0

    # ---- opening ----

    @classmethod
    async def connect(
        cls,
        address: RemoteAddress,
        *,
        container_id: str,
        user: str | None = None,
        password: str | None = None,
        properties: Mapping[str, object] | None = None,
    ) -> AmqpRemoteConnection:
        """Open the socket and the AMQP connection; ``RemoteConnectError`` if either fails."""
        engine = PeerEngine(
            hostname=address.host,
            container_id=container_id,
            login=(user, password or "") if user is not None else None,
            idle_timeout_ms=address.idle_timeout_ms,
            properties=properties,
        )
        stage = "the TCP connection"
        try:
            async with asyncio.timeout(address.connect_timeout_s):
                streams = await _open_socket(address)
                connection = cls(address, engine, streams)
                stage = "the peer's AMQP open"
                await connection._start()
        except TimeoutError:
            raise RemoteConnectError(f"{address.url}: timed out waiting for {stage}") from None
        except RemoteConnectError:
            raise
        except OSError as exc:
            reason = exc.strerror or str(exc) or type(exc).__name__
            raise RemoteConnectError(f"{address.url}: {reason}") from None
        return connection

    async def _start(self) -> None:
        self.engine.open()
        self._flush()
        loop = asyncio.get_running_loop()
        self._runner = loop.create_task(self._run(), name=f"ferrymq-broker-connection {self.url}")
        try:
            opened = await asyncio.shield(self._opened)
        except BaseException:
            await self.close()
            raise
        self.remote_container_id = opened.container_id
        self.remote_properties = opened.properties
        self.remote_offered_capabilities = opened.offered_capabilities
        self._tick()

    # ---- links ----

    async def attach_sender(self, options: LinkOptions) -> AmqpRemoteSender:
        link = AmqpRemoteSender(self, options.name)
        await self._attach(link, options, 0, sender=True)
        return link

    async def attach_receiver(self, options: LinkOptions, *, credit: int) -> AmqpRemoteReceiver:
        link = AmqpRemoteReceiver(self, options.name)
        await self._attach(link, options, credit, sender=False)
        return link

    async def _attach(
        self, link: RemoteLink, spec: LinkOptions, credit: int, *, sender: bool
    ) -> None:
        if self._closed.is_set():
            raise ConnectionError(f"{self.url}: the connection is closed ({self.error})")
        link.id = self.engine.attach(spec, sender=sender, credit=credit)
        self._links[link.id] = link
        self._flush()
        self.attaching += 1
        try:
            async with asyncio.timeout(self.address.connect_timeout_s):
                await link.wait_attached()
        except TimeoutError:
            self.engine.detach(link.id)
            self._links.pop(link.id, None)
            self._flush()
            raise LinkSetupError(
                f"{self.url}: no answer to the attach of link {spec.name!r} within "
                f"{self.address.connect_timeout_s:g} s"
            ) from None
        finally:
            self.attaching -= 1

    def forget(self, link: RemoteLink) -> None:
        """A link's ``close``: detach it."""
        if self._links.pop(link.id, None) is not None:
            self.engine.detach(link.id)
            self._flush()

    async def closed(self) -> None:
        await self._closed.wait()

    @property
    def is_closed(self) -> bool:
        return self._closed.is_set()

    # ---- running ----

    async def _run(self) -> None:
        try:
            await self._read_loop()
        except OSError as exc:
            self._ended(f"connection lost: {exc.strerror or exc}")
        except asyncio.CancelledError:
            self._ended(None)
            raise
        finally:
            self._stop_timers()
            self._writer.transport.abort()

    async def _read_loop(self) -> None:
        while not self.engine.closed:
            data = await self._reader.read(READ_BYTES)
            self.bytes_received += len(data)
            events = self.engine.receive_data(data) if data else self.engine.received_eof()
            self._dispatch(events)
            self._flush()
            if not data:
                break
        refusal = self.engine.refusal()
        self._ended(refusal or self.error or "the peer closed the connection")

    def _dispatch(self, events: list[PeerEvent]) -> None:
        for event in events:
            if isinstance(event, PeerOpened):
                if not self._opened.done():
                    self._opened.set_result(event)
            elif isinstance(event, PeerClosed):
                self._ended(event.error or "the peer closed the connection")
            elif isinstance(event, LinkUp | LinkRefused | LinkDown | Transfer | Drained):
                link = self._links.get(event.link)
                if link is not None:
                    if isinstance(event, LinkDown | LinkRefused):
                        self._links.pop(event.link, None)
                    link.on_event(event)
            elif isinstance(event, Settled):
                link = self._links.get(event.link)
                if link is not None:
                    link.on_event(event)

    def _ended(self, error: str | None) -> None:
        if self._closed.is_set():
            return
        self.error = error
        reason = ConnectionError(f"{self.url}: {error or 'the connection was closed'}")
        if not self._opened.done():
            self._opened.set_exception(RemoteConnectError(str(reason)))
            self._opened.exception()  # retrieved: the opener may be gone
        for link in list(self._links.values()):
            link.on_closed(reason)
        self._links.clear()
        self._closed.set()

    def flush_soon(self) -> None:
        """Write with whatever else this loop turn produces (sends batch into one write)."""
        if self._flush_handle is None:
            self._flush_handle = asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_handle = None
        data = self.engine.data_to_send()
        if data and not self._writer.transport.is_closing():
            self._writer.write(data)
            self.bytes_sent += len(data)

    def _tick(self) -> None:
        """proton's idle-timeout clock: empty frames out, a silent peer detected."""
        self._timer = None
        if self._closed.is_set():
            return
        loop = asyncio.get_running_loop()
        deadline = self.engine.tick(loop.time())
        self._flush()
        self._dispatch(self.engine.events())
        if self.engine.closed:
            self._writer.transport.abort()  # the reader sees the end
        elif deadline:
            self._timer = loop.call_at(deadline, self._tick)

    def _stop_timers(self) -> None:
        for handle in (self._timer, self._flush_handle):
            if handle is not None:
                handle.cancel()
        self._timer = self._flush_handle = None

    # ---- closing ----

    async def close(self) -> None:
        """Close the AMQP connection (waiting briefly for the peer's close) and the socket."""
        if not self._closed.is_set() and not self.engine.closed:
            self.engine.close()
            self._flush()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(CLOSE_WAIT_S):
                    await self._closed.wait()
        self._ended(None)
        runner = self._runner
        if runner is not None and not runner.done():
            runner.cancel()
        if runner is not None:
            await asyncio.wait([runner])
        self._stop_timers()
        self._writer.transport.abort()


async def _open_socket(
    address: RemoteAddress,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    context = address.ssl_context
    try:
        return await asyncio.open_connection(
            address.host,
            address.port,
            ssl=context,
            server_hostname=address.host if context is not None else None,
        )
    except ssl.SSLError as exc:
        raise OSError(0, handshake_failure(exc)) from exc
