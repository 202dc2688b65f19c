"""The start-up warning for a broker that others can reach without a password.

ActiveMQ's sample activemq.xml binds every connector to ``0.0.0.0`` and configures no
authentication: copied as it is, such a broker lets anyone on the network send, consume, browse
and (through the admin API) purge or delete.  FerryMQ runs it (the file is valid), but says so
at start, once per exposed listener, naming what is open and the two ways out: configure
authentication (docs/security.md) or bind a loopback address.  The decision reads the
configuration only (no name lookups), so it is the same on a slave that will take over later.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from ferrymq.config.model import BrokerConfig

__all__ = ["exposure_warnings", "is_loopback"]

_EVERY_INTERFACE = frozenset({"", "0.0.0.0", "::", "*"})
_NO_SOCKET = frozenset({"vm"})
_FIX = (
    "configure authentication (<simpleAuthenticationPlugin> or <jaasAuthenticationPlugin>, "
    "see docs/security.md) or bind 127.0.0.1"
)


def is_loopback(host: str | None) -> bool:
    """Whether ``host`` is reachable from this machine only: a loopback address or
    ``localhost``.  A host name is taken to be reachable from elsewhere."""
    name = (host or "").strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _where(host: str | None) -> str:
    if (host or "").strip("[]") in _EVERY_INTERFACE:
        return f"every network interface ({host or '0.0.0.0'})"
    return f"{host}, which is not a loopback address"


def _port(port: int | None) -> str:
    return f"port {port}" if port else "its port"


def _exposed_listeners(config: BrokerConfig) -> Iterator[str]:
    for connector in config.transport_connectors:
        uri = connector.parsed_uri
        if uri.scheme.lower() in _NO_SOCKET or is_loopback(uri.host):
            continue
        name = connector.name or connector.uri
        yield (
            f"the {uri.scheme} listener {name} binds {_where(uri.host)}: anyone who can reach "
            f"{_port(uri.port)} may connect without a password and send, consume and browse "
            "every destination"
        )


def exposure_warnings(config: BrokerConfig, authenticated: bool) -> list[str]:
    """One loud line per listener bound beyond loopback, when no authentication is
    configured; none when it is."""
    if authenticated:
        return []
    lines = [f"SECURITY WARNING: {line}; {_FIX}" for line in _exposed_listeners(config)]
    admin = config.admin
    if admin.enabled and not is_loopback(admin.host):
        lines.append(
            f"SECURITY WARNING: the admin API binds {_where(admin.host)}: anyone who can reach "
            f"{_port(admin.port)} may read the broker's state and purge, delete and move messages "
            f"and close connections without a password; {_FIX} (--admin 127.0.0.1:{admin.port})"
        )
    return lines
