"""Heart-beats both ways on one connection: keep-alives out, a dead peer noticed.

One watchdog for the broker's connections (``transport.inactivity``, ActiveMQ's
``InactivityMonitor``), the client's ``tcp://`` transport and the slave's replication link.
Two timers on the event loop, no task: the *write check* calls ``send_keep_alive`` once nothing
was written for ``keep_alive_after_s``; the *read check* calls ``on_peer_gone`` once nothing was
read for ``read_timeout_s * grace``, and disarms both. The owner reports activity with
``touch_read``/``touch_wrote`` (or hands over counters its hot path bumps anyway), and a
keep-alive counts as a write.

When the checks run is the ``CheckSchedule``, the one thing the three users differ in:

* ``EVERY_INTERVAL`` is ActiveMQ's ``InactivityMonitor``: a check every interval asks only
  whether the activity counter moved since the previous check. No clock is read on the hot path
  (the broker hands over its connection's counters), and a silent peer is noticed one to two
  intervals after its last frame, a keep-alive goes out one to two intervals after the last write.
* ``AT_DEADLINE`` is what STOMP 1.2 clients do (stomp.py among them): each touch records the
  loop's time, and a check runs exactly when the silence would reach its limit, so a peer is
  declared gone at ``read_timeout_s * grace`` after its last frame, to the timer's precision.

While the owner is still handling what it read (``with watchdog.receiving():`` around an
``await`` on that data, as the replication link writes a batch to its store), the read check
counts that as activity: the peer cannot be heard while its data is not being read (ActiveMQ's
``inReceive``).
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

__all__ = ["ActivityCounters", "CheckSchedule", "HeartBeatWatchdog", "Timers"]

KEEP_ALIVE_RETRY_S = 0.001
"""The shortest wait between two write checks at a deadline, so a timer that fires a hair
early never spins."""


class ActivityCounters(Protocol):
    """Counters a connection bumps on every read and write; only their changes matter."""

    @property
    def read_activity(self) -> int: ...
    @property
    def write_activity(self) -> int: ...


class Cancellable(Protocol):
    def cancel(self) -> None: ...


class Timers(Protocol):
    """The part of the event loop the watchdog uses (a test passes a fake clock)."""

    def time(self) -> float: ...
    def call_at(self, when: float, callback: Callable[[], object], /) -> Cancellable: ...


class CheckSchedule(enum.Enum):
    """When the checks run; see the module docstring."""

    EVERY_INTERVAL = enum.auto()
    """ActiveMQ's ``InactivityMonitor``: once per interval, on activity counters."""
    AT_DEADLINE = enum.auto()
    """STOMP clients: when the silence reaches its limit, on the time of the last touch."""


def _not_started() -> float:
    return 0.0


class HeartBeatWatchdog:
    """Keep-alives after ``keep_alive_after_s`` of write silence, ``on_peer_gone(silent_s)``
    after ``read_timeout_s * grace`` of read silence (0 turns either check off).

    ``silent_s`` is exact ``AT_DEADLINE``; ``EVERY_INTERVAL`` it is the time since the last
    check that saw activity, a lower bound.
    """

    def __init__(
        self,
        *,
        keep_alive_after_s: float,
        read_timeout_s: float,
        send_keep_alive: Callable[[], None],
        on_peer_gone: Callable[[float], None],
        grace: float = 1.0,
        schedule: CheckSchedule = CheckSchedule.AT_DEADLINE,
        activity: ActivityCounters | None = None,
        timers: Timers | None = None,
    ) -> None:
        if activity is not None and schedule is CheckSchedule.AT_DEADLINE:
            raise ValueError("checks at a deadline need touch_read/touch_wrote, not counters")
        self.keep_alive_after_s = keep_alive_after_s
        self.silence_allowed_s = read_timeout_s * grace
        self.schedule = schedule
        self._send_keep_alive = send_keep_alive
        self._on_peer_gone = on_peer_gone
        self._activity: ActivityCounters = self if activity is None else activity
        self._timers = timers
        self._clock: Callable[[], float] = timers.time if timers is not None else _not_started
        self.read_activity = 0
        self.write_activity = 0
        self._reads_seen = self._writes_seen = 0
        self._read_at = self._wrote_at = 0.0
        self._receiving = 0
        self._read_timer: Cancellable | None = None
        self._write_timer: Cancellable | None = None
        self.peer_gone = False
        """Set once ``on_peer_gone`` was called."""

    # ---- the owner's hooks ----

    def touch_read(self) -> None:
        self.read_activity += 1
        self._read_at = self._clock()

    def touch_wrote(self) -> None:
        self.write_activity += 1
        self._wrote_at = self._clock()

    @contextmanager
    def receiving(self) -> Iterator[None]:
        """Around the handling of data already read: the peer counts as heard meanwhile."""
        self._receiving += 1
        try:
            yield
        finally:
            self._receiving -= 1

    # ---- life cycle ----

    def start(self) -> None:
        """Arm the checks, counting from now; on the running loop unless given timers."""
        self.stop()
        timers = self._timers
        if timers is None:
            timers = self._timers = asyncio.get_running_loop()
            self._clock = timers.time
        now = timers.time()
        self._read_at = self._wrote_at = now
        self._reads_seen = self._activity.read_activity
        self._writes_seen = self._activity.write_activity
        if self.silence_allowed_s > 0:
            self._read_timer = timers.call_at(now + self.silence_allowed_s, self._check_read)
        if self.keep_alive_after_s > 0:
            self._write_timer = timers.call_at(now + self.keep_alive_after_s, self._check_write)

    def stop(self) -> None:
        """Disarm both checks (idempotent); nothing is called after this."""
        for timer in (self._read_timer, self._write_timer):
            if timer is not None:
                timer.cancel()
        self._read_timer = self._write_timer = None

    # ---- the checks ----

    def _check_read(self) -> None:
        timers = self._timers
        assert timers is not None
        now = timers.time()
        limit = self.silence_allowed_s
        if self.schedule is CheckSchedule.EVERY_INTERVAL:
            seen = self._activity.read_activity
            if seen != self._reads_seen or self._receiving:
                self._reads_seen = seen
                self._read_at = now
                self._read_timer = timers.call_at(now + limit, self._check_read)
                return
        else:
            if self._receiving:
                self._read_at = now
            if now - self._read_at < limit:
                self._read_timer = timers.call_at(self._read_at + limit, self._check_read)
                return
        self._read_timer = None
        self.stop()
        self.peer_gone = True
        self._on_peer_gone(now - self._read_at)

    def _check_write(self) -> None:
        timers = self._timers
        assert timers is not None
        armed = self._write_timer
        now = timers.time()
        interval = self.keep_alive_after_s
        if self.schedule is CheckSchedule.EVERY_INTERVAL:
            if self._activity.write_activity == self._writes_seen:
                self._keep_alive()
            self._writes_seen = self._activity.write_activity
            delay = interval
        else:
            idle = now - self._wrote_at
            if idle >= interval:
                self._keep_alive()
                idle = 0.0
            delay = max(interval - idle, KEEP_ALIVE_RETRY_S)
        if self._write_timer is armed:  # not stopped (or restarted) by the keep-alive's writer
            self._write_timer = timers.call_at(now + delay, self._check_write)

    def _keep_alive(self) -> None:
        self._send_keep_alive()
        self.touch_wrote()
