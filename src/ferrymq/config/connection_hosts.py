"""The hosts of a broker connection's `uri` and each host's options, read once for both sides.

The loader checks a `<amqp-connection uri>` with this (so `check-config` reports a bad option
with file and line) and the runtime (`connections.remote_address`) builds its addresses from
the same reading, so the two can never disagree on what a URI means. Options are Artemis's
connector parameters (ActiveMQ Artemis documentation, "Configuring the Transport"):
`sslEnabled`, `trustStorePath`, `trustStorePassword`, `keyStorePath`, `keyStorePassword`,
`verifyHost`, `connectTimeoutMillis` and `amqpIdleTimeout`.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field

from ferrymq.config.broker_connections import connection_endpoints
from ferrymq.util.tls import TlsError, TlsOptions, cached_client_context, client_options
from ferrymq.util.uri import URI, URIError, parse_uri, redact_url

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT_MS",
    "DEFAULT_IDLE_TIMEOUT_MS",
    "ConnectionHost",
    "ConnectionURIError",
    "check_connection_uri",
    "connection_hosts",
]

TLS_SCHEMES = frozenset({"amqps"})
DEFAULT_CONNECT_TIMEOUT_MS = 30000
DEFAULT_IDLE_TIMEOUT_MS = 60000
_DEFAULT_MS = {
    "connectTimeoutMillis": DEFAULT_CONNECT_TIMEOUT_MS,
    "amqpIdleTimeout": DEFAULT_IDLE_TIMEOUT_MS,
}
_TLS_NAMES = {
    "trustStorePath": "trustStore",
    "keyStorePath": "keyStore",
    "verifyHost": "verifyHostName",
}
"""Artemis's connector parameter names -> the TLS option names FerryMQ's URLs take."""
_EXAMPLE = "write it as tcp://host:port[?options][#tcp://host2:port,host3:port]"


class ConnectionURIError(ValueError):
    """A broker connection's `uri` that cannot be used. `str()` is the one line to show;
    `detail` is what is wrong without the URI (the loader already names the attribute)."""

    def __init__(self, shown: str, detail: str) -> None:
        super().__init__(f"broker connection uri {shown!r}: {detail}")
        self.shown = shown
        self.detail = detail


@dataclass(frozen=True, slots=True)
class ConnectionHost:
    """One host of the list, with its own options read."""

    scheme: str
    host: str
    port: int
    shown: str
    """The host's URI with any password masked: what an error names."""
    options: Mapping[str, str] = field(default_factory=dict, repr=False)
    tls: TlsOptions | None = field(default=None, repr=False)
    """The TLS settings when the host is reached over TLS (`amqps://` or `sslEnabled=true`)."""
    connect_timeout_ms: int = DEFAULT_CONNECT_TIMEOUT_MS
    idle_timeout_ms: int = DEFAULT_IDLE_TIMEOUT_MS

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context (its key and trust files read, once per process), or None."""
        if self.tls is None:
            return None
        try:
            return cached_client_context(self.tls)
        except TlsError as exc:
            raise ConnectionURIError(self.shown, str(exc)) from None


def connection_hosts(uri: str) -> list[ConnectionHost]:
    """The primary and its alternates, in order; `ConnectionURIError` for anything wrong."""
    try:
        endpoints = connection_endpoints(uri)
    except ValueError as exc:
        raise ConnectionURIError(redact_url(uri), str(exc)) from None
    return [_host(endpoint) for endpoint in endpoints]


def check_connection_uri(uri: str) -> None:
    """Everything the runtime will need of `uri`, TLS files included, checked now."""
    for host in connection_hosts(uri):
        host.ssl_context()


def _host(text: str) -> ConnectionHost:
    shown = redact_url(text)
    try:
        parsed = parse_uri(text)
    except URIError as exc:
        raise ConnectionURIError(shown, f"{exc.message}; {_EXAMPLE}") from None
    if not isinstance(parsed, URI) or not parsed.host or parsed.port is None:
        raise ConnectionURIError(shown, f"not a host address: {_EXAMPLE}")
    scheme = parsed.scheme.lower()
    options = dict(parsed.query)
    return ConnectionHost(
        scheme=scheme,
        host=parsed.host,
        port=parsed.port,
        shown=shown,
        options=options,
        tls=_tls_options(options, shown) if _tls(scheme, options, shown) else None,
        connect_timeout_ms=_millis(options, "connectTimeoutMillis", shown),
        idle_timeout_ms=_millis(options, "amqpIdleTimeout", shown),
    )


def _tls(scheme: str, options: Mapping[str, str], shown: str) -> bool:
    return scheme in TLS_SCHEMES or _flag(options, "sslEnabled", shown)


def _flag(options: Mapping[str, str], name: str, shown: str) -> bool:
    value = options.get(name, "false")
    if value.lower() not in ("true", "false"):
        raise ConnectionURIError(shown, f"{name} must be true or false, got {value!r}")
    return value.lower() == "true"


def _millis(options: Mapping[str, str], name: str, shown: str) -> int:
    text = options.get(name)
    if text is None:
        return _DEFAULT_MS[name]
    if not text.strip().isdigit():
        raise ConnectionURIError(shown, f"{name} must be milliseconds, got {text!r}")
    return int(text)


def _tls_options(options: Mapping[str, str], shown: str) -> TlsOptions:
    _flag(options, "verifyHost", shown)  # named as the user wrote it, not as util.tls does
    query = {_TLS_NAMES.get(name, name): value for name, value in options.items()}
    try:
        return client_options(query)
    except TlsError as exc:
        raise ConnectionURIError(shown, str(exc)) from None
