"""``FakeClock``: time moves only by ``advance``, and timers fire in due order at their time."""

from __future__ import annotations

import pytest

from ferrymq.testing import FakeClock


def test_time_stands_still_until_advanced() -> None:
    clock = FakeClock(5_000)
    assert clock.now_ms() == clock.now_ms() == 5_000
    assert clock.advance(499) == 5_499
    assert clock.advance(0) == 5_499
    assert clock.now_ms() == 5_499


def test_a_default_clock_does_not_start_at_zero() -> None:
    assert FakeClock().now_ms() > 0


def test_a_clock_does_not_go_back() -> None:
    clock = FakeClock(100)
    with pytest.raises(ValueError, match="does not go back"):
        clock.advance(-1)
    assert clock.now_ms() == 100


def test_timers_fire_in_due_order_each_at_its_own_time() -> None:
    clock = FakeClock(0)
    fired: list[tuple[str, int]] = []
    clock.call_later(30, lambda: fired.append(("c", clock.now_ms())))
    clock.call_later(10, lambda: fired.append(("a", clock.now_ms())))
    clock.call_at(10, lambda: fired.append(("b", clock.now_ms())))  # same ms: armed later
    clock.advance(9)
    assert fired == []
    assert clock.pending == 3
    clock.advance(1)
    assert fired == [("a", 10), ("b", 10)]
    assert clock.advance(100) == 110
    assert fired == [("a", 10), ("b", 10), ("c", 30)]
    assert clock.pending == 0


def test_a_cancelled_timer_never_fires() -> None:
    clock = FakeClock(0)
    fired: list[int] = []
    timer = clock.call_later(10, lambda: fired.append(1))
    timer.cancel()
    assert clock.pending == 0
    clock.advance(20)
    assert fired == []


def test_a_timer_armed_by_a_timer_fires_within_the_same_step() -> None:
    """A periodic check that re-arms itself (a heart-beat watchdog) runs once per period."""
    clock = FakeClock(0)
    ticks: list[int] = []

    def tick() -> None:
        ticks.append(clock.now_ms())
        clock.call_later(100, tick)

    clock.call_later(100, tick)
    clock.advance(350)
    assert ticks == [100, 200, 300]
    assert clock.now_ms() == 350
    assert clock.pending == 1


def test_a_timer_already_due_fires_at_the_next_advance() -> None:
    clock = FakeClock(1_000)
    fired: list[int] = []
    clock.call_at(900, lambda: fired.append(clock.now_ms()))
    clock.advance(0)
    assert fired == [1_000]  # never before now: the clock does not go back for it
