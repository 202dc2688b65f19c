"""The failover policy (reference §1.3), exhaustively: waits, limits, warnings, order."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ferrymq.client.failover import FailoverOptions, ReconnectPolicy, broker_key
from ferrymq.util.uri import URI

A, B, C, D = (URI("tcp", f"h{i}", 61610 + i) for i in range(4))


def policy(**changes: object) -> ReconnectPolicy:
    return ReconnectPolicy(replace(FailoverOptions(), **changes))  # type: ignore[arg-type]


# ---- waits ----


def test_no_wait_before_the_very_first_connect_and_the_initial_delay_after_a_drop() -> None:
    p = policy(initial_reconnect_delay_ms=100)
    assert p.delay_before_pass_ms(1, startup=True) == 0
    assert p.delay_before_pass_ms(1, startup=False) == 100


def test_exponential_back_off_is_capped() -> None:
    p = policy(initial_reconnect_delay_ms=100, back_off_multiplier=3.0, max_reconnect_delay_ms=1000)
    assert [p.delay_before_pass_ms(n, startup=False) for n in range(1, 7)] == [
        100,
        100,
        300,
        900,
        1000,
        1000,
    ]
    assert [p.delay_before_pass_ms(n, startup=True) for n in range(1, 5)] == [0, 100, 300, 900]


def test_without_exponential_back_off_the_wait_stays_initial() -> None:
    p = policy(initial_reconnect_delay_ms=250, use_exponential_back_off=False)
    assert {p.delay_before_pass_ms(n, startup=False) for n in range(1, 20)} == {250}


def test_reconnect_delay_starts_the_back_off_before_the_first_connection_only() -> None:
    p = policy(initial_reconnect_delay_ms=10, reconnect_delay_ms=1000)
    assert p.back_off_ms(1, startup=True) == 1000
    assert p.back_off_ms(2, startup=True) == 2000
    assert p.back_off_ms(1, startup=False) == 10


def test_jitter_adds_at_most_its_value_and_respects_the_cap() -> None:
    p = policy(initial_reconnect_delay_ms=100, reconnect_delay_jitter_ms=50)
    assert p.back_off_ms(1, startup=False, jitter=0.0) == 100
    assert p.back_off_ms(1, startup=False, jitter=0.5) == 125
    capped = policy(
        initial_reconnect_delay_ms=100, max_reconnect_delay_ms=110, reconnect_delay_jitter_ms=50
    )
    assert capped.back_off_ms(1, startup=False, jitter=0.99) == 110


def test_impossible_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="at least one"):
        policy().back_off_ms(0, startup=False)
    with pytest.raises(ValueError, match="from 1"):
        policy().delay_before_pass_ms(0, startup=True)


@given(
    initial=st.integers(0, 10_000),
    multiplier=st.floats(1.0, 10.0),
    cap=st.integers(0, 60_000),
    exponential=st.booleans(),
    failures=st.integers(1, 10_000),
)
def test_back_off_properties(
    initial: int, multiplier: float, cap: int, exponential: bool, failures: int
) -> None:
    p = policy(
        initial_reconnect_delay_ms=initial,
        back_off_multiplier=multiplier,
        max_reconnect_delay_ms=cap,
        use_exponential_back_off=exponential,
    )
    step = p.back_off_ms(failures, startup=False)
    assert p.back_off_ms(1, startup=False) == initial
    if not exponential or initial == 0:
        assert step == initial
        return
    if failures > 1:
        assert step <= max(cap, initial)
        assert step >= min(initial, cap)
        assert p.back_off_ms(failures + 1, startup=False) >= min(step, cap)
        if failures < 40 and initial * multiplier ** (failures - 1) < cap:
            assert step == pytest.approx(initial * multiplier ** (failures - 1), abs=1)


# ---- limits ----


@pytest.mark.parametrize(
    ("max_attempts", "startup_max", "startup_passes", "reconnect_passes"),
    [
        (-1, -1, None, None),
        (0, -1, 1, 0),  # Table 2.1: one pass at start-up, no failover after
        (3, -1, 3, 3),
        (-1, 0, 1, None),  # a single pass at start-up, then reconnect for ever
        (-1, 2, 2, None),
        (5, 1, 1, 5),
        (0, 4, 4, 0),
    ],
)
def test_limits_count_passes(
    max_attempts: int,
    startup_max: int,
    startup_passes: int | None,
    reconnect_passes: int | None,
) -> None:
    p = policy(max_reconnect_attempts=max_attempts, startup_max_reconnect_attempts=startup_max)
    assert p.pass_limit(startup=True) == startup_passes
    assert p.pass_limit(startup=False) == reconnect_passes
    assert p.may_reconnect() is (reconnect_passes != 0)
    for startup, limit in ((True, startup_passes), (False, reconnect_passes)):
        given_up_at = next((n for n in range(1, 50) if p.gives_up(n, startup=startup)), None)
        assert given_up_at == (None if limit is None else max(limit, 1))


def test_warnings_on_the_first_failed_pass_and_every_nth() -> None:
    p = policy(warn_after_reconnect_attempts=3)
    assert [n for n in range(1, 11) if p.warns(n)] == [1, 3, 6, 9]
    assert not any(policy(warn_after_reconnect_attempts=0).warns(n) for n in range(1, 30))
    assert not any(policy(warn_after_reconnect_attempts=-2).warns(n) for n in range(1, 30))


# ---- order ----


def keys(uris: list[URI]) -> list[tuple[str, int]]:
    return [broker_key(uri) for uri in uris]


def test_in_order_without_randomize_and_the_failed_uri_last() -> None:
    p = policy(randomize=False)
    rng = random.Random(1)
    assert p.connect_list([A, B, C], [], None, rng) == [A, B, C]
    assert p.connect_list([A, B, C], [], A, rng) == [B, C, A]
    assert p.connect_list([A, B, C], [], B, rng) == [A, C, B]


def test_updated_uris_take_precedence_without_repeats() -> None:
    p = policy(randomize=False)
    same_as_b = URI("stomp", "H1", 61611)  # another spelling of B
    listed = p.connect_list([A, B], [C, same_as_b, C], None, random.Random(1))
    assert keys(listed) == keys([C, B, A])


def test_randomize_shuffles_every_pass() -> None:
    p = policy()
    rng = random.Random(7)
    orders = {tuple(keys(p.connect_list([A, B, C, D], [], None, rng))) for _ in range(40)}
    assert len(orders) > 5


@given(
    static=st.lists(st.sampled_from([A, B, C, D]), max_size=6),
    updated=st.lists(st.sampled_from([A, B, C, D]), max_size=4),
    failed=st.none() | st.sampled_from([A, B, C, D]),
    randomize=st.booleans(),
    seed=st.integers(0, 2**32),
)
def test_connect_list_properties(
    static: list[URI], updated: list[URI], failed: URI | None, randomize: bool, seed: int
) -> None:
    listed = policy(randomize=randomize).connect_list(static, updated, failed, random.Random(seed))
    assert len(set(keys(listed))) == len(listed)  # each broker once
    assert set(keys(listed)) == set(keys(static + updated))
    if failed is not None and broker_key(failed) in keys(listed):
        assert keys(listed)[-1] == broker_key(failed)
    rest = [k for k in keys(listed) if failed is None or k != broker_key(failed)]
    updated_keys = set(keys(updated))
    seen_static = False
    for key in rest:  # updated ones first
        if key not in updated_keys:
            seen_static = True
        else:
            assert not seen_static


def test_priority_is_the_first_uri_or_the_priority_list() -> None:
    assert not policy().is_priority(A, [A, B])  # only with priorityBackup
    p = policy(priority_backup=True)
    assert p.is_priority(URI("tcp", "H0", 61610), [A, B])
    assert not p.is_priority(B, [A, B])
    listed = policy(priority_backup=True, priority_uris=(C, B))
    assert listed.priority_list([A, B]) == [C, B]
    assert listed.is_priority(B, [A, B])
    assert not listed.is_priority(A, [A, B])
