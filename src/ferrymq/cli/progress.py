"""Progress of a long command on stderr, shared by ``send``, ``consume``, ``browse`` and ``bench``.

On a terminal it is one line rewritten in place (a few times a second); anywhere else (a log
file, CI, ``2>&1 | tee``) it is plain lines, one every ``PLAIN_INTERVAL_S`` or every tenth of
a known total, whichever comes first but never more often than ``PLAIN_MIN_INTERVAL_S``, so a
log stays short. With a known total each report has the percentage and the time left (ETA).
Nothing goes to stdout: that is the data the user pipes on.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import TextIO

TTY_INTERVAL_S = 0.2
PLAIN_INTERVAL_S = 5.0
PLAIN_MIN_INTERVAL_S = 1.0
CLEAR_LINE = "\r\x1b[K"


class Progress:
    """Counts what a command did, reports it while it runs, and sums it up at the end."""

    def __init__(
        self,
        command: str,
        verb: str,
        *,
        total: int | None = None,
        enabled: bool = True,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.command = command
        self.verb = verb
        self.total = total
        self.count = 0
        self.enabled = enabled
        self._stream = stream
        self._clock = clock
        self.started = clock()
        self._last_report = self.started
        self._last_tenth = 0
        self._line_open = False

    @property
    def stream(self) -> TextIO:
        return self._stream if self._stream is not None else sys.stderr

    @property
    def tty(self) -> bool:
        isatty = getattr(self.stream, "isatty", None)
        return bool(isatty is not None and isatty())

    def tick(self, n: int = 1) -> None:
        self.update(self.count + n)

    def update(self, count: int) -> None:
        """Set the count (``bench`` reads it from its workers) and report if it is time."""
        self.count = count
        if not self.enabled:
            return
        now = self._clock()
        if self._due(now):
            self._last_report = now
            self._write(self.line(now))

    def _due(self, now: float) -> bool:
        since = now - self._last_report
        if self.tty:
            return since >= TTY_INTERVAL_S
        if since >= PLAIN_INTERVAL_S:
            return True
        if self.total and since >= PLAIN_MIN_INTERVAL_S:
            tenth = min(10, self.count * 10 // self.total)
            if tenth > self._last_tenth:
                self._last_tenth = tenth
                return True
        return False

    def line(self, now: float | None = None) -> str:
        """``ferrymq send: 4500/10000 sent (45%, 3,200 msg/s, ETA 2 s)``."""
        now = self._clock() if now is None else now
        elapsed = now - self.started
        rate = self.count / elapsed if elapsed > 0 else 0.0
        if not self.total:
            return f"ferrymq {self.command}: {self.count} {self.verb} ({rate:,.0f} msg/s)"
        percent = min(100.0, 100.0 * self.count / self.total)
        eta = format_seconds((self.total - self.count) / rate) if rate > 0 else "?"
        return (
            f"ferrymq {self.command}: {self.count}/{self.total} {self.verb} "
            f"({percent:.0f}%, {rate:,.0f} msg/s, ETA {eta})"
        )

    def _write(self, text: str) -> None:
        try:
            if self.tty:
                self.stream.write(CLEAR_LINE + text)
                self._line_open = True
            else:
                self.stream.write(text + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False  # stderr is gone: nothing more to say there

    def finish(self) -> None:
        """End a rewritten line, so what follows starts on a line of its own."""
        if self._line_open:
            self._line_open = False
            self._write_raw(CLEAR_LINE)

    def _write_raw(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False

    def summary(self) -> str:
        seconds = self._clock() - self.started
        rate = self.count / seconds if seconds > 0 else 0.0
        return (
            f"ferrymq {self.command}: {self.verb} {self.count} messages in {seconds:.2f} s "
            f"({rate:.0f} msg/s)"
        )


def format_seconds(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``2 h 04 min``: an ETA a person reads at a glance."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def add_progress_argument(parser: argparse.ArgumentParser) -> None:
    """``--no-progress``: keep stderr to the final summary and errors."""
    parser.add_argument(
        "--no-progress",
        dest="progress",
        action="store_false",
        help="no progress reports on stderr (the final summary stays)",
    )
