"""When the broker acts without a client asking: the periodic tick and the scheduler's alarm.

Time enters the core only as an argument (``RegionBroker.begin_batch(now_ms)``); this is where
the wall clock is read for the work nobody's request starts: once a second, expiry sweeps and
whatever else is periodic (``RegionBroker.tick``), and exactly when the next scheduled message
is due (the tick would be up to a second late), ``Scheduler.fire_due``.  Both are timer handles,
owned here and cancelled by ``stop``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from ferrymq.core.region import RegionBroker

TICK_INTERVAL_S = 1.0


def now_ms() -> int:
    return int(time.time() * 1000)


class BrokerTimers:
    """The tick and the scheduler alarm of one broker; each ends in a pass (``process``)."""

    def __init__(self, region: RegionBroker, process: Callable[[], None]) -> None:
        self._region = region
        self._process = process
        self._tick_handle: asyncio.TimerHandle | None = None
        self._alarm_handle: asyncio.TimerHandle | None = None
        self._alarm_due: int | None = None

    def start(self) -> None:
        self._tick_handle = asyncio.get_running_loop().call_later(TICK_INTERVAL_S, self._tick)

    def stop(self) -> None:
        for handle in (self._tick_handle, self._alarm_handle):
            if handle is not None:
                handle.cancel()
        self._tick_handle = self._alarm_handle = None

    def _tick(self) -> None:
        self._region.tick(now_ms())
        self._process()
        self._tick_handle = asyncio.get_running_loop().call_later(TICK_INTERVAL_S, self._tick)

    def arm_scheduler(self) -> None:
        """Wake up when the next scheduled message is due, if that is sooner than planned."""
        scheduler = self._region.scheduler
        if scheduler is None:
            return
        due = scheduler.next_due()
        if due is None or (self._alarm_due is not None and self._alarm_due <= due):
            return
        if self._alarm_handle is not None:
            self._alarm_handle.cancel()
        self._alarm_due = due
        delay_s = max(0.0, (due - now_ms()) / 1000)
        self._alarm_handle = asyncio.get_running_loop().call_later(delay_s, self._alarm)

    def _alarm(self) -> None:
        self._alarm_handle = None
        self._alarm_due = None
        scheduler = self._region.scheduler
        if scheduler is not None:
            at = now_ms()
            self._region.begin_batch(at)
            scheduler.fire_due(at)
        self._process()
