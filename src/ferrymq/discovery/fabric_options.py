"""``fabric://GROUP?options``: the registry agent's URI, read strictly.

Fuse Fabric's agent found its registry (ZooKeeper) through the ``zookeeper.url`` and
``zookeeper.password`` system properties, so the agent URI itself only named the group (seed
000 Example 2.11, ``fabric://GID``). FerryMQ's registry is a PostgreSQL database, found the same
way: the ``FERRYMQ_FABRIC_REGISTRY`` environment variable holds its libpq URL (or ``key=value``
settings) and ``FERRYMQ_FABRIC_PASSWORD`` its password; a ``registry=`` option in the URI wins
over the variable, for programs that talk to several registries.

A password is refused in the URI: agent URIs are logged (the broker logs what it advertises
through) and quoted in error messages. It belongs in ``FERRYMQ_FABRIC_PASSWORD``, the
variable's URL, or libpq's own places (``PGPASSWORD``, ``~/.pgpass``, a service file).
Messages name the registry as ``postgresql://user@host:port/db``, never with its password.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from ferrymq.client.errors import BrokerURLError
from ferrymq.client.failover.options import int_value, option_error
from ferrymq.discovery.agent_options import (
    HOLD_BACK_OPTIONS,
    HoldBackSettings,
    OptionTable,
    read_options,
    refuse_path,
)
from ferrymq.util.uri import URI, AnyURI

REGISTRY_ENV: Final = "FERRYMQ_FABRIC_REGISTRY"
"""The registry's libpq URL when the URI has no ``registry=`` (Fabric's ``zookeeper.url``)."""
PASSWORD_ENV: Final = "FERRYMQ_FABRIC_PASSWORD"
"""The registry's password (Fabric's ``zookeeper.password``); wins over the URL's own."""
LIBPQ_URL_SCHEMES: Final = ("postgresql://", "postgres://")
_REGISTRY_VALUE = re.compile(r"(?i)(\bregistry=)[^&)]*")


@dataclass(frozen=True, slots=True, kw_only=True)
class FabricOptions(HoldBackSettings):
    """A fabric agent's settings (the hold-back after ``service_failed`` as the multicast
    agent's)."""

    group: str
    """The broker group (``fabric://GROUP``): brokers register under it, clients list it."""
    registry: str
    """The registry as messages name it: ``postgresql://user@host:port/db``, no password."""
    conninfo: str = field(repr=False)
    """The libpq connection string, password included: never logged."""
    keep_alive_interval_ms: int = 1000
    """``keepAliveInterval``: a registered service's lease is renewed this often."""
    lease_duration_ms: int = 5000
    """``leaseDuration``: a registration not renewed for this long has expired (by the
    database's clock): how long a SIGKILLed broker stays listed at most."""
    poll_interval_ms: int = 1000
    """``pollInterval``: a listening agent reads the whole group this often, besides the
    notifications, to see expired leases and anything a lost notification missed."""

    @property
    def uri(self) -> str:
        """The agent as messages name it: ``fabric://GROUP`` (no registry, no password)."""
        return f"fabric://{self.group}"

    @property
    def expiry_ms(self) -> int:
        """A lease: what the services table would expire by, were it asked to (the agent
        never asks: the registry's leases do the expiring)."""
        return self.lease_duration_ms


def _text(url: str, name: str, value: str) -> str:
    return value


_OPTIONS: Final[OptionTable] = {
    "keepAliveInterval": ("keep_alive_interval_ms", int_value(1)),
    "leaseDuration": ("lease_duration_ms", int_value(1)),
    "pollInterval": ("poll_interval_ms", int_value(1)),
    "registry": ("registry", _text),
    "group": ("group", _text),
    **HOLD_BACK_OPTIONS,
}
OPTION_NAMES: Final = frozenset(_OPTIONS)


def fabric_options(
    agent_uri: AnyURI, *, url: str, environ: Mapping[str, str] | None = None
) -> FabricOptions:
    """Read ``fabric://GROUP?options`` (and, for the registry, ``environ``); anything unknown
    or malformed raises ``BrokerURLError`` naming it, without any password."""
    env: Mapping[str, str] = environ if environ is not None else {}
    given = agent_uri.query.get("registry")
    if given is not None and not _safe_to_show(given):
        url = _REGISTRY_VALUE.sub(r"\1<hidden>", url)
    if not isinstance(agent_uri, URI) or not agent_uri.host:
        raise BrokerURLError(
            "fabric: names a broker group: fabric://GROUP", url=url, part=agent_uri.scheme
        )
    if agent_uri.port is not None or agent_uri.userinfo:
        raise BrokerURLError(
            "fabric: takes a group name only (fabric://GROUP?options); the registry comes "
            f"from registry= or {REGISTRY_ENV}",
            url=url,
            part=agent_uri.host,
        )
    refuse_path(agent_uri.path, scheme="fabric", url=url)
    changes = read_options(agent_uri.query, _OPTIONS, url=url, what="fabric discovery agent")
    changes.pop("registry", None)
    _same_group(agent_uri.host, changes.pop("group", agent_uri.host), url)
    conninfo, registry = _registry(given, env, url)
    options = replace(
        FabricOptions(group=agent_uri.host, registry=registry, conninfo=conninfo), **changes
    )
    if options.lease_duration_ms <= options.keep_alive_interval_ms:
        raise option_error(
            url,
            "leaseDuration",
            f"{options.lease_duration_ms} ms must be longer than keepAliveInterval "
            f"{options.keep_alive_interval_ms} ms, or leases lapse between renewals",
        )
    return options


def _same_group(host: str, group: str, url: str) -> None:
    """``group=`` (seed 002 Table 1.2's option, which a ``discovery:`` URL hands on to its
    agent) may repeat the group ``fabric://GROUP`` names, never name another."""
    if group != host:
        raise option_error(
            url,
            "group",
            f"fabric://{host} is the group {host!r}; group={group} names another "
            "(a group= on the discovery: URL reaches the agent too)",
        )


def _safe_to_show(conninfo: str) -> bool:
    """Whether a ``registry=`` value may appear in a message: parseable, without password."""
    try:
        return "password" not in conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError:
        return False


def _registry(given: str | None, env: Mapping[str, str], url: str) -> tuple[str, str]:
    """The libpq connection string (with ``FERRYMQ_FABRIC_PASSWORD``) and its description."""
    if given is not None:
        source, text = "option registry", given
    elif env.get(REGISTRY_ENV, "").strip():
        source, text = f"{REGISTRY_ENV} (environment)", env[REGISTRY_ENV]
    else:
        raise BrokerURLError(
            "fabric: no registry: give registry=postgresql://HOST:PORT/DATABASE or set "
            f"{REGISTRY_ENV} (a password goes in {PASSWORD_ENV}, PGPASSWORD or ~/.pgpass)",
            url=url,
            part="registry",
        )
    text = text.strip()
    if not text:
        raise BrokerURLError(f"{source}: empty", url=url, part="registry")
    if "://" in text and not text.startswith(LIBPQ_URL_SCHEMES):
        raise BrokerURLError(
            f"{source}: the registry is a PostgreSQL database: expected "
            "postgresql://[USER@]HOST[:PORT]/DATABASE or libpq key=value settings",
            url=url,
            part="registry",
        )
    try:
        params = conninfo_to_dict(text)
    except psycopg.ProgrammingError:
        # libpq's message may quote the text, password and all.
        raise BrokerURLError(
            f"{source}: not a valid libpq connection string", url=url, part="registry"
        ) from None
    if given is not None and "password" in params:
        raise BrokerURLError(
            "option registry: the URI holds a password, and agent URIs are logged: put it in "
            f"{PASSWORD_ENV}, PGPASSWORD or ~/.pgpass instead",
            url=url,
            part="registry",
        )
    password = env.get(PASSWORD_ENV)
    conninfo = make_conninfo(text, password=password) if password else make_conninfo(text)
    return conninfo, describe_registry(params)


def describe_registry(params: Mapping[str, Any]) -> str:
    """``postgresql://user@host:port/db`` from libpq settings, for messages: no password;
    what libpq would take from its environment shows as missing."""
    user = f"{params['user']}@" if params.get("user") else ""
    host = params.get("host") or params.get("hostaddr") or "(libpq default host)"
    port = f":{params['port']}" if params.get("port") else ""
    return f"postgresql://{user}{host}{port}/{params.get('dbname') or ''}"
