"""The options of ``failover:``, ``discovery:`` and ``masterslave:`` URLs, read strictly.

Every option of seed 000 Table 2.1 is here at its documented default, under the seed's name
and, where ActiveMQ's code spells it differently, under the Java name too
(``reconnectDelayExponent`` is the setter behind the seed's ``backOffMultiplier``). ActiveMQ
rejects an option it has no setter for; so does FerryMQ, naming the option and the URL.

Java-only options, decided one by one:

* ``backupPoolSize``, ``priorityURIs``, ``reconnectDelay``, ``reconnectSupported``: meaningful
  here and accepted (``reconnectDelay`` is ActiveMQ's first back-off step before the first
  connection succeeds; by default ``initialReconnectDelay``).
* ``rebalanceUpdateURIs``: accepted and checked, without effect. ActiveMQ rebalances when a
  re-read of ``updateURIsURL`` *while connected* changes the list; FerryMQ reads the file only
  while reconnecting, when there is nothing to rebalance.
* ``trackTransactionProducers``: FerryMQ has no producer objects to close, and always replays a
  transaction's sends; ``true`` is accepted, ``false`` (give up such transactions) refused.
* ``jms.*``: options of ActiveMQ's JMS ConnectionFactory, which has no counterpart here;
  refused with a message saying so.
* ``reconnectDelayJitter`` (stompest's, ms, default 0): a FerryMQ extension that adds up to
  that much random delay to each back-off step, so clients of one broker do not return in step.

``nested.X=v`` sets ``X=v`` on every member URI, overriding the member's own value (ActiveMQ's
``addExtraQueryOptions``). A ``discovery:`` URL takes the same options, Table 2.3's at their
Table 2.3 defaults (``maxReconnectAttempts`` 0 means unlimited there), and injects every option
it does not recognise, and every ``discovered.X``, into each discovered URI (seed 000 "Setting
options on the discovered transports").
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Final

from ferrymq.client.errors import BrokerURLError
from ferrymq.util.uri import URI, URIError, parse_uri

NESTED_PREFIX: Final = "nested."
DISCOVERED_PREFIX: Final = "discovered."
INFINITE: Final = -1
"""``maxReconnectAttempts``, ``startupMaxReconnectAttempts`` and ``timeout``: no limit."""


@dataclass(frozen=True, slots=True)
class FailoverOptions:
    """Seed 000 Table 2.1, with the defaults of ActiveMQ 5.17's FailoverTransport."""

    initial_reconnect_delay_ms: int = 10
    """``initialReconnectDelay``: wait before the first reconnect pass after a drop, and the
    first back-off step."""
    max_reconnect_delay_ms: int = 30_000
    """``maxReconnectDelay``: the back-off never waits longer."""
    use_exponential_back_off: bool = True
    """``useExponentialBackOff``: multiply the wait after each failed pass."""
    back_off_multiplier: float = 2.0
    """``backOffMultiplier`` (Java: ``reconnectDelayExponent``)."""
    reconnect_delay_ms: int | None = None
    """``reconnectDelay``: the first back-off step before any connection succeeded."""
    reconnect_delay_jitter_ms: int = 0
    """``reconnectDelayJitter`` (stompest's; a FerryMQ extension)."""
    max_reconnect_attempts: int = INFINITE
    """``maxReconnectAttempts``, in passes over the list: -1 unlimited, 0 no reconnect once
    connected (one pass at start-up), N passes."""
    startup_max_reconnect_attempts: int = INFINITE
    """``startupMaxReconnectAttempts``: the same before the first connection (-1: use
    ``maxReconnectAttempts``; 0: a single pass)."""
    randomize: bool = True
    """``randomize``: shuffle the list on every pass, else walk it left to right."""
    backup: bool = False
    """``backup``: keep standby connections for a failover without reconnect delay."""
    backup_pool_size: int = 1
    """``backupPoolSize``: how many standbys ``backup`` keeps."""
    timeout_ms: int = INFINITE
    """``timeout``: how long a send waits for a connection before failing (-1: for ever)."""
    track_messages: bool = False
    """``trackMessages``: keep sends made without a receipt until the broker has them, and
    re-send them after a failover."""
    max_cache_size_bytes: int = 131_072
    """``maxCacheSize``: the budget of that cache; the oldest entries go first."""
    update_uris_supported: bool = True
    """``updateURIsSupported``: ask brokers for their cluster list and use it."""
    update_uris_url: str | None = None
    """``updateURIsURL``: a file path, ``file:`` or ``http(s):`` URL holding a comma-separated
    URI list, read again at the start of every reconnect pass."""
    rebalance_update_uris: bool = True
    """``rebalanceUpdateURIs``: accepted for compatibility (see the module docstring)."""
    reconnect_supported: bool = True
    """``reconnectSupported``: obey a broker's request to reconnect elsewhere."""
    warn_after_reconnect_attempts: int = 10
    """``warnAfterReconnectAttempts``: log a warning on failed pass 1 and every Nth (<=0: never)."""
    priority_backup: bool = False
    """``priorityBackup``: while on a non-priority broker, keep trying the priority ones and
    move back as soon as one is up (seed 000 §2.1.3)."""
    priority_uris: tuple[URI, ...] = ()
    """``priorityURIs``: the priority brokers; empty means the first URI of the list."""
    nested: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """``nested.*``: options set on every member URI."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "nested", MappingProxyType(dict(self.nested)))


@dataclass(frozen=True, slots=True)
class DiscoveryOptions:
    """A ``discovery:`` URL's options: those of the failover behind it, and what it injects."""

    failover: FailoverOptions
    discovered: Mapping[str, str]
    """Options set on every discovered URI (unrecognised ones and ``discovered.*``)."""


DISCOVERY_DEFAULTS: Final = FailoverOptions()
"""Table 2.3's five options have the same defaults as Table 2.1's, except
``maxReconnectAttempts``, whose 0 means "unlimited" there."""


def option_error(url: str, name: str, message: str) -> BrokerURLError:
    """The error for a bad option value: names the option (and, in ``part``, where it is)."""
    return BrokerURLError(f"option {name}: {message}", url=url, part=name)


def int_value(minimum: int) -> Callable[[str, str, str], int]:
    def parse(url: str, name: str, value: str) -> int:
        text = value.strip()
        try:
            number = int(text)
        except ValueError:
            raise option_error(url, name, f"expected a whole number, got {value!r}") from None
        if number < minimum:
            raise option_error(url, name, f"must be at least {minimum}, got {number}")
        return number

    return parse


_limit = int_value(INFINITE)
"""A pass count or a timeout: -1 (unlimited) or more."""


def bool_value(url: str, name: str, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered not in ("true", "false"):
        raise option_error(url, name, f"expected true or false, got {value!r}")
    return lowered == "true"


def multiplier_value(url: str, name: str, value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise option_error(url, name, f"expected a number, got {value!r}") from None
    if not number >= 1.0 or number == float("inf"):
        raise option_error(url, name, f"must be a finite number of at least 1, got {value!r}")
    return number


def _text(url: str, name: str, value: str) -> str | None:
    return value or None


def _uri_list(url: str, name: str, value: str) -> tuple[URI, ...]:
    return parse_member_list(value, url=url, part=name)


def _track_producers(url: str, name: str, value: str) -> bool:
    if not bool_value(url, name, value):
        raise option_error(
            url, name, "false is not supported: FerryMQ always replays a transaction's sends"
        )
    return True


# URL option name -> (FailoverOptions field or None for accepted-and-ignored, value parser)
_OPTIONS: Final[dict[str, tuple[str | None, Callable[[str, str, str], Any]]]] = {
    "initialReconnectDelay": ("initial_reconnect_delay_ms", int_value(0)),
    "maxReconnectDelay": ("max_reconnect_delay_ms", int_value(0)),
    "useExponentialBackOff": ("use_exponential_back_off", bool_value),
    "backOffMultiplier": ("back_off_multiplier", multiplier_value),
    "reconnectDelayExponent": ("back_off_multiplier", multiplier_value),
    "reconnectDelay": ("reconnect_delay_ms", int_value(0)),
    "reconnectDelayJitter": ("reconnect_delay_jitter_ms", int_value(0)),
    "maxReconnectAttempts": ("max_reconnect_attempts", _limit),
    "startupMaxReconnectAttempts": ("startup_max_reconnect_attempts", _limit),
    "randomize": ("randomize", bool_value),
    "backup": ("backup", bool_value),
    "backupPoolSize": ("backup_pool_size", int_value(0)),
    "timeout": ("timeout_ms", _limit),
    "trackMessages": ("track_messages", bool_value),
    "maxCacheSize": ("max_cache_size_bytes", int_value(0)),
    "updateURIsSupported": ("update_uris_supported", bool_value),
    "updateURIsURL": ("update_uris_url", _text),
    "rebalanceUpdateURIs": ("rebalance_update_uris", bool_value),
    "reconnectSupported": ("reconnect_supported", bool_value),
    "warnAfterReconnectAttempts": ("warn_after_reconnect_attempts", int_value(-(2**31))),
    "priorityBackup": ("priority_backup", bool_value),
    "priorityURIs": ("priority_uris", _uri_list),
    "trackTransactionProducers": (None, _track_producers),
}
OPTION_NAMES: Final = frozenset(_OPTIONS)
"""Every option name a ``failover:`` URL accepts (besides ``nested.*``)."""


def _unknown(url: str, name: str, scheme: str) -> BrokerURLError:
    if name.startswith("jms."):
        return option_error(
            url,
            name,
            "jms.* options configure ActiveMQ's JMS ConnectionFactory, which FerryMQ's client "
            "does not have; pass the equivalent to connect()",
        )
    close = difflib.get_close_matches(name, sorted(OPTION_NAMES), n=1)
    hint = f" (did you mean {close[0]}?)" if close else " (see seed 000 Table 2.1)"
    return option_error(url, name, f"unknown {scheme}: option{hint}")


def failover_options(
    query: Mapping[str, str],
    *,
    url: str,
    scheme: str = "failover",
    defaults: FailoverOptions = FailoverOptions(),
) -> FailoverOptions:
    """Read a ``failover:`` query; anything unknown or malformed raises ``BrokerURLError``."""
    options, rest = _read(query, url=url, defaults=defaults)
    for name in rest:
        raise _unknown(url, name, scheme)
    return options


def discovery_options(query: Mapping[str, str], *, url: str) -> DiscoveryOptions:
    """Read a ``discovery:`` query: the failover options it recognises, the rest to inject."""
    if "maxReconnectAttempts" in query:
        # Table 2.3: 0 (the default) is unlimited for the discovery transport.
        attempts = _limit(url, "maxReconnectAttempts", query["maxReconnectAttempts"])
        query = {
            **query,
            "maxReconnectAttempts": str(INFINITE if attempts == 0 else attempts),
        }
    options, rest = _read(query, url=url, defaults=DISCOVERY_DEFAULTS)
    discovered: dict[str, str] = {}
    for name, value in rest.items():
        key = name.removeprefix(DISCOVERED_PREFIX)
        if not key:
            raise option_error(url, name, "an option name must follow 'discovered.'")
        discovered[key] = value
    return DiscoveryOptions(options, MappingProxyType(discovered))


def _read(
    query: Mapping[str, str], *, url: str, defaults: FailoverOptions
) -> tuple[FailoverOptions, dict[str, str]]:
    changes: dict[str, Any] = {}
    nested: dict[str, str] = {}
    rest: dict[str, str] = {}
    seen_multiplier: str | None = None
    for name, value in query.items():
        if name.startswith(NESTED_PREFIX):
            key = name.removeprefix(NESTED_PREFIX)
            if not key:
                raise option_error(url, name, "an option name must follow 'nested.'")
            nested[key] = value
            continue
        spec = _OPTIONS.get(name)
        if spec is None:
            rest[name] = value
            continue
        target, parse = spec
        if target == "back_off_multiplier":
            if seen_multiplier is not None:
                raise option_error(url, name, f"give either {seen_multiplier} or {name}, not both")
            seen_multiplier = name
        parsed = parse(url, name, value)
        if target is not None:
            changes[target] = parsed
    options = replace(defaults, **changes, nested={**defaults.nested, **nested})
    return options, rest


def parse_member_list(text: str, *, url: str, part: str) -> tuple[URI, ...]:
    """A comma-separated list of plain broker URIs (``priorityURIs``, an ``updateURIsURL``
    file, a broker's ``ferrymq.cluster-brokers``)."""
    members: list[URI] = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        try:
            parsed = parse_uri(item)
        except URIError as exc:
            raise BrokerURLError(f"{part}: {exc}", url=url, part=item) from None
        if not isinstance(parsed, URI):
            raise BrokerURLError(
                f"{part}: expected a broker URI (tcp://HOST:PORT), got a list", url=url, part=item
            )
        members.append(parsed)
    return tuple(members)


def inject(uri: URI, options: Mapping[str, str]) -> URI:
    """``uri`` with ``options`` set, overriding its own values (``nested.*``, discovered
    options)."""
    if not options:
        return uri
    query = {**uri.query, **options}
    return replace(uri, query=query, raw=str(replace(uri, query=query)))


@dataclass(frozen=True, slots=True)
class StaticAgentOptions:
    """``static:(uri,...)?options``: the static discovery agent's own retry of a failed
    service (reference §3.2, ActiveMQ's SimpleDiscoveryAgent)."""

    initial_reconnect_delay_ms: int = 1000
    max_reconnect_delay_ms: int = 30_000
    use_exponential_back_off: bool = True
    back_off_multiplier: float = 2.0
    max_reconnect_attempts: int = 0
    """0: retry a failed service for ever; N: give it up after N failures."""
    min_connect_time_ms: int = 5000
    """A failure sooner than this after the service was (re)announced grows the back-off; a
    later one starts it again from ``initialReconnectDelay``."""


_AGENT_OPTIONS: Final[dict[str, tuple[str, Callable[[str, str, str], Any]]]] = {
    "initialReconnectDelay": ("initial_reconnect_delay_ms", int_value(0)),
    "maxReconnectDelay": ("max_reconnect_delay_ms", int_value(0)),
    "useExponentialBackOff": ("use_exponential_back_off", bool_value),
    "backOffMultiplier": ("back_off_multiplier", multiplier_value),
    "maxReconnectAttempts": ("max_reconnect_attempts", int_value(0)),
    "minConnectTime": ("min_connect_time_ms", int_value(0)),
}


def static_agent_options(query: Mapping[str, str], *, url: str) -> StaticAgentOptions:
    changes: dict[str, Any] = {}
    for name, value in query.items():
        spec = _AGENT_OPTIONS.get(name)
        if spec is None:
            known = ", ".join(sorted(_AGENT_OPTIONS))
            raise option_error(url, name, f"unknown static discovery agent option (known: {known})")
        target, parse = spec
        changes[target] = parse(url, name, value)
    return replace(StaticAgentOptions(), **changes)
