"""The broker's transport connectors, each served by the protocol adapter its scheme names.

ActiveMQ's ``TransportConnector``: a listener on an address, a name, options (discoveryUri,
updateClusterClients, maximumConnections), and the protocol it speaks, chosen by the URI's
scheme (``tcp://``, ``stomp://``, ``nio://`` speak STOMP in FerryMQ, so the seeds' connectors
work unchanged; ``amqp://`` will name the AMQP 1.0 adapter). ``ws://`` and ``wss://`` serve
their adapter over WebSocket (``transport.websocket``), one protocol frame per message.
``ssl://``, ``stomp+ssl://``, ``stomp+nio+ssl://`` (and the other ``+ssl`` schemes) serve their
plain scheme's adapter over TLS, with the broker's ``<sslContext>`` (``transport.tls``).
``vm://`` connections of this process are served the same way, over one end of a socket pair.

A ``vm://NAME`` transport connector opens no socket: it registers the broker under NAME for the
clients of this process (``ferrymq.util.vm``), as ActiveMQ's binds a VM transport server under
that name. Every broker is reachable as ``vm://<brokerName>`` anyway; the connector adds a name,
and its connections carry its name and STOMP limits. A name another broker of the process holds
is an error, as in ActiveMQ ("already bound"), where the broker's own names are best effort.

A WebSocket listener serves the browser pages its ``allowedOrigins`` option names (``*``: any).
Without the option it serves any page when logging in takes a password the page would need,
and no page when it does not (``login_without_secret``): a page the user visits would otherwise
connect with the browser's client certificate, or from the user's machine to a broker that
asks for nothing. A client without ``Origin`` (not a browser) is never concerned.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from collections.abc import Collection, Sequence
from typing import Protocol

from ferrymq.config.jaas import CERTIFICATE_MODULE, GUEST_MODULE
from ferrymq.config.model import BrokerConfig, TransportConnectorConfig
from ferrymq.config.security import (
    JaasCertificateAuthenticationConfig,
    SecurityConfig,
    SimpleAuthenticationConfig,
)
from ferrymq.config.tls import SslContextConfig
from ferrymq.config.xml_transport import TLS_WEBSOCKET_SCHEMES, WEBSOCKET_SCHEMES
from ferrymq.service.connection import BrokerConnection
from ferrymq.service.errors import bind_error
from ferrymq.transport.connection import TransportConnection
from ferrymq.transport.tcp import TcpListener
from ferrymq.transport.tls import LISTENER_SCHEMES, TlsError, server_context
from ferrymq.transport.websocket import WebSocketListener
from ferrymq.util import vm
from ferrymq.util.origins import (
    ALLOWED_ORIGINS_OPTION,
    ANY_ORIGIN,
    NO_BROWSER_PAGE,
    OriginPolicy,
)
from ferrymq.util.uri import redact_url

log = logging.getLogger(__name__)


class ListenerError(Exception):
    """A listener that cannot be started (its scheme, its options); says which and why."""


class ProtocolAdapter(Protocol):
    """A wire protocol the broker serves (``ferrymq.adapters``), chosen by URI scheme."""

    @property
    def name(self) -> str:
        """The protocol's name in logs ("STOMP", "AMQP")."""

    @property
    def schemes(self) -> Collection[str]:
        """The transport connector schemes it serves, as ActiveMQ names them; "vm" for the
        in-process connections of ``vm://``."""

    def accept(self, connector: TransportConnectorConfig | None) -> BrokerConnection:
        """A connection for a socket accepted by ``connector`` (None: ``vm://``), with its
        protocol converter attached."""


def published_url(listener: TcpListener, scheme: str = "tcp") -> str:
    """The URL clients should use for a listener: its address, or the host name when it is
    bound to every interface (ActiveMQ's default publishedAddressPolicy)."""
    host = listener.host
    if host in ("0.0.0.0", "::", ""):
        host = socket.gethostname()
    return f"{scheme}://{host}:{listener.port}"


class Listeners:
    """The listeners one broker serves, with their configuration, in start order."""

    def __init__(
        self,
        adapters: Sequence[ProtocolAdapter],
        ssl_context: SslContextConfig | None = None,
        *,
        login_without_secret: bool = True,
    ) -> None:
        self._adapters = {scheme: adapter for adapter in adapters for scheme in adapter.schemes}
        self._ssl_context = ssl_context
        """The broker's ``<sslContext>``: the key of every TLS listener."""
        self._login_without_secret = login_without_secret
        """Whether a client may log in with nothing a web page lacks (``login_without_secret``):
        then a WebSocket listener serves no browser page unless ``allowedOrigins`` says so."""
        self.served: list[tuple[TransportConnectorConfig, TcpListener]] = []
        """Each configured listener with its configuration (discoveryUri, cluster updates)."""
        self.vm_served: list[VmConnector] = []
        """The ``vm://NAME`` connectors, which open no socket."""

    @classmethod
    def of(cls, config: BrokerConfig, adapters: Sequence[ProtocolAdapter]) -> Listeners:
        """A broker's listeners: its key, and the origin rule its kind of login calls for."""
        without_secret = login_without_secret(config.security)
        return cls(adapters, config.ssl_context, login_without_secret=without_secret)

    @property
    def listeners(self) -> list[TcpListener]:
        return [listener for _, listener in self.served]

    @property
    def ports(self) -> list[int]:
        return [listener.port for _, listener in self.served]

    def adapter(self, scheme: str) -> ProtocolAdapter:
        adapter = self._adapters.get(scheme)
        if adapter is None:
            served = {a.name: [s for s in a.schemes if s != "vm"] for a in self._adapters.values()}
            offered = "; ".join(
                f"{name} on {', '.join(s + '://' for s in schemes)}"
                for name, schemes in served.items()
            )
            raise ListenerError(
                f"scheme {scheme}:// is not supported yet (FerryMQ serves {offered})"
            )
        return adapter

    async def start(self, connector: TransportConnectorConfig) -> TcpListener | None:
        """Start one connector: its listener, or None for ``vm://NAME``, which has none."""
        try:
            adapter = self.adapter(self._plain_scheme(connector.scheme))
            tls = self._tls(connector)
            origins = origin_policy(connector, self._login_without_secret)
        except (ListenerError, TlsError, ValueError) as exc:
            raise ListenerError(f"transport connector {connector.display_name}: {exc}") from None
        if connector.scheme.lower() == "vm":
            self.vm_served.append(VmConnector.bind(connector, adapter))
            return None
        listener = _listener(connector, adapter, tls, origins)
        try:
            await listener.start()
        except OSError as exc:
            where = connector.location
            move = (
                "choose another port with --listen"
                if where is None
                else f"change the port of transport connector {connector.display_name} at {where}"
            )
            what = f"transport connector {connector.display_name}"
            raise bind_error(what, listener.host, connector.port, exc, move) from exc
        self.served.append((connector, listener))
        log.info(
            "listening for %s on %s:%d (%s)",
            adapter.name,
            listener.host,
            listener.port,
            redact_url(connector.uri),
        )
        return listener

    def _plain_scheme(self, scheme: str) -> str:
        """A TLS scheme no adapter names itself (``stomp+ssl``) is its plain scheme's protocol
        over TLS."""
        scheme = scheme.lower()
        if scheme not in self._adapters and scheme in LISTENER_SCHEMES:
            return LISTENER_SCHEMES[scheme]
        return scheme

    def _tls(self, connector: TransportConnectorConfig) -> ssl.SSLContext | None:
        scheme = connector.scheme.lower()
        if scheme not in LISTENER_SCHEMES and scheme not in TLS_WEBSOCKET_SCHEMES:
            return None
        return server_context(self._ssl_context, connector.options)

    async def stop(self) -> None:
        for bound in reversed(self.vm_served):
            bound.unbind()
        self.vm_served.clear()
        for _, listener in reversed(self.served):
            await listener.stop()
        self.served.clear()

    async def open_vm_socket(self) -> socket.socket:
        """``vm://``: serve one end of a socket pair as a connection, return the other."""
        return await _serve_pair(self.adapter("vm").accept(None))

    def cluster_url(self) -> str | None:
        """The URL failover clients use for this broker, given to peers over bridges: the
        first listener that updates cluster clients, else the first (ActiveMQ's
        ``getDefaultSocketURIString``)."""
        for connector, listener in self.served:
            if connector.update_cluster_clients or connector.rebalance_cluster_clients:
                return published_url(listener, connector.scheme)
        if self.served:
            connector, listener = self.served[0]
            return published_url(listener, connector.scheme)
        return None


WEBSOCKET_HEADROOM_BYTES = 1024 * 1024
"""How much larger than the connector's frame limit a WebSocket message may be: a frame over the
limit by up to this much still reaches the protocol, which refuses it as it does over TCP (STOMP:
an ERROR); a larger message fails the WebSocket (close code 1009, "message too big")."""


def login_without_secret(security: SecurityConfig | None) -> bool:
    """Whether the configuration lets a client in without a secret a web page would have to
    know: no authentication, anonymous or guest access, or a TLS client certificate (which the
    browser presents to any page's connection)."""
    authentication = None if security is None else security.authentication
    if authentication is None or isinstance(authentication, JaasCertificateAuthenticationConfig):
        return True
    if isinstance(authentication, SimpleAuthenticationConfig):
        return authentication.anonymous_access_allowed
    ambient = (CERTIFICATE_MODULE, GUEST_MODULE)  # what is left: a JAAS login.config entry
    return any(module.class_name in ambient for module in authentication.login.modules)


def origin_policy(connector: TransportConnectorConfig, login_without_secret: bool) -> OriginPolicy:
    """The browser pages a WebSocket connector serves: its ``allowedOrigins`` (checked when the
    configuration was read), else none when a page could log in without a secret, else any."""
    text = connector.options.get(ALLOWED_ORIGINS_OPTION)
    if text is not None:
        try:
            return OriginPolicy.parse(text)
        except ValueError as exc:
            raise ValueError(f"URI option {ALLOWED_ORIGINS_OPTION}: {exc}") from None
    return NO_BROWSER_PAGE if login_without_secret else ANY_ORIGIN


def _listener(
    connector: TransportConnectorConfig,
    adapter: ProtocolAdapter,
    tls: ssl.SSLContext | None,
    origins: OriginPolicy = NO_BROWSER_PAGE,
) -> TcpListener:
    """The socket listener of ``connector``: plain, TLS, or speaking WebSocket (``ws``,
    ``wss``) with the adapter's subprotocols."""
    host = connector.host or "0.0.0.0"

    def handlers() -> BrokerConnection:
        return adapter.accept(connector)

    if connector.scheme.lower() not in WEBSOCKET_SCHEMES:
        return TcpListener(
            host,
            connector.port,
            handlers,
            maximum_connections=connector.maximum_connections,
            name=connector.display_name,
            ssl_context=tls,
        )
    limits = connector.stomp
    listener = WebSocketListener(
        host,
        connector.port,
        handlers,
        subprotocols=getattr(adapter, "websocket_subprotocols", ()),
        max_message_bytes=(limits.max_frame_size or limits.max_data_length)
        + WEBSOCKET_HEADROOM_BYTES,
        maximum_connections=connector.maximum_connections,
        name=connector.display_name,
        ssl_context=tls,
    )
    listener.origins = origins
    return listener


class VmConnector:
    """A ``vm://NAME`` transport connector: NAME registered for the clients of this process."""

    def __init__(self, connector: TransportConnectorConfig, adapter: ProtocolAdapter) -> None:
        self.connector = connector
        self.name = connector.host
        self._adapter = adapter

    @classmethod
    def bind(cls, connector: TransportConnectorConfig, adapter: ProtocolAdapter) -> VmConnector:
        bound = cls(connector, adapter)
        if not vm.register((bound.name,), bound.open):
            raise ListenerError(
                f"transport connector {connector.display_name}: vm://{bound.name} is already "
                "bound in this process, by another broker or connector (choose another name)"
            )
        log.info("serving %s in this process as vm://%s", adapter.name, bound.name)
        return bound

    def unbind(self) -> None:
        vm.unregister((self.name,), self.open)

    async def open(self) -> socket.socket:
        """A connection of this connector, over a socket pair; returns the client's end."""
        return await _serve_pair(self._adapter.accept(self.connector))


async def _serve_pair(handler: BrokerConnection) -> socket.socket:
    """Serve one end of a new socket pair as an accepted connection; return the other."""
    ours, theirs = socket.socketpair()
    try:
        await asyncio.get_running_loop().connect_accepted_socket(
            lambda: TransportConnection(handler), ours
        )
    except BaseException:
        ours.close()
        theirs.close()
        raise
    return theirs
