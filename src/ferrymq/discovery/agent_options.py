"""Reading a discovery agent's URI options strictly, for the agents that share a vocabulary.

The multicast and zeroconf agents take several of the same options (an interface under more
than one name, ActiveMQ's ``MulticastDiscoveryAgent`` back-off after ``service_failed``) and
refuse the same way what they do not know: each agent describes its options as a table (URL
name -> its dataclass field and value reader) and ``read_options`` checks a query against it.
ActiveMQ ignores unknown agent options silently; FerryMQ names them, with a close match.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from ferrymq.client.errors import BrokerURLError
from ferrymq.client.failover.options import (
    bool_value,
    int_value,
    multiplier_value,
    option_error,
)

OptionReader = Callable[[str, str, str], Any]
"""``(url, option name, text) -> value``; raises ``BrokerURLError`` naming the option."""
OptionTable = Mapping[str, tuple[str, OptionReader]]
"""URL option name -> (the options dataclass field it sets, its value reader)."""


def checked_value(check: Callable[[str], Any]) -> OptionReader:
    """A reader from a check that returns the value or raises ``ValueError`` saying why (a
    group name's rules, say), so the message names the option."""

    def parse(url: str, name: str, value: str) -> Any:
        try:
            return check(value)
        except ValueError as exc:
            raise option_error(url, name, str(exc)) from None

    return parse


def interface_value(url: str, name: str, value: str) -> str:
    """An interface option: a name (``lo``) or an IPv4 address (``127.0.0.1``), checked
    against the host only when the agent starts."""
    text = value.strip()
    if not text:
        raise option_error(url, name, "expected an interface name (lo) or IPv4 address (127.0.0.1)")
    return text


@dataclass(frozen=True, slots=True)
class HoldBackSettings:
    """The fields ``HOLD_BACK_OPTIONS`` set, at ActiveMQ's ``MulticastDiscoveryAgent``
    defaults; an agent's options dataclass inherits them."""

    initial_reconnect_delay_ms: int = 5000
    """``initialReconnectDelay``: how long a failed service is not announced again."""
    max_reconnect_delay_ms: int = 30_000
    """``maxReconnectDelay``: the longest such wait."""
    use_exponential_back_off: bool = False
    """``useExponentialBackOff``: multiply the wait by ``backOffMultiplier`` per failure."""
    back_off_multiplier: float = 2.0
    """``backOffMultiplier``."""
    max_reconnect_attempts: int = 0
    """``maxReconnectAttempts``: 0 announces a failed service again for ever; N gives it up
    after N failures (until it goes away and comes back)."""


HOLD_BACK_OPTIONS: Final[dict[str, tuple[str, OptionReader]]] = {
    "initialReconnectDelay": ("initial_reconnect_delay_ms", int_value(0)),
    "maxReconnectDelay": ("max_reconnect_delay_ms", int_value(0)),
    "useExponentialBackOff": ("use_exponential_back_off", bool_value),
    "backOffMultiplier": ("back_off_multiplier", multiplier_value),
    "maxReconnectAttempts": ("max_reconnect_attempts", int_value(0)),
}
"""How long a service reported failed is held back (``multicast_services.RemoteServices``):
ActiveMQ's ``MulticastDiscoveryAgent`` options, taken by every agent that holds back."""


def read_options(
    query: Mapping[str, str], table: OptionTable, *, url: str, what: str
) -> dict[str, Any]:
    """Field -> value for every option in ``query``. An option not in ``table`` raises
    ``BrokerURLError`` naming it (``unknown <what> option``, with a close match if any); so do
    two names of one field (synonyms such as ``interface`` and ``networkInterface``) given
    different values."""
    changes: dict[str, Any] = {}
    given_as: dict[str, str] = {}
    for name, value in query.items():
        spec = table.get(name)
        if spec is None:
            close = difflib.get_close_matches(name, sorted(table), n=1)
            hint = f"did you mean {close[0]}?" if close else f"known: {', '.join(sorted(table))}"
            raise option_error(url, name, f"unknown {what} option ({hint})")
        target, parse = spec
        parsed = parse(url, name, value)
        earlier = given_as.get(target)
        if earlier is not None and changes[target] != parsed:
            raise option_error(url, name, f"give either {earlier} or {name}, not both")
        given_as.setdefault(target, name)
        changes[target] = parsed
    return changes


def refuse_path(agent_uri_path: str, *, scheme: str, url: str) -> None:
    """Agent URIs name a group or an address, never a path."""
    if agent_uri_path not in ("", "/"):
        raise BrokerURLError(f"{scheme}: takes no path", url=url, part=agent_uri_path)
