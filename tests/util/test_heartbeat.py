"""The heart-beat watchdog's timing, on a clock that moves only when the test moves it.

Times are binary fractions of a second (0.25, 0.5, 1.5), so a deadline is exact and "one step
short: nothing; one step more: gone" holds to the last bit.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable

import pytest

from ferrymq.util.heartbeat import CheckSchedule, HeartBeatWatchdog

STEP = 1 / 64


class Timer:
    def __init__(self, callback: Callable[[], object]) -> None:
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualLoop:
    """The event loop's ``time``/``call_at``, in seconds, moved by ``advance``."""

    def __init__(self) -> None:
        self.now = 0.0
        self._timers: list[tuple[float, int, Timer]] = []
        self._order = itertools.count()

    def time(self) -> float:
        return self.now

    def call_at(self, when: float, callback: Callable[[], object], /) -> Timer:
        timer = Timer(callback)
        heapq.heappush(self._timers, (when, next(self._order), timer))
        return timer

    def advance(self, seconds: float) -> None:
        target = self.now + seconds
        while self._timers and self._timers[0][0] <= target:
            when, _, timer = heapq.heappop(self._timers)
            if not timer.cancelled:
                self.now = max(self.now, when)
                timer.callback()
        self.now = target

    @property
    def armed(self) -> int:
        return sum(1 for _, _, timer in self._timers if not timer.cancelled)


class Link:
    """A watchdog's owner: what it was told, and when."""

    def __init__(self, loop: ManualLoop) -> None:
        self.loop = loop
        self.keep_alives: list[float] = []
        self.gone: list[tuple[float, float]] = []
        self.reads = 0
        self.writes = 0

    # the counters of a broker connection, bumped by its hot path
    @property
    def read_activity(self) -> int:
        return self.reads

    @property
    def write_activity(self) -> int:
        return self.writes

    def keep_alive(self) -> None:
        self.keep_alives.append(self.loop.now)
        self.writes += 1  # a broker connection writes the EOL through itself

    def peer_gone(self, silent_s: float) -> None:
        self.gone.append((self.loop.now, silent_s))


@pytest.fixture
def loop() -> ManualLoop:
    return ManualLoop()


def at_deadline(loop: ManualLoop, link: Link, *, keep: float, read: float) -> HeartBeatWatchdog:
    watchdog = HeartBeatWatchdog(
        keep_alive_after_s=keep,
        read_timeout_s=read,
        grace=1.5,
        send_keep_alive=link.keep_alive,
        on_peer_gone=link.peer_gone,
        timers=loop,
    )
    watchdog.start()
    return watchdog


def every_interval(loop: ManualLoop, link: Link, *, keep: float, read: float) -> HeartBeatWatchdog:
    watchdog = HeartBeatWatchdog(
        keep_alive_after_s=keep,
        read_timeout_s=read,
        send_keep_alive=link.keep_alive,
        on_peer_gone=link.peer_gone,
        schedule=CheckSchedule.EVERY_INTERVAL,
        activity=link,
        timers=loop,
    )
    watchdog.start()
    return watchdog


# ---- at the deadline (the client, the replication link) ----


def test_a_silent_peer_is_gone_exactly_at_the_interval_times_the_grace(loop: ManualLoop) -> None:
    link = Link(loop)
    watchdog = at_deadline(loop, link, keep=0, read=1.0)
    loop.advance(0.5)
    watchdog.touch_read()
    loop.advance(1.5 - STEP)
    assert link.gone == []
    loop.advance(STEP)
    assert link.gone == [(2.0, 1.5)]
    assert watchdog.peer_gone
    assert loop.armed == 0


def test_keep_alives_go_out_after_the_interval_without_a_write(loop: ManualLoop) -> None:
    link = Link(loop)
    watchdog = at_deadline(loop, link, keep=0.25, read=0)
    loop.advance(0.25)
    assert link.keep_alives == [0.25]
    loop.advance(0.125)
    watchdog.touch_wrote()  # a frame went out: the next keep-alive counts from it
    loop.advance(0.25 - STEP)
    assert link.keep_alives == [0.25]
    loop.advance(STEP)
    assert link.keep_alives == [0.25, 0.625]
    loop.advance(0.5)
    assert link.keep_alives == [0.25, 0.625, 0.875, 1.125]
    assert link.gone == []


def test_while_receiving_the_peer_counts_as_heard(loop: ManualLoop) -> None:
    link = Link(loop)
    watchdog = at_deadline(loop, link, keep=0, read=1.0)
    with watchdog.receiving():  # a store write of what was read takes ten seconds
        loop.advance(10.0)
    assert link.gone == []
    loop.advance(1.5)
    assert len(link.gone) == 1
    assert link.gone[0][1] >= 1.5


def test_counters_cannot_drive_checks_at_a_deadline(loop: ManualLoop) -> None:
    link = Link(loop)
    with pytest.raises(ValueError, match="touch_read"):
        HeartBeatWatchdog(
            keep_alive_after_s=1,
            read_timeout_s=1,
            send_keep_alive=link.keep_alive,
            on_peer_gone=link.peer_gone,
            activity=link,
        )


# ---- every interval (the broker, ActiveMQ's InactivityMonitor) ----


def test_the_broker_checks_once_per_interval_whether_anything_was_read(loop: ManualLoop) -> None:
    link = Link(loop)
    every_interval(loop, link, keep=0, read=1.0)
    loop.advance(0.25)
    link.reads += 1  # read in the first interval: the first check passes
    loop.advance(0.75)
    assert link.gone == []
    loop.advance(1.0 - STEP)  # silent ever since, but the second check is not due yet
    assert link.gone == []
    loop.advance(STEP)
    assert [when for when, _ in link.gone] == [2.0]
    assert loop.armed == 0


def test_the_broker_sends_a_keep_alive_after_an_interval_with_no_write(loop: ManualLoop) -> None:
    link = Link(loop)
    every_interval(loop, link, keep=0.5, read=0)
    loop.advance(0.25)
    link.writes += 1  # a frame in the first interval: no keep-alive at its end
    loop.advance(0.25)
    assert link.keep_alives == []
    loop.advance(0.5)
    assert link.keep_alives == [1.0]
    loop.advance(1.0)  # idle: one each interval, as ActiveMQ's write check does
    assert link.keep_alives == [1.0, 1.5, 2.0]


def test_touches_drive_the_interval_checks_without_counters(loop: ManualLoop) -> None:
    link = Link(loop)
    watchdog = HeartBeatWatchdog(
        keep_alive_after_s=0.5,
        read_timeout_s=1.0,
        send_keep_alive=link.keep_alive,
        on_peer_gone=link.peer_gone,
        schedule=CheckSchedule.EVERY_INTERVAL,
        timers=loop,
    )
    watchdog.start()
    loop.advance(0.25)
    watchdog.touch_read()
    watchdog.touch_wrote()
    loop.advance(0.25)
    assert link.keep_alives == []  # written in the first interval
    loop.advance(0.5)
    assert link.keep_alives == [1.0]  # nothing in the second; read in the first check's span
    assert link.gone == []
    loop.advance(1.0)
    assert link.keep_alives == [1.0, 1.5]
    assert [when for when, _ in link.gone] == [2.0]
    assert loop.armed == 0


# ---- both ----


@pytest.mark.parametrize("schedule", [at_deadline, every_interval])
def test_stop_disarms_both_checks(
    loop: ManualLoop, schedule: Callable[..., HeartBeatWatchdog]
) -> None:
    link = Link(loop)
    watchdog = schedule(loop, link, keep=0.25, read=1.0)
    assert loop.armed == 2
    watchdog.stop()
    watchdog.stop()
    assert loop.armed == 0
    loop.advance(10.0)
    assert link.keep_alives == []
    assert link.gone == []


@pytest.mark.parametrize("schedule", [at_deadline, every_interval])
def test_zero_intervals_arm_nothing(
    loop: ManualLoop, schedule: Callable[..., HeartBeatWatchdog]
) -> None:
    link = Link(loop)
    schedule(loop, link, keep=0, read=0)
    assert loop.armed == 0


def test_a_keep_alive_writer_that_stops_the_watchdog_is_not_rearmed(loop: ManualLoop) -> None:
    link = Link(loop)

    def closing_writer() -> None:
        link.keep_alive()
        watchdog.stop()  # the write found the connection closed

    watchdog = HeartBeatWatchdog(
        keep_alive_after_s=0.25,
        read_timeout_s=0,
        send_keep_alive=closing_writer,
        on_peer_gone=link.peer_gone,
        timers=loop,
    )
    watchdog.start()
    loop.advance(1.0)
    assert link.keep_alives == [0.25]
    assert loop.armed == 0


async def test_it_runs_on_the_event_loop_by_default() -> None:
    loop = asyncio.get_running_loop()
    gone: asyncio.Future[float] = loop.create_future()
    beats: list[float] = []
    watchdog = HeartBeatWatchdog(
        keep_alive_after_s=0.01,
        read_timeout_s=0.02,
        grace=1.5,
        send_keep_alive=lambda: beats.append(loop.time()),
        on_peer_gone=gone.set_result,
    )
    started = loop.time()
    watchdog.start()
    silent_s = await asyncio.wait_for(gone, 10)
    assert silent_s >= 0.03
    assert beats
    assert beats[0] - started >= 0.01
    watchdog.stop()
