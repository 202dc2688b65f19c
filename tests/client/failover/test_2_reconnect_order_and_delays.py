"""Issue 3, "How it is checked" 2: ``randomize=false`` follows the list in order, and the
recorded reconnect attempts follow initialReconnectDelay, backOffMultiplier and
maxReconnectDelay. Times are checked with tolerance from below (a wait is never shorter) and
only as loosely from above as it takes to tell the back-off apart from its neighbours (no
speed assertion)."""

from __future__ import annotations

import itertools

import pytest

from ferrymq.client import ConnectAttempt, ConnectFailedError, connect
from ferrymq.testing import free_port, wait_until
from tests.client.failover.conftest import Brokers, Watcher

EARLY_S = 0.010
"""A timer may fire this much early (clock granularity)."""
LATE_S = 0.350
"""Slack above: still well below the next step of the back-off (x3 here)."""


def pass_starts(attempts: tuple[ConnectAttempt, ...]) -> list[float]:
    starts: dict[int, float] = {}
    for attempt in attempts:
        starts.setdefault(attempt.pass_number, attempt.started_at)
    return [starts[n] for n in sorted(starts)]


def check_waits(starts: list[float], expected_s: list[float]) -> None:
    gaps = [later - earlier for earlier, later in itertools.pairwise(starts)]
    assert len(gaps) == len(expected_s)
    for gap, expected in zip(gaps, expected_s, strict=True):
        assert expected - EARLY_S <= gap <= expected + LATE_S, (gaps, expected_s)


async def test_2_startup_passes_walk_the_list_in_order_with_capped_back_off() -> None:
    dead = [f"tcp://127.0.0.1:{free_port()}" for _ in range(3)]
    url = (
        f"failover:({','.join(dead)})?randomize=false&initialReconnectDelay=100"
        "&backOffMultiplier=3&maxReconnectDelay=400&startupMaxReconnectAttempts=5"
    )
    with pytest.raises(ConnectFailedError) as caught:
        await connect(url)
    attempts = caught.value.attempts
    assert [a.url for a in attempts] == dead * 5  # in order, every pass
    assert [a.pass_number for a in attempts] == [n for n in range(1, 6) for _ in dead]
    assert all(a.error for a in attempts)
    # No wait before the very first pass; then 100, x3 = 300, capped at 400, 400.
    check_waits(pass_starts(attempts), [0.100, 0.300, 0.400, 0.400])


async def test_2_reconnect_waits_the_initial_delay_and_puts_the_failed_broker_last(
    brokers: Brokers,
) -> None:
    a = await brokers.start("a")
    dead = [f"tcp://127.0.0.1:{free_port()}" for _ in range(2)]
    url = (
        f"failover:({a.url},{','.join(dead)})?randomize=false&initialReconnectDelay=100"
        "&backOffMultiplier=3&maxReconnectDelay=400"
    )
    connection = await connect(url)
    watcher = Watcher(connection)
    a.kill()
    await watcher.interruptions(1)

    def passes_after_drop() -> list[ConnectAttempt]:
        attempts = connection.statistics().transport.connect_attempts
        return [x for x in attempts if x.started_at >= watcher.interrupted_at[0]]

    await wait_until(
        lambda: {x.pass_number for x in passes_after_drop()} >= {1, 2, 3, 4},
        10.0,
        "4 passes over the list",
    )
    await brokers.restart(a)
    await watcher.resumptions(1)
    attempts = tuple(passes_after_drop())
    first_passes = [x for x in attempts if x.pass_number <= 3]
    assert [x.url for x in first_passes] == [*dead, a.url] * 3  # A failed: it goes last
    starts = pass_starts(tuple(first_passes))
    assert starts[0] - watcher.interrupted_at[0] >= 0.100 - EARLY_S  # initialReconnectDelay
    check_waits([watcher.interrupted_at[0], *starts], [0.100, 0.100, 0.300])
    assert attempts[-1].url == a.url
    assert attempts[-1].error is None
    assert connection.remote_url == a.url
    stats = connection.statistics().transport
    assert stats.reconnect_attempts == len(attempts)
    await connection.send("/queue/after", "still works", receipt=True)
    await connection.disconnect()


async def test_2_randomize_spreads_the_first_connection_over_the_list(
    brokers: Brokers,
) -> None:
    a = await brokers.start("a")
    b = await brokers.start("b")
    url = f"failover:({a.url},{b.url})"
    seen: set[str] = set()
    for _ in range(30):
        async with connect(url) as connection:
            seen.add(connection.remote_url)
        if len(seen) == 2:
            break
    assert seen == {a.url, b.url}
