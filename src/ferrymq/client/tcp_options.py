"""The options of a ``tcp://`` (``stomp://``, ``ssl://``, ``stomp+ssl://``) URL, checked."""

from __future__ import annotations

import ssl
from dataclasses import dataclass, replace

from ferrymq.client.errors import BrokerURLError
from ferrymq.client.tls import OPTIONS as TLS_OPTIONS
from ferrymq.client.tls import tls_context
from ferrymq.util.uri import URI

__all__ = ["MAX_INACTIVITY", "TcpOptions", "tcp_options"]

MAX_INACTIVITY = "wireFormat.maxInactivityDuration"


@dataclass(frozen=True, slots=True)
class TcpOptions:
    """The options a ``tcp://`` URL may carry, by their ActiveMQ names."""

    connection_timeout_s: float | None = 30.0
    """``connectionTimeout`` (ms, 0 = none): the TCP connect alone, as in ActiveMQ."""
    keep_alive: bool = False
    """``keepAlive``: SO_KEEPALIVE on the socket."""
    tcp_no_delay: bool = True
    """``tcpNoDelay``: TCP_NODELAY (asyncio's default; frames are already coalesced)."""
    ssl_context: ssl.SSLContext | None = None
    """``ssl://`` and ``stomp+ssl://``: the TLS context of the connection (``client.tls``)."""
    max_inactivity_ms: int | None = None
    """``wireFormat.maxInactivityDuration`` (ms, 0 = off): ActiveMQ's inactivity monitor,
    here the STOMP heart-beat both ways (``heart-beat: N,N``) in place of the connection's
    own; seed 000 Example 2.4 sets it on every member of a failover URL."""


def tcp_options(uri: URI) -> TcpOptions:
    """Check a plain URL and read its options; anything unknown is an error naming it."""
    raw = uri.raw or str(uri)
    if uri.host is None or uri.host == "":
        raise BrokerURLError("a host is required (tcp://HOST:PORT)", url=raw, part=raw)
    if uri.userinfo is not None:
        raise BrokerURLError(
            "credentials in the URL are not supported; pass login= and passcode=",
            url=raw,
            part=uri.userinfo,
        )
    if uri.path not in ("", "/"):
        raise BrokerURLError("a broker URL has no path", url=raw, part=uri.path)
    query, context = tls_context(uri.scheme, uri.query, url=raw)
    options = TcpOptions(ssl_context=context)
    for name, value in query.items():
        options = _option(options, uri.scheme, name, value, raw)
    return options


def _option(options: TcpOptions, scheme: str, name: str, value: str, raw: str) -> TcpOptions:
    if name in ("connectionTimeout", MAX_INACTIVITY):
        if not (value.isascii() and value.isdigit()):
            raise BrokerURLError(
                f"option {name} must be milliseconds, got {value!r}", url=raw, part=name
            )
        if name == MAX_INACTIVITY:
            return replace(options, max_inactivity_ms=int(value))
        return replace(options, connection_timeout_s=int(value) / 1000 or None)
    if name in ("keepAlive", "tcpNoDelay"):
        if value.lower() not in ("true", "false"):
            raise BrokerURLError(
                f"option {name} must be true or false, got {value!r}", url=raw, part=name
            )
        flag = value.lower() == "true"
        if name == "keepAlive":
            return replace(options, keep_alive=flag)
        return replace(options, tcp_no_delay=flag)
    known = f"connectionTimeout, keepAlive, tcpNoDelay, {MAX_INACTIVITY}"
    if options.ssl_context is not None:
        known += ", " + ", ".join(TLS_OPTIONS)
    raise BrokerURLError(
        f"unknown option {name!r} for {scheme}: (known: {known})", url=raw, part=name
    )
