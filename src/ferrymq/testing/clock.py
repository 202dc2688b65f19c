"""A clock that moves only when the test moves it, for code that takes time as an argument.

The core and the sans-IO pieces read no clock: the caller passes the time in (``now_ms``). A
test of expiry, redelivery delays, scheduled jobs or heart-beat deadlines then needs a time
that stands still between two steps and jumps by exactly what the test says, so that "499 ms:
nothing; 1 ms more: delivered" is asserted to the millisecond, without sleeping::

    clock = FakeClock()
    region.tick(clock.advance(499))

``call_later`` stands in for the event loop's timers where a component under test arms one
(a heart-beat watchdog): ``advance`` fires every timer that falls due on the way, in order.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable

START_MS = 1_000_000
"""Where a clock starts unless told: not 0, so code that mistakes 0 for "no time" shows up."""


class FakeTimer:
    """A callback armed on a ``FakeClock``; ``cancel`` disarms it."""

    def __init__(self, when_ms: int, callback: Callable[[], object]) -> None:
        self.when_ms = when_ms
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """A deterministic millisecond clock with timers."""

    def __init__(self, start_ms: int = START_MS) -> None:
        self._now_ms = start_ms
        self._timers: list[tuple[int, int, FakeTimer]] = []
        self._order = itertools.count()
        """Breaks ties: timers due at the same millisecond fire in the order they were armed."""

    def now_ms(self) -> int:
        return self._now_ms

    def advance(self, ms: int) -> int:
        """Move forward by ``ms``, firing each timer due by then with ``now_ms()`` at its due
        time (a timer armed by a callback fires too if it falls within the step); returns the
        new time, to pass straight on (``region.tick(clock.advance(100))``)."""
        if ms < 0:
            raise ValueError(f"a clock does not go back ({ms} ms)")
        target = self._now_ms + ms
        while self._timers and self._timers[0][0] <= target:
            when_ms, _, timer = heapq.heappop(self._timers)
            if timer.cancelled:
                continue
            self._now_ms = max(self._now_ms, when_ms)
            timer.callback()
        self._now_ms = target
        return target

    def call_at(self, when_ms: int, callback: Callable[[], object]) -> FakeTimer:
        """Run ``callback`` once the clock reaches ``when_ms`` (at the next ``advance`` if that
        has passed already)."""
        timer = FakeTimer(when_ms, callback)
        heapq.heappush(self._timers, (when_ms, next(self._order), timer))
        return timer

    def call_later(self, delay_ms: int, callback: Callable[[], object]) -> FakeTimer:
        return self.call_at(self._now_ms + delay_ms, callback)

    @property
    def pending(self) -> int:
        """Timers armed and neither fired nor cancelled."""
        return sum(1 for _, _, timer in self._timers if not timer.cancelled)
