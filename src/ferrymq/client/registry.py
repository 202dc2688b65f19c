"""URL scheme -> transport, in one table (ActiveMQ's TransportFactory lookup by scheme).

Schemes FerryMQ will support later (``static``) are refused by name rather than as unknown.
``ssl`` and ``stomp+ssl`` are ``tcp`` over TLS (``client.tls``). ``amqp`` speaks AMQP 1.0
instead of STOMP (``client.amqp_transport``); ``amqps`` and ``amqp+ssl`` (ActiveMQ's name) are
``amqp`` over TLS.
"""

from __future__ import annotations

from collections.abc import Callable

from ferrymq.client.amqp_transport import AmqpTransport
from ferrymq.client.commands import ConnectionInfo
from ferrymq.client.discovery import discovery_transport
from ferrymq.client.errors import BrokerURLError
from ferrymq.client.failover.urls import failover_transport, masterslave_transport
from ferrymq.client.fanout import fanout_transport
from ferrymq.client.tcp import TcpTransport
from ferrymq.client.tcp_options import tcp_options
from ferrymq.client.transport import Transport
from ferrymq.client.vm import VmTransport
from ferrymq.util.uri import URI, AnyURI, URIError, parse_uri

TransportFactory = Callable[[AnyURI, ConnectionInfo], Transport]


def _tcp(uri: AnyURI, info: ConnectionInfo) -> Transport:
    if not isinstance(uri, URI):
        raise BrokerURLError(
            f"{uri.scheme}: names one broker (tcp://HOST:PORT), not a list",
            url=uri.raw or str(uri),
            part=uri.scheme,
        )
    return TcpTransport(uri, info, tcp_options(uri))


def _amqp(uri: AnyURI, info: ConnectionInfo) -> Transport:
    if not isinstance(uri, URI):
        raise BrokerURLError(
            f"{uri.scheme}: names one broker (amqp://HOST:PORT), not a list",
            url=uri.raw or str(uri),
            part=uri.scheme,
        )
    return AmqpTransport(uri, info)


def _vm(uri: AnyURI, info: ConnectionInfo) -> Transport:
    if not isinstance(uri, URI):
        raise BrokerURLError(
            "vm: names one broker (vm://NAME)", url=uri.raw or str(uri), part=uri.scheme
        )
    return VmTransport(uri, info)


TRANSPORTS: dict[str, TransportFactory] = {
    "tcp": _tcp,
    "stomp": _tcp,
    "ssl": _tcp,
    "stomp+ssl": _tcp,
    "failover": failover_transport,
    "discovery": discovery_transport,
    "masterslave": masterslave_transport,
    "fanout": fanout_transport,
    "vm": _vm,
    "amqp": _amqp,
    "amqps": _amqp,
    "amqp+ssl": _amqp,
}
"""Schemes the client can open, lower case."""

PLANNED: frozenset[str] = frozenset({"static"})
"""ActiveMQ schemes FerryMQ will support, refused for now with a message saying so."""


def transport_for(url: str, info: ConnectionInfo) -> Transport:
    """Parse ``url`` and build (not open) the transport its scheme names."""
    try:
        uri = parse_uri(url)
    except URIError as exc:
        raise BrokerURLError(str(exc), url=url, part=exc.part) from None
    scheme = uri.scheme.lower()
    factory = TRANSPORTS.get(scheme)
    if factory is not None:
        return factory(uri, info)
    if scheme in PLANNED:
        raise BrokerURLError(f"the {scheme}: transport is not supported yet", url=url, part=scheme)
    supported = ", ".join(f"{name}:" for name in sorted(TRANSPORTS))
    raise BrokerURLError(
        f"unknown transport scheme {uri.scheme!r} (supported: {supported})",
        url=url,
        part=uri.scheme,
    )
