"""``multicast://default`` and ``multicast://ADDRESS:PORT?group=NAME&...``: brokers that find
each other by IP multicast, interoperable with ActiveMQ 5.x (reference §3.4, seed 002 "Multicast
discovery agent").

Every keep-alive interval the agent sends an ``alive`` datagram (``datagram``) for each service
registered with it, and it reads the datagrams of its group from everyone on the group address:
a service heard for the first time is announced to the listener (and the agent advertises its
own at once, so the newcomer hears it without waiting), one unheard for ten intervals or that
sent ``dead`` is removed, and one its user reported failed is held back for a while
(``multicast_services``). Its own services are never announced: a broker must not discover
itself. On stop it sends one ``dead`` datagram per service.

Many agents share one group and port on a host, in one process or many (``SO_REUSEADDR`` and
``SO_REUSEPORT``): a broker advertises each listener through its own agent and runs another for
each network connector. Each socket is bound to the group address, so it receives nothing sent
to another group address on the same port.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import logging
import socket
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from ferrymq.client import DiscoveryListener
from ferrymq.discovery import datagram
from ferrymq.discovery.multicast_options import MulticastOptions, multicast_options
from ferrymq.discovery.multicast_services import Heard, RemoteServices
from ferrymq.util.uri import AnyURI

log = logging.getLogger(__name__)

CLOSE_TIMEOUT_S: Final = 1.0
"""How long ``stop`` waits for the ``dead`` datagrams to leave before giving up on them."""


@dataclass(frozen=True, slots=True)
class MulticastStatistics:
    sent: int
    """Datagrams sent (alive and dead)."""
    received: int
    """Datagrams read, of every group."""
    ignored: int
    """Of those, the ones of another group (or not discovery datagrams at all)."""
    malformed: int
    """Of those, the ones of this group without ActiveMQ's shape, or too long."""
    services: tuple[str, ...]
    """The remote services known now, except those held back after ``service_failed``."""


class MulticastDiscoveryAgent:
    """ActiveMQ's ``MulticastDiscoveryAgent`` on an asyncio datagram endpoint."""

    def __init__(self, options: MulticastOptions, *, name: str | None = None) -> None:
        self.options = options
        self.name = name if name is not None else options.uri
        """The agent URI as written, for messages."""
        self._own: dict[str, bytes] = {}
        self._services = RemoteServices(options, self._own.keys())
        self._listener: DiscoveryListener | None = None
        self._transport: asyncio.DatagramTransport | None = None
        self._closed: asyncio.Future[None] | None = None
        self._keeper: asyncio.Task[None] | None = None
        self._started = self._stopped = False
        self._send_failed = False
        self._sent = self._received = self._ignored = self._malformed = 0

    # ---- DiscoveryAgent ----

    def register_service(self, uri: str) -> None:
        packet = datagram.alive(self.options.group, uri)
        if len(packet) > min(self.options.datagram_size, datagram.MAX_DATAGRAM_BYTES):
            log.warning(
                "%s: the datagram advertising %s has %d bytes; agents that read at most %d "
                "(ActiveMQ: %d) will not understand it",
                self.name,
                uri,
                len(packet),
                self.options.datagram_size,
                datagram.MAX_DATAGRAM_BYTES,
            )
        self._own[uri] = packet
        if self._transport is not None and not self._stopped:
            self._send(packet)

    async def start(self, listener: DiscoveryListener | None) -> None:
        if self._started or self._stopped:
            raise RuntimeError(f"{self.name}: an agent starts once")
        self._started = True
        sock = open_socket(self.options, self.name)
        loop = asyncio.get_running_loop()
        self._closed = loop.create_future()
        try:
            transport, _ = await loop.create_datagram_endpoint(lambda: _Endpoint(self), sock=sock)
        except BaseException:
            sock.close()
            raise
        self._transport = transport
        self._listener = listener
        self._advertise()
        self._keeper = loop.create_task(self._keep_alive(), name=f"ferrymq-multicast {self.name}")
        log.info(
            "%s: %s group %r on %s:%d (interface %s)",
            self.name,
            "listening to" if listener is not None else "advertising in",
            self.options.group,
            self.options.address,
            self.options.port,
            self.options.interface or "chosen by the routing table",
        )

    async def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._listener = None
        keeper, self._keeper = self._keeper, None
        transport, self._transport = self._transport, None
        try:
            if keeper is not None:
                keeper.cancel()
                await asyncio.wait([keeper])
                if not keeper.cancelled() and keeper.exception() is not None:
                    log.error("%s: keep-alive task failed", self.name, exc_info=keeper.exception())
        finally:
            if transport is not None:
                for uri in self._own:
                    self._send(datagram.dead(self.options.group, uri), transport)
                transport.close()
        if transport is not None and self._closed is not None:
            # The dead datagrams are flushed before the socket closes.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._closed), CLOSE_TIMEOUT_S)

    def service_failed(self, uri: str) -> None:
        if not self._stopped and self._started:
            hold_back(self._services, self._listener, uri, name=self.name)

    def statistics(self) -> MulticastStatistics:
        return MulticastStatistics(
            sent=self._sent,
            received=self._received,
            ignored=self._ignored,
            malformed=self._malformed,
            services=tuple(self._services.announced()),
        )

    # ---- the keep-alive task and the datagram endpoint ----

    async def _keep_alive(self) -> None:
        interval_s = self.options.keep_alive_interval_ms / 1000
        loop = asyncio.get_running_loop()
        due = loop.time() + interval_s
        while True:
            await asyncio.sleep(interval_s)
            now = loop.time()
            late_s, due = now - due, now + interval_s
            self._advertise()
            if late_s > interval_s:
                # The event loop could not run us, nor read datagrams, for over an interval:
                # read what arrived meanwhile before deciding that anyone fell silent.
                log.debug("%s: woke %.3f s late; expiry waits a round", self.name, late_s)
                continue
            for uri in self._services.expire(now):
                expiry_ms = self.options.expiry_ms
                log.info("%s: %s expired (unheard for %d ms)", self.name, uri, expiry_ms)
                self._tell(uri, added=False)

    def _advertise(self) -> None:
        for packet in self._own.values():
            self._send(packet)

    def _send(self, packet: bytes, transport: asyncio.DatagramTransport | None = None) -> None:
        transport = transport if transport is not None else self._transport
        if transport is None:
            return
        transport.sendto(packet, (self.options.address, self.options.port))
        self._sent += 1

    def datagram_received(self, data: bytes) -> None:
        self._received += 1
        if len(data) > self.options.datagram_size:
            self._malformed += 1
            log.debug("%s: dropped a %d-byte datagram (datagramSize)", self.name, len(data))
            return
        try:
            heard = datagram.decode(data, self.options.group)
        except datagram.DatagramError as exc:
            self._malformed += 1
            log.debug("%s: dropped a datagram: %s: %r", self.name, exc, data[:200])
            return
        if heard is None:
            self._ignored += 1
            return
        if self._stopped:
            return
        if heard.kind is datagram.Kind.DEAD:
            if self._services.dead(heard.service):
                log.info("%s: %s is dead", self.name, heard.service)
                self._tell(heard.service, added=False)
            return
        match self._services.alive(heard.service, asyncio.get_running_loop().time()):
            case Heard.NEW:
                log.info("%s: discovered %s", self.name, heard.service)
                self._tell(heard.service, added=True)
                self._advertise()
            case Heard.RECOVERED:
                log.info("%s: announcing %s again", self.name, heard.service)
                self._tell(heard.service, added=True)
            case Heard.OWN | Heard.KNOWN:
                pass

    def error_received(self, exc: OSError) -> None:
        if not self._send_failed:
            self._send_failed = True
            log.warning("%s: sending failed: %s (reported once)", self.name, exc)
        else:
            log.debug("%s: sending failed: %s", self.name, exc)

    def connection_lost(self) -> None:
        if self._closed is not None and not self._closed.done():
            self._closed.set_result(None)

    def _tell(self, uri: str, *, added: bool) -> None:
        tell(self._listener, uri, added=added, name=self.name)


def hold_back(
    services: RemoteServices, listener: DiscoveryListener | None, uri: str, *, name: str
) -> None:
    """``service_failed`` for an agent that keeps a ``RemoteServices`` table: hold ``uri`` back
    and tell the listener it is gone (nothing if it is unknown or already held back)."""
    if services.failed(uri, asyncio.get_running_loop().time()):
        delay = services.recovery_delay_ms(services.services[uri].failures)
        log.info("%s: %s failed; not announced again for %d ms", name, uri, delay)
        tell(listener, uri, added=False, name=name)


def tell(listener: DiscoveryListener | None, uri: str, *, added: bool, name: str) -> None:
    """Tell an agent's listener (if any) that ``uri`` came or went; a listener that raises is
    logged, and the agent goes on."""
    if listener is None:
        return
    try:
        if added:
            listener.on_service_add(uri)
        else:
            listener.on_service_remove(uri)
    except Exception:
        log.exception("%s: the listener failed on %s", name, uri)


class _Endpoint(asyncio.DatagramProtocol):
    def __init__(self, agent: MulticastDiscoveryAgent) -> None:
        self.agent = agent

    def datagram_received(self, data: bytes, addr: tuple[str | bytes, int]) -> None:
        self.agent.datagram_received(data)

    def error_received(self, exc: Exception) -> None:
        if isinstance(exc, OSError):
            self.agent.error_received(exc)
        else:
            log.error("%s: %r", self.agent.name, exc)

    def connection_lost(self, exc: Exception | None) -> None:
        self.agent.connection_lost()


def open_socket(options: MulticastOptions, name: str) -> socket.socket:
    """A non-blocking UDP socket bound to the group, joined to it and set up to send to it;
    ``OSError`` naming the agent, the step and the interface when this host cannot."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.setblocking(False)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if hasattr(socket, "SO_REUSEPORT"):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        ip = socket.IPPROTO_IP
        with _step(name, f"bind {options.address}:{options.port}"):
            sock.bind((options.address, options.port))
        if options.time_to_live >= 0:
            sock.setsockopt(ip, socket.IP_MULTICAST_TTL, options.time_to_live)
        sock.setsockopt(ip, socket.IP_MULTICAST_LOOP, 0 if options.loop_back_mode else 1)
        if options.interface is not None:
            with _step(name, "send to the group", interface=options.interface):
                sock.setsockopt(ip, socket.IP_MULTICAST_IF, _interface_request(options.interface))
        with _step(name, f"join the group {options.address}", interface=options.join_on):
            request = _membership_request(options.address, options.join_on)
            sock.setsockopt(ip, socket.IP_ADD_MEMBERSHIP, request)
    except BaseException:
        sock.close()
        raise
    return sock


@contextlib.contextmanager
def _step(name: str, what: str, *, interface: str | None = "") -> Iterator[None]:
    """Turn an ``OSError`` of one step into one naming the agent, the step and the interface
    (``None``: the default one; ``""``: none involved)."""
    try:
        yield
    except OSError as exc:
        on = ""
        if interface is None:
            on = " on the default interface"
        elif interface:
            on = f" on interface {interface}"
        cause = exc.strerror or str(exc)
        hint = ""
        if interface is None and exc.errno in (errno.ENODEV, errno.ENETUNREACH):
            hint = " (no multicast route on this host? pin an interface: networkInterface=NAME)"
        raise OSError(exc.errno, f"{name}: cannot {what}{on}: {cause}{hint}") from exc


def _interface(interface: str) -> ipaddress.IPv4Address | int:
    """An interface option: its IPv4 address, or the index of the interface it names."""
    try:
        return ipaddress.IPv4Address(interface)
    except ValueError:
        pass
    try:
        return socket.if_nametoindex(interface)
    except OSError:
        raise OSError(errno.ENODEV, f"no interface named {interface!r} on this host") from None


def _interface_request(interface: str) -> bytes:
    """IP_MULTICAST_IF's argument: ``struct in_addr``, or Linux's ``struct ip_mreqn`` for an
    interface given by name."""
    found = _interface(interface)
    if isinstance(found, ipaddress.IPv4Address):
        return found.packed
    return struct.pack("=4s4si", bytes(4), bytes(4), found)


def _membership_request(group: str, interface: str | None) -> bytes:
    """IP_ADD_MEMBERSHIP's argument: ``struct ip_mreq`` or, by name, ``struct ip_mreqn``."""
    packed_group = ipaddress.IPv4Address(group).packed
    if interface is None:
        return packed_group + bytes(4)
    found = _interface(interface)
    if isinstance(found, ipaddress.IPv4Address):
        return packed_group + found.packed
    return struct.pack("=4s4si", packed_group, bytes(4), found)


def create_agent(agent_uri: AnyURI, url: str) -> MulticastDiscoveryAgent:
    """The ``ferrymq.discovery_agents`` entry point for ``multicast``."""
    return MulticastDiscoveryAgent(
        multicast_options(agent_uri, url=url), name=agent_uri.raw or str(agent_uri)
    )
