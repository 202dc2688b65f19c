"""The start-up warning for a broker that others can reach without a password.

ActiveMQ's sample activemq.xml binds every connector to ``0.0.0.0`` and configures no
authentication: copied as it is, such a broker lets anyone on the network send, consume, browse
and (through the admin API) purge or delete.  FerryMQ runs it (the file is valid), but says so
at start, once per exposed listener, naming what is open and the two ways out: configure
authentication (docs/security.md) or bind a loopback address.  The decision reads the
configuration only (no name lookups), so it is the same on a slave that will take over later.

Authentication that lets everyone in is no authentication for this purpose: a
`<simpleAuthenticationPlugin anonymousAccessAllowed="true">`, or a JAAS entry whose
`GuestLoginModule` no `required`/`requisite` module guards (with `credentialsInvalidate=true` it
admits whoever gives no password, without it whoever gives any), gets the warning too, naming
the user the stranger becomes.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from ferrymq.config.model import BrokerConfig
from ferrymq.config.security import JaasAuthenticationConfig, SimpleAuthenticationConfig
from ferrymq.util.uri import redact_url

__all__ = ["exposure_warnings", "is_loopback", "privileged_door_warning"]

_EVERY_INTERFACE = frozenset({"", "0.0.0.0", "::", "*"})
_NO_SOCKET = frozenset({"vm"})
_FIX = (
    "configure authentication (<simpleAuthenticationPlugin> or <jaasAuthenticationPlugin>, "
    "see docs/security.md) or bind 127.0.0.1"
)
_FIX_DOOR = (
    'let nobody in unnamed (anonymousAccessAllowed="false"; no GuestLoginModule, or a '
    "required module beside it: see docs/security.md) or bind 127.0.0.1"
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


def _open_door(config: BrokerConfig) -> str | None:
    """How the configured authentication lets anyone in, or None when it does not."""
    plugin = config.security.authentication if config.security is not None else None
    if isinstance(plugin, SimpleAuthenticationConfig) and plugin.anonymous_access_allowed:
        return (
            '<simpleAuthenticationPlugin anonymousAccessAllowed="true"> lets a client that '
            f"gives no password in as user {plugin.anonymous_user}"
        )
    if not isinstance(plugin, JaasAuthenticationConfig):
        return None
    modules = plugin.login.modules
    guests = [m for m in modules if m.class_name.rsplit(".", 1)[-1] == "GuestLoginModule"]
    guarded = any(m.flag in ("required", "requisite") for m in modules if m not in guests)
    if not guests or guarded:
        return None
    guest = guests[0]
    user = guest.option("org.apache.activemq.jaas.guest.user") or "guest"
    invalidate = (guest.option("credentialsInvalidate") or "").lower() == "true"
    who = "a client that gives no password" if invalidate else "a client with any password"
    return f"GuestLoginModule of login.config entry {plugin.login.name} lets {who} in as {user}"


def _exposed_listeners(config: BrokerConfig, door: str | None) -> Iterator[str]:
    what = (
        "may connect without a password and send, consume and browse every destination"
        if door is None
        else f"may connect ({door}) and do whatever that user may"
    )
    for connector in config.transport_connectors:
        uri = connector.parsed_uri
        if uri.scheme.lower() in _NO_SOCKET or is_loopback(uri.host):
            continue
        name = connector.name or redact_url(connector.uri)
        yield (
            f"the {uri.scheme} listener {name} binds {_where(uri.host)}: anyone who can reach "
            f"{_port(uri.port)} {what}"
        )


def _unnamed_groups(config: BrokerConfig) -> set[str]:
    """The groups a client who gives no (or any) password gets."""
    plugin = config.security.authentication if config.security is not None else None
    if isinstance(plugin, SimpleAuthenticationConfig) and plugin.anonymous_access_allowed:
        return {g.strip() for g in plugin.anonymous_group.split(",") if g.strip()}
    if isinstance(plugin, JaasAuthenticationConfig):
        return {
            group.strip()
            for module in plugin.login.modules
            if module.class_name.rsplit(".", 1)[-1] == "GuestLoginModule"
            for group in (module.option("org.apache.activemq.jaas.guest.group") or "").split(",")
            if group.strip()
        }
    return set()


def privileged_door_warning(config: BrokerConfig) -> str | None:
    """The privileged group (bridges, slaves, the admin API's writes) given to clients without
    a password: anyone could copy the whole store as a slave or redirect failover clients."""
    group = config.admin.admin_group
    if _open_door(config) is None or group not in _unnamed_groups(config):
        return None
    return (
        f"SECURITY WARNING: clients without a password get group {group}, the privileged group: "
        "anyone may attach as a pure master/slave slave (a copy of every message), open network "
        "bridges, tell failover clients where to go and use the admin API's writes; give the "
        "anonymous or guest user another group, or choose another with --admin-group"
    )


def exposure_warnings(config: BrokerConfig, authenticated: bool) -> list[str]:
    """One loud line per listener bound beyond loopback, when no authentication is
    configured or the configured one admits everyone; none otherwise. And one line, wherever
    the broker listens, when clients without a password get the privileged group."""
    privileged = privileged_door_warning(config)
    lines = [] if privileged is None else [privileged]
    door = _open_door(config)
    if authenticated and door is None:
        return lines
    fix = _FIX if door is None else _FIX_DOOR
    lines += [f"SECURITY WARNING: {line}; {fix}" for line in _exposed_listeners(config, door)]
    admin = config.admin
    if admin.enabled and not is_loopback(admin.host):
        what = (
            "may read the broker's state and purge, delete and move messages and close "
            "connections without a password"
            if door is None
            else f"may read the broker's state ({door})"
        )
        lines.append(
            f"SECURITY WARNING: the admin API binds {_where(admin.host)}: anyone who can reach "
            f"{_port(admin.port)} {what}; {fix} (--admin 127.0.0.1:{admin.port})"
        )
    return lines
