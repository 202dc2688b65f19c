"""``multicast://ADDRESS:PORT?options``: the multicast agent's URI, read strictly.

The host ``default`` is ActiveMQ's ``239.255.2.3`` and a missing port is ``6155`` (reference
§3.4); an address must be an IPv4 multicast address. Any other host is a group name on the
default address: seed 000 Example 2.19 (and seed 001 Example 8.10) advertise a broker with
``multicast://NEGroup`` for clients of ``zeroconf://NEGroup``, so ``multicast://NAME`` means
``multicast://default?group=NAME`` (a ``group=`` option still wins). The options are ActiveMQ
5.17's ``MulticastDiscoveryAgent`` setters, at its defaults, plus ``datagramSize`` from seed 002
Table 1.3 and FerryMQ's ``zeroconf``. Decisions where the sources disagree or say nothing:

* ``timeToLive`` defaults to 1 (ActiveMQ's code) rather than seed 002's -1, which came from the
  multicast *transport*; -1 is accepted and leaves the system default (1 on Linux).
* ``datagramSize`` (ignored by ActiveMQ 5.17, which has no such setter) is the largest datagram
  FerryMQ reads, by default 8192 like ActiveMQ's receive buffer (seed 002 says 4 KiB, again the
  transport's); a longer one is dropped rather than cut short.
* ``interface`` and ``networkInterface`` take a name (``lo``) or an IPv4 address (``127.0.0.1``)
  and pin both the interface datagrams leave by and the one the group is joined on;
  ``joinNetworkInterface`` pins only the join. ActiveMQ sends by them but joins on its first
  non-loopback interface unless ``joinNetworkInterface`` is given, so a test pinned to ``lo``
  would still join on ``eth0``.
* The options of seed 002 Table 1.3 that configured the multicast transport
  (``minimumWireFormatVersion``, ``trace``, ``useLocalHost``, ``wireFormat``, ``wireFormat.*``)
  are accepted and ignored, with a log line; any other unknown option is refused, naming it
  (ActiveMQ ignores unknown options silently).
* ``zeroconf`` (FerryMQ's): whether a broker advertising through this URI also registers the
  service over mDNS in the same group (``ferrymq.discovery.zeroconf.mdns_twin``), which is what
  the seeds' ``zeroconf://GROUP`` clients find. Unset, it does so when the group and the
  service URI can be mDNS names; ``true`` requires it, ``false`` turns it off. It changes
  nothing for an agent that only listens.
"""

from __future__ import annotations

import ipaddress
import logging
from dataclasses import dataclass, replace
from typing import Any, Final

from ferrymq.client.errors import BrokerURLError
from ferrymq.client.failover.options import bool_value, int_value, option_error
from ferrymq.discovery.agent_options import (
    HOLD_BACK_OPTIONS,
    HoldBackSettings,
    OptionTable,
    checked_value,
    interface_value,
    read_options,
    refuse_path,
)
from ferrymq.discovery.datagram import MAX_DATAGRAM_BYTES, check_group
from ferrymq.util.uri import URI, AnyURI

log = logging.getLogger(__name__)

DEFAULT_HOST: Final = "default"
DEFAULT_ADDRESS: Final = "239.255.2.3"
DEFAULT_PORT: Final = 6155
HEARTBEAT_MISS_BEFORE_DEATH: Final = 10
"""A service unheard for this many keep-alive intervals has expired (ActiveMQ's constant)."""
MAX_UDP_PAYLOAD: Final = 65_507
IGNORED: Final = frozenset({"minimumWireFormatVersion", "trace", "useLocalHost", "wireFormat"})
IGNORED_PREFIX: Final = "wireFormat."


@dataclass(frozen=True, slots=True)
class MulticastOptions(HoldBackSettings):
    """A multicast agent's settings; the defaults are ActiveMQ 5.17's."""

    address: str = DEFAULT_ADDRESS
    """The IPv4 multicast group address."""
    port: int = DEFAULT_PORT
    group: str = "default"
    """``group``: only datagrams of this group name are read (reference §3.4)."""
    time_to_live: int = 1
    """``timeToLive``: IP_MULTICAST_TTL; -1 keeps the system default."""
    loop_back_mode: bool = False
    """``loopBackMode``, with Java's meaning: false lets this host's own agents hear the
    datagrams (IP_MULTICAST_LOOP on), true keeps them off this host."""
    datagram_size: int = MAX_DATAGRAM_BYTES
    """``datagramSize``: the largest datagram read; longer ones are dropped."""
    keep_alive_interval_ms: int = 500
    """``keepAliveInterval``: how often each registered service is advertised; a remote one
    unheard for ten intervals has expired."""
    interface: str | None = None
    """``interface`` / ``networkInterface``: name or address of the interface to send by and,
    unless ``join_interface`` says otherwise, to join the group on."""
    join_interface: str | None = None
    """``joinNetworkInterface``: the interface to join the group on."""
    zeroconf: bool | None = None
    """``zeroconf``: a broker advertising through this agent also registers its service over
    mDNS in ``group``: None when it can, True always (an error if it cannot), False never."""

    @property
    def uri(self) -> str:
        """The agent's address, for messages: ``multicast://239.255.2.3:6155``."""
        return f"multicast://{self.address}:{self.port}"

    @property
    def expiry_ms(self) -> int:
        return self.keep_alive_interval_ms * HEARTBEAT_MISS_BEFORE_DEATH

    @property
    def join_on(self) -> str | None:
        return self.join_interface if self.join_interface is not None else self.interface


def _ttl(url: str, name: str, value: str) -> int:
    ttl: int = int_value(-1)(url, name, value)
    if ttl > 255:
        raise option_error(url, name, f"must be at most 255, got {ttl}")
    return ttl


def _datagram_size(url: str, name: str, value: str) -> int:
    size: int = int_value(1)(url, name, value)
    if size > MAX_UDP_PAYLOAD:
        raise option_error(
            url, name, f"must be at most {MAX_UDP_PAYLOAD} (a UDP datagram), got {size}"
        )
    return size


_OPTIONS: Final[OptionTable] = {
    "group": ("group", checked_value(check_group)),
    "timeToLive": ("time_to_live", _ttl),
    "loopBackMode": ("loop_back_mode", bool_value),
    "datagramSize": ("datagram_size", _datagram_size),
    "keepAliveInterval": ("keep_alive_interval_ms", int_value(1)),
    "interface": ("interface", interface_value),
    "networkInterface": ("interface", interface_value),
    "joinNetworkInterface": ("join_interface", interface_value),
    **HOLD_BACK_OPTIONS,
    "zeroconf": ("zeroconf", bool_value),
}
OPTION_NAMES: Final = frozenset(_OPTIONS)


def multicast_options(agent_uri: AnyURI, *, url: str) -> MulticastOptions:
    """Read ``multicast://ADDRESS:PORT?options``; anything unknown or malformed raises
    ``BrokerURLError`` naming it."""
    if not isinstance(agent_uri, URI) or agent_uri.host is None:
        raise BrokerURLError(
            "multicast: names a group: multicast://default, multicast://ADDRESS:PORT or "
            "multicast://GROUP",
            url=url,
            part=agent_uri.scheme,
        )
    changes: dict[str, Any] = _host(agent_uri.host, url)
    if agent_uri.port is not None:
        if agent_uri.port == 0:
            raise BrokerURLError("multicast: port 0 cannot be shared", url=url, part="0")
        changes["port"] = agent_uri.port
    refuse_path(agent_uri.path, scheme="multicast", url=url)
    query: dict[str, str] = {}
    for name, value in agent_uri.query.items():
        if name in IGNORED or name.startswith(IGNORED_PREFIX):
            log.warning(
                "%s: option %s configured ActiveMQ's multicast transport (seed 002 Table 1.3) "
                "and has no effect on the discovery agent; ignored",
                url,
                name,
            )
        else:
            query[name] = value
    changes.update(read_options(query, _OPTIONS, url=url, what="multicast discovery agent"))
    return replace(MulticastOptions(), **changes)


def _host(host: str, url: str) -> dict[str, Any]:
    """The settings a URI's host makes: ``default``, a group address, or a group name."""
    if host.lower() == DEFAULT_HOST:
        return {"address": DEFAULT_ADDRESS}
    if ":" in host:
        raise BrokerURLError(
            f"multicast: IPv6 group addresses are not supported, got {host!r}", url=url, part=host
        )
    try:
        address = ipaddress.IPv4Address(host)
    except ValueError:
        # seed 000 Example 2.19: multicast://NEGroup names the group NEGroup.
        if host.replace(".", "").isdigit():
            raise BrokerURLError(
                f"multicast: {host!r} is not an IPv4 address", url=url, part=host
            ) from None
        try:
            return {"address": DEFAULT_ADDRESS, "group": check_group(host)}
        except ValueError as exc:
            raise BrokerURLError(f"multicast: {exc}", url=url, part=host) from None
    if not address.is_multicast:
        raise BrokerURLError(
            f"multicast: {host} is not a multicast address (224.0.0.0/4)", url=url, part=host
        )
    return {"address": str(address)}
