"""The one back-off policy against the three loops it replaced, and ActiveMQ's rules by example."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ferrymq.client.discovery import StaticDiscoveryAgent
from ferrymq.client.failover import FailoverOptions, ReconnectPolicy
from ferrymq.client.failover.options import StaticAgentOptions
from ferrymq.discovery.multicast_options import MulticastOptions
from ferrymq.discovery.multicast_services import RemoteServices
from ferrymq.util.backoff import ExponentialBackOff

# ---- the former hand-written loops, kept verbatim as oracles ----


def failover_before(
    first: int,
    maximum: int,
    multiplier: float,
    exponential: bool,
    jitter_ms: int,
    passes: int,
    jitter: float,
) -> int:
    """``ReconnectPolicy.back_off_ms`` until the shared policy."""
    step = float(first)
    if exponential and passes > 1:
        for _ in range(passes - 1):
            if not step:
                break
            step *= multiplier
            if step >= maximum:
                step = float(maximum)
                break
    if jitter_ms and jitter:
        ceiling = max(step, float(maximum))
        step = min(step + jitter * jitter_ms, ceiling)
    return int(step)


def static_agent_before(
    initial: int, maximum: int, multiplier: float, exponential: bool, failures: int
) -> int:
    """``StaticDiscoveryAgent.delay_ms`` until the shared policy."""
    delay = float(initial)
    if exponential:
        for _ in range(failures - 1):
            delay = min(delay * multiplier, maximum)
    return int(delay)


def multicast_before(
    initial: int, maximum: int, multiplier: float, exponential: bool, failures: int
) -> int:
    """``RemoteServices.recovery_delay_ms`` until the shared policy."""
    delay = float(min(initial, maximum))
    if exponential:
        for _ in range(failures - 1):
            if delay >= maximum:
                break
            delay = min(delay * multiplier, maximum)
    return int(delay)


delays = st.integers(0, 120_000)
multipliers = st.one_of(st.floats(1.0, 10.0), st.sampled_from([1.0, 1.5, 2.0, 3.0, 1e300]))
failure_counts = st.integers(1, 300)


@given(
    first=delays,
    maximum=delays,
    multiplier=multipliers,
    exponential=st.booleans(),
    jitter_ms=st.sampled_from([0, 1, 50, 10_000]),
    passes=failure_counts,
    jitter=st.floats(0.0, 0.999),
    reconnect_delay=st.one_of(st.none(), delays),
)
def test_the_failover_back_off_is_unchanged(
    first: int,
    maximum: int,
    multiplier: float,
    exponential: bool,
    jitter_ms: int,
    passes: int,
    jitter: float,
    reconnect_delay: int | None,
) -> None:
    options = FailoverOptions(
        initial_reconnect_delay_ms=first,
        max_reconnect_delay_ms=maximum,
        back_off_multiplier=multiplier,
        use_exponential_back_off=exponential,
        reconnect_delay_jitter_ms=jitter_ms,
        reconnect_delay_ms=reconnect_delay,
    )
    policy = ReconnectPolicy(options)
    old = (maximum, multiplier, exponential, jitter_ms, passes, jitter)
    assert policy.back_off_ms(passes, startup=False, jitter=jitter) == failover_before(first, *old)
    startup_first = first if reconnect_delay is None else reconnect_delay
    assert policy.back_off_ms(passes, startup=True, jitter=jitter) == failover_before(
        startup_first, *old
    )


@given(
    initial=delays,
    maximum=delays,
    multiplier=multipliers,
    exponential=st.booleans(),
    failures=st.integers(-2, 300),
)
def test_the_static_agent_back_off_is_unchanged(
    initial: int, maximum: int, multiplier: float, exponential: bool, failures: int
) -> None:
    options = StaticAgentOptions(
        initial_reconnect_delay_ms=initial,
        max_reconnect_delay_ms=maximum,
        back_off_multiplier=multiplier,
        use_exponential_back_off=exponential,
    )
    expected = static_agent_before(initial, maximum, multiplier, exponential, failures)
    assert StaticDiscoveryAgent([], options).delay_ms(failures) == expected


@given(
    initial=delays,
    maximum=delays,
    multiplier=multipliers,
    exponential=st.booleans(),
    failures=st.integers(-2, 300),
)
def test_the_multicast_hold_back_is_unchanged(
    initial: int, maximum: int, multiplier: float, exponential: bool, failures: int
) -> None:
    options = replace(
        MulticastOptions(),
        initial_reconnect_delay_ms=initial,
        max_reconnect_delay_ms=maximum,
        back_off_multiplier=multiplier,
        use_exponential_back_off=exponential,
    )
    expected = multicast_before(initial, maximum, multiplier, exponential, failures)
    assert RemoteServices(options, set()).recovery_delay_ms(failures) == expected


# ---- the rules, by example ----


def test_the_wait_doubles_up_to_the_maximum_and_stays() -> None:
    back_off = ExponentialBackOff(initial_ms=10, maximum_ms=100)
    assert [back_off.delay_ms(n) for n in range(1, 8)] == [10, 20, 40, 80, 100, 100, 100]


def test_without_exponential_back_off_every_wait_is_the_first() -> None:
    back_off = ExponentialBackOff(initial_ms=250, maximum_ms=100, exponential=False)
    assert {back_off.delay_ms(n) for n in range(1, 20)} == {250}
    capped = replace(back_off, cap_initial=True)
    assert {capped.delay_ms(n) for n in range(1, 20)} == {100}


def test_an_initial_delay_above_the_maximum_is_kept_once_unless_capped() -> None:
    back_off = ExponentialBackOff(initial_ms=5000, maximum_ms=1000, multiplier=3.0)
    assert [back_off.delay_ms(n) for n in (1, 2, 3)] == [5000, 1000, 1000]
    capped = replace(back_off, cap_initial=True)
    assert [capped.delay_ms(n) for n in (1, 2, 3)] == [1000, 1000, 1000]


def test_jitter_adds_its_drawn_share_but_never_passes_the_maximum() -> None:
    back_off = ExponentialBackOff(initial_ms=100, maximum_ms=110, jitter_ms=50)
    assert back_off.delay_ms(1, jitter=0.0) == 100
    assert back_off.delay_ms(1, jitter=0.1) == 105
    assert back_off.delay_ms(1, jitter=0.99) == 110
    above = ExponentialBackOff(initial_ms=500, maximum_ms=110, jitter_ms=50)
    assert above.delay_ms(1, jitter=0.99) == 500  # the larger of the wait and the maximum


def test_a_huge_failure_count_costs_only_the_steps_to_the_maximum() -> None:
    back_off = ExponentialBackOff(initial_ms=1, maximum_ms=30_000, multiplier=1e300)
    assert back_off.delay_ms(10**12) == 30_000
    assert ExponentialBackOff(initial_ms=0, maximum_ms=30_000).delay_ms(10**12) == 0


def test_the_policy_is_built_from_any_options_record() -> None:
    options = StaticAgentOptions(initial_reconnect_delay_ms=7, back_off_multiplier=3.0)
    assert ExponentialBackOff.of(options) == ExponentialBackOff(7, 30_000, 3.0)
    assert ExponentialBackOff.of(options, initial_ms=9, cap_initial=True).initial_ms == 9


@pytest.mark.parametrize("multiplier", [0.5, 0.0, -1.0, float("nan")])
def test_a_shrinking_multiplier_is_refused(multiplier: float) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ExponentialBackOff(initial_ms=10, maximum_ms=100, multiplier=multiplier)
