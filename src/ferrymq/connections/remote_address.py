"""The hosts of a broker connection's ``uri``: the primary and its ``#`` alternates.

``tcp://A:5672?opts#tcp://B:5672,C:5672`` (ActiveMQ Artemis documentation, "Broker
Connections", reconnecting and failover): the part after ``#`` lists alternate hosts, comma
separated, tried in turn. An alternate written without a scheme takes the primary's; each host
keeps only its own options (TLS on the primary alone is allowed). The configuration reads the
list and each host's options (``config.connection_hosts``, which the loader also uses to check
the ``uri`` with file and line); this makes them addresses with their TLS context. A bad URI is
one line naming the part and how to write it.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field

from ferrymq.config.connection_hosts import (
    DEFAULT_CONNECT_TIMEOUT_MS,
    DEFAULT_IDLE_TIMEOUT_MS,
    ConnectionHost,
    ConnectionURIError,
    connection_hosts,
)

__all__ = ["RemoteAddress", "RemoteURIError", "parse_hosts"]

RemoteURIError = ConnectionURIError
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
    return [_address(host) for host in connection_hosts(uri)]


def _address(host: ConnectionHost) -> RemoteAddress:
    return RemoteAddress(
        scheme=host.scheme,
        host=host.host,
        port=host.port,
        options=host.options,
        ssl_context=host.ssl_context(),
        connect_timeout_ms=host.connect_timeout_ms,
        idle_timeout_ms=host.idle_timeout_ms,
    )
