"""The options of a ``fanout:(agentURI)?options`` URL, read strictly (seed 001 Table 8.2).

The five reconnect options are the failover ones, parsed by ``failover_options`` so their values
are checked and reported the same way; they apply to each member (each broker the agent
announces reconnects on its own). Where seed and ActiveMQ differ, decided here:

* ``maxReconnectAttempts``: Table 8.2 says -1 (the default) is unlimited and 0 disables
  reconnection; ActiveMQ's FanoutTransport defaults to 0 and only a value above 0 limits
  anything (reference §3.6), as seed 000 Table 2.3 says for ``discovery:``. Both -1 and 0 mean
  unlimited here, so a URL written for either works as it did; N > 0 fails the whole transport
  when one member has failed N connect attempts in a row.
* ``useExponentialBackOff``: a final field without setter in ActiveMQ, but documented by
  Table 8.2; accepted and honoured.
* ``backOffMultiplier`` is Table 8.2's name; ``reconnectDelayExponent`` (ActiveMQ's setter) is
  accepted as a synonym, and giving both is an error.

As with ``discovery:``, every other option, and every ``discovered.X`` (or ``nested.X``), is
set on each announced broker URI (seed 001 "Setting options on the discovered transports").
Those options are checked at once against a ``tcp:`` URI, so a misspelt fanout option fails
at ``connect()``, naming it, instead of when a broker is announced.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from ferrymq.client.errors import BrokerURLError
from ferrymq.client.failover.options import (
    DISCOVERED_PREFIX,
    INFINITE,
    NESTED_PREFIX,
    FailoverOptions,
    bool_value,
    failover_options,
    inject,
    int_value,
    option_error,
)
from ferrymq.client.failover.policy import ReconnectPolicy
from ferrymq.client.tcp_options import tcp_options
from ferrymq.util.uri import URI

RECONNECT_OPTIONS: Final = frozenset(
    {
        "initialReconnectDelay",
        "maxReconnectDelay",
        "useExponentialBackOff",
        "backOffMultiplier",
        "reconnectDelayExponent",
        "maxReconnectAttempts",
    }
)
FANOUT_OPTIONS: Final = frozenset({"minAckCount", "fanOutQueues"})
OPTION_NAMES: Final = RECONNECT_OPTIONS | FANOUT_OPTIONS
"""Every option a ``fanout:`` URL reads itself; the rest go to the discovered URIs."""

_PROBE: Final = URI("tcp", "127.0.0.1", 61613)
"""A member URI to check injected options against (members are ``tcp:``/``stomp:`` only)."""


@dataclass(frozen=True, slots=True)
class FanoutOptions:
    """Table 8.2, at its defaults."""

    initial_reconnect_delay_ms: int = 10
    """``initialReconnectDelay``: the wait before a lost member's first reconnect attempt."""
    max_reconnect_delay_ms: int = 30_000
    """``maxReconnectDelay``: a member's back-off never waits longer."""
    use_exponential_back_off: bool = True
    """``useExponentialBackOff``: multiply the wait after each failed attempt."""
    back_off_multiplier: float = 2.0
    """``backOffMultiplier`` (ActiveMQ: ``reconnectDelayExponent``)."""
    max_reconnect_attempts: int = INFINITE
    """``maxReconnectAttempts``: -1 (or 0) unlimited; N fails the transport once a member has
    failed N attempts in a row."""
    fan_out_queues: bool = False
    """``fanOutQueues``: queue messages go to every member, not only to the primary."""
    min_ack_count: int = 2
    """``minAckCount``: members that must be connected before anything is written, and that
    must confirm a fanned-out request before its receipt is answered."""
    discovered: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """Options set on every announced broker URI."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "discovered", MappingProxyType(dict(self.discovered)))

    def reconnect_policy(self) -> ReconnectPolicy:
        """The failover policy over one member: a pass is one attempt at that broker."""
        return ReconnectPolicy(
            FailoverOptions(
                initial_reconnect_delay_ms=self.initial_reconnect_delay_ms,
                max_reconnect_delay_ms=self.max_reconnect_delay_ms,
                use_exponential_back_off=self.use_exponential_back_off,
                back_off_multiplier=self.back_off_multiplier,
                max_reconnect_attempts=self.max_reconnect_attempts,
                startup_max_reconnect_attempts=self.max_reconnect_attempts,
            )
        )


def fanout_options(query: Mapping[str, str], *, url: str) -> FanoutOptions:
    """Read a ``fanout:`` query; a bad value or a bad injected option raises
    ``BrokerURLError`` naming it."""
    reconnect = {name: value for name, value in query.items() if name in RECONNECT_OPTIONS}
    parsed = failover_options(reconnect, url=url, scheme="fanout")
    attempts = parsed.max_reconnect_attempts
    discovered: dict[str, str] = {}
    for name, value in query.items():
        if name not in OPTION_NAMES:
            discovered[_injected_name(url, name, value)] = value
    return FanoutOptions(
        initial_reconnect_delay_ms=parsed.initial_reconnect_delay_ms,
        max_reconnect_delay_ms=parsed.max_reconnect_delay_ms,
        use_exponential_back_off=parsed.use_exponential_back_off,
        back_off_multiplier=parsed.back_off_multiplier,
        max_reconnect_attempts=INFINITE if attempts == 0 else attempts,
        fan_out_queues=bool_value(url, "fanOutQueues", query.get("fanOutQueues", "false")),
        min_ack_count=_count(url, "minAckCount", query.get("minAckCount", "2")),
        discovered=discovered,
    )


def _injected_name(url: str, name: str, value: str) -> str:
    """The option ``name`` sets on each discovered URI, checked there now."""
    key = name
    for prefix in (DISCOVERED_PREFIX, NESTED_PREFIX):
        if name.startswith(prefix):
            key = name.removeprefix(prefix)
            if not key:
                raise option_error(url, name, f"an option name must follow {prefix!r}")
    try:
        tcp_options(inject(_PROBE, {key: value}))
    except BrokerURLError as exc:
        lead = "set on every discovered broker"
        if key == name:
            lead = f"not a fanout: option (seed 001 Table 8.2), so {lead}"
        close = difflib.get_close_matches(name, sorted(OPTION_NAMES), n=1)
        hint = f"; did you mean {close[0]}?" if close and key == name else ""
        raise option_error(url, name, f"{lead}, which refuses it: {exc.message}{hint}") from None
    return key


_count = int_value(1)
"""A count of brokers: at least 1."""
