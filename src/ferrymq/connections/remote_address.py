"""The hosts of a broker connection's ``uri``: the primary and its ``#`` alternates.

``tcp://A:5672?opts#tcp://B:5672,C:5672`` (ActiveMQ Artemis documentation, "Broker
Connections", reconnecting and failover): the part after ``#`` lists alternate hosts, comma
separated, tried in turn. An alternate written without a scheme takes the primary's; each host
keeps only its own options (TLS on the primary alone is allowed). The configuration's
``connection_endpoints`` splits the list (the loader checks it with file and line); this adds
each host's connection options. A bad URI is one line naming the part and how to write it.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field

from ferrymq.config.broker_connections import connection_endpoints
from ferrymq.util.tls import TlsError, cached_client_context, client_options
from ferrymq.util.uri import URI, URIError, parse_uri, redact_url

__all__ = ["RemoteAddress", "RemoteURIError", "parse_hosts"]

TLS_SCHEMES = frozenset({"amqps"})
DEFAULT_CONNECT_TIMEOUT_MS = 30000
DEFAULT_IDLE_TIMEOUT_MS = 60000
_TLS_NAMES = {
    "trustStorePath": "trustStore",
    "keyStorePath": "keyStore",
    "verifyHost": "verifyHostName",
}
"""Artemis's connector parameter names -> the TLS option names FerryMQ's URLs take."""
_EXAMPLE = "write it as tcp://host:port[?options][#tcp://host2:port,host3:port]"


class RemoteURIError(ValueError):
    """A broker connection's ``uri`` that cannot be used; the text is the one line to show."""


@dataclass(frozen=True, slots=True)
class RemoteAddress:
    """One host of the list, with its own options."""

    scheme: str
    host: str
    port: int
    options: Mapping[str, str] = field(default_factory=dict, repr=False)
    ssl_context: ssl.SSLContext | None = field(default=None, repr=False, compare=False)
    connect_timeout_ms: int = DEFAULT_CONNECT_TIMEOUT_MS
    idle_timeout_ms: int = DEFAULT_IDLE_TIMEOUT_MS

    @property
    def url(self) -> str:
        """``scheme://host:port``: what logs and the admin API show (no options, no secret)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"

    @property
    def connect_timeout_s(self) -> float:
        return self.connect_timeout_ms / 1000


def parse_hosts(uri: str) -> list[RemoteAddress]:
    """The primary and its alternates, in order; ``RemoteURIError`` for anything wrong."""
    try:
        endpoints = connection_endpoints(uri)
    except ValueError as exc:
        raise RemoteURIError(f"broker connection uri {redact_url(uri)!r}: {exc}") from None
    return [_address(endpoint) for endpoint in endpoints]


def _address(text: str) -> RemoteAddress:
    shown = redact_url(text)
    try:
        parsed = parse_uri(text)
    except URIError as exc:
        message = f"broker connection uri {shown!r}: {exc.message}; {_EXAMPLE}"
        raise RemoteURIError(message) from None
    if not isinstance(parsed, URI) or not parsed.host or parsed.port is None:
        raise RemoteURIError(f"broker connection uri {shown!r} is not a host address: {_EXAMPLE}")
    scheme = parsed.scheme.lower()
    options = dict(parsed.query)
    return RemoteAddress(
        scheme=scheme,
        host=parsed.host,
        port=parsed.port,
        options=options,
        ssl_context=_tls_context(options, shown) if _tls(scheme, options, shown) else None,
        connect_timeout_ms=_millis(options, "connectTimeoutMillis", shown),
        idle_timeout_ms=_millis(options, "amqpIdleTimeout", shown),
    )


def _tls(scheme: str, options: Mapping[str, str], shown: str) -> bool:
    return scheme in TLS_SCHEMES or _flag(options, "sslEnabled", shown)


def _flag(options: Mapping[str, str], name: str, shown: str) -> bool:
    value = options.get(name, "false").lower()
    if value not in ("true", "false"):
        raise RemoteURIError(f"broker connection uri {shown!r}: {name} must be true or false")
    return value == "true"


def _millis(options: Mapping[str, str], name: str, shown: str) -> int:
    default = DEFAULT_CONNECT_TIMEOUT_MS if name == "connectTimeoutMillis" else 0
    default = DEFAULT_IDLE_TIMEOUT_MS if name == "amqpIdleTimeout" else default
    text = options.get(name)
    if text is None:
        return default
    if not text.strip().isdigit():
        raise RemoteURIError(
            f"broker connection uri {shown!r}: {name} must be milliseconds, got {text!r}"
        )
    return int(text)


def _tls_context(options: Mapping[str, str], shown: str) -> ssl.SSLContext:
    query = {_TLS_NAMES.get(name, name): value for name, value in options.items()}
    try:
        return cached_client_context(client_options(query))
    except TlsError as exc:
        raise RemoteURIError(f"broker connection uri {shown!r}: {exc}") from None
