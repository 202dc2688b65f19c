"""``zeroconf://GROUP?options`` (and ``rendezvous://GROUP``): the zeroconf agent's URI, read
strictly, and the mDNS names a group and a service get.

ActiveMQ's ``ZeroconfDiscoveryAgent`` (reference §3.5) publishes each service as a DNS-SD
instance named by the service URI, in the type ``_<group>.ActiveMQ-5.``, with an SRV weight and
priority from its options. python-zeroconf (rightly, RFC 6763 §7) only accepts service types of
the form ``_name._tcp.local.``, so FerryMQ keeps the group and the URI but not that type: a
group is the DNS-SD *subtype* ``_<group>._sub._activemq._tcp.local.`` and a service the
instance ``<service URI>._activemq._tcp.local.``. A subtype takes any group name an mDNS label
can hold (a type of its own, ``_<group>._tcp``, would cap groups at 15 letters and could
collide with real service types such as ``_http._tcp``). DNS names ignore case, so do groups.

Options beyond ActiveMQ's (``group``, ``weight``, ``priority``, ``localhost``):

* ``interface`` / ``networkInterface`` pin mDNS to one interface, as they pin the multicast
  agent; ``localhost`` is ActiveMQ's name for the same thing (the local address its JmDNS
  binds to: an address, interface name or host name).
* ``ttl`` (seconds): the TTL of the records a broker publishes, which is how long a broker that
  died without its goodbye (SIGKILL, power loss) stays listed. Listening agents ask again at
  80-95 % of a record's TTL (RFC 6762 §5.2) and drop it when it runs out. The default, 120 s,
  is RFC 6762 §10's for SRV records; tests use 2.
* ActiveMQ's multicast hold-back options (``initialReconnectDelay`` and the rest): ActiveMQ's
  zeroconf agent ignores ``service_failed``; FerryMQ's holds a failed service back as its
  multicast agent does, so a network connector retries a failed bridge the same way whichever
  agent found the broker.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any, Final

from ferrymq.client.errors import BrokerURLError
from ferrymq.client.failover.options import int_value, option_error
from ferrymq.discovery.agent_options import (
    HOLD_BACK_OPTIONS,
    HoldBackSettings,
    OptionTable,
    checked_value,
    interface_value,
    read_options,
    refuse_path,
)
from ferrymq.discovery.multicast_options import MulticastOptions
from ferrymq.util.uri import URI, AnyURI

SERVICE_TYPE: Final = "_activemq._tcp.local."
"""Every FerryMQ service's DNS-SD type; the group is a subtype of it."""
MAX_LABEL_BYTES: Final = 63
"""RFC 1035 §2.3.4: the longest DNS label, which bounds a group and a service URI."""
MIN_TTL_S: Final = 2
"""The shortest ``ttl``: a responder answers for a record at most once a second (RFC 6762
§14), and listeners ask again at 80 % of the TTL, so with 1 s the answer would come late."""
DEFAULT_TTL_S: Final = 120
"""RFC 6762 §10's TTL for records naming a host, as SRV records do."""
MAX_SRV_FIELD: Final = 65_535
"""SRV priority and weight are 16-bit (RFC 2782)."""


@dataclass(frozen=True, slots=True)
class ZeroconfOptions(HoldBackSettings):
    """A zeroconf agent's settings."""

    group: str = "default"
    """The group (``zeroconf://GROUP``, or ``group=``): brokers advertise in it, clients list it."""
    weight: int = 0
    """``weight``: the SRV weight of the services this agent publishes."""
    priority: int = 0
    """``priority``: their SRV priority."""
    interface: str | None = None
    """``interface`` / ``networkInterface`` / ``localhost``: the one interface mDNS uses (name,
    IPv4 address, or for ``localhost`` a host name); None: the routing table's default."""
    ttl_s: int = DEFAULT_TTL_S
    """``ttl``: the TTL of the published records, hence how long a dead broker stays listed."""

    @property
    def uri(self) -> str:
        return f"zeroconf://{self.group}"

    @property
    def group_type(self) -> str:
        """The DNS-SD subtype clients of the group browse: ``_negroup._sub._activemq._tcp.local.``
        (lower case: DNS names ignore it, python-zeroconf's browser does not)."""
        return f"_{self.group.lower()}._sub.{SERVICE_TYPE}"

    @property
    def expiry_ms(self) -> int:
        """How long a service published by an agent with these options outlives its broker."""
        return self.ttl_s * 1000


def check_group(group: str) -> str:
    """``group`` if it can name a zeroconf group (a DNS label ``_<group>``); raises
    ``ValueError`` saying why not."""
    if not group:
        raise ValueError("a group name cannot be empty")
    if "." in group:
        raise ValueError(f"a zeroconf group name cannot contain '.', got {group!r}")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in group):
        raise ValueError(f"a zeroconf group name cannot contain control characters: {group!r}")
    if len(group.encode()) + 1 > MAX_LABEL_BYTES:
        raise ValueError(f"a zeroconf group name has at most {MAX_LABEL_BYTES - 1} bytes")
    return group


def check_service(uri: str) -> str:
    """``uri`` if it can name a DNS-SD instance, as ActiveMQ names it; raises ``ValueError``."""
    if len(uri.encode()) > MAX_LABEL_BYTES:
        raise ValueError(
            f"{uri} has {len(uri.encode())} bytes; a service URI advertised over mDNS has at "
            f"most {MAX_LABEL_BYTES} (it is the DNS-SD instance name)"
        )
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in uri) or "" in uri.split("."):
        raise ValueError(f"{uri!r} cannot be a DNS-SD instance name")
    return uri


def _srv_field(url: str, name: str, value: str) -> int:
    number: int = int_value(0)(url, name, value)
    if number > MAX_SRV_FIELD:
        raise option_error(url, name, f"must be at most {MAX_SRV_FIELD}, got {number}")
    return number


_OPTIONS: Final[OptionTable] = {
    "group": ("group", checked_value(check_group)),
    "weight": ("weight", _srv_field),
    "priority": ("priority", _srv_field),
    "interface": ("interface", interface_value),
    "networkInterface": ("interface", interface_value),
    "localhost": ("interface", interface_value),
    "ttl": ("ttl_s", int_value(MIN_TTL_S)),
    **HOLD_BACK_OPTIONS,
}
OPTION_NAMES: Final = frozenset(_OPTIONS)


def zeroconf_options(agent_uri: AnyURI, *, url: str) -> ZeroconfOptions:
    """Read ``zeroconf://GROUP?options``; anything unknown or malformed raises
    ``BrokerURLError`` naming it."""
    scheme = agent_uri.scheme.lower()
    if not isinstance(agent_uri, URI) or not agent_uri.host:
        raise BrokerURLError(
            f"{scheme}: names a group: {scheme}://GROUP", url=url, part=agent_uri.scheme
        )
    if agent_uri.port is not None:
        raise BrokerURLError(
            f"{scheme}: takes a group, not an address: {scheme}://GROUP",
            url=url,
            part=str(agent_uri.port),
        )
    refuse_path(agent_uri.path, scheme=scheme, url=url)
    try:
        changes: dict[str, Any] = {"group": check_group(agent_uri.host)}
    except ValueError as exc:
        raise BrokerURLError(f"{scheme}: {exc}", url=url, part=agent_uri.host) from None
    changes.update(read_options(agent_uri.query, _OPTIONS, url=url, what="zeroconf agent"))
    return replace(ZeroconfOptions(), **changes)


def twin_options(multicast: MulticastOptions) -> ZeroconfOptions:
    """The mDNS side of a broker advertising through a multicast agent: the same group,
    interface and hold-back, and records that live as long as its heartbeats would (ten
    keep-alive intervals, at least ``MIN_TTL_S``). Raises ``ValueError`` if the multicast group
    cannot be a zeroconf group."""
    return ZeroconfOptions(
        group=check_group(multicast.group),
        interface=multicast.join_on,
        ttl_s=max(MIN_TTL_S, math.ceil(multicast.expiry_ms / 1000)),
        **{setting.name: getattr(multicast, setting.name) for setting in fields(HoldBackSettings)},
    )
