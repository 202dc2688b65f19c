"""Progress on stderr: a rewritten line on a terminal, plain lines elsewhere, percent and ETA
when the total is known, never on stdout (issue 15, item 12).

The reporter is checked with a fake clock; ``send``, ``consume`` and ``bench`` are then run as
separate processes with stderr on a real pseudo-terminal or a pipe, as a user runs them.
"""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ferrymq.cli.progress import CLEAR_LINE, Progress, format_seconds
from ferrymq.testing import BrokerProcess

RUN_TIMEOUT_S = 120


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_lines_every_tenth_but_not_more_than_once_a_second() -> None:
    clock, stream = Clock(), io.StringIO()
    progress = Progress("send", "sent", total=1024, stream=stream, clock=clock)
    for _ in range(1024):
        clock.now += 1 / 256  # 4 s in all (exact in binary)
        progress.tick()
    # One line per tenth would be 10; at most one a second leaves 4.
    assert stream.getvalue().splitlines() == [
        "ferrymq send: 256/1024 sent (25%, 256 msg/s, ETA 3 s)",
        "ferrymq send: 512/1024 sent (50%, 256 msg/s, ETA 2 s)",
        "ferrymq send: 768/1024 sent (75%, 256 msg/s, ETA 1 s)",
        "ferrymq send: 1024/1024 sent (100%, 256 msg/s, ETA 0 s)",
    ]


def test_plain_lines_without_a_total_every_five_seconds() -> None:
    clock, stream = Clock(), io.StringIO()
    progress = Progress("consume", "received", stream=stream, clock=clock)
    for _ in range(96):
        clock.now += 1 / 8
        progress.tick()
    assert stream.getvalue().splitlines() == [
        "ferrymq consume: 40 received (8 msg/s)",
        "ferrymq consume: 80 received (8 msg/s)",
    ]


def test_a_terminal_gets_one_rewritten_line_then_a_clean_one() -> None:
    clock, stream = Clock(), Terminal()
    progress = Progress("consume", "received", total=100, stream=stream, clock=clock)
    for _ in range(100):
        clock.now += 1 / 16
        progress.tick()
    progress.finish()
    text = stream.getvalue()
    assert "\n" not in text
    updates = text.split(CLEAR_LINE)
    assert len(updates) > 20  # 6 s, four or five times a second
    assert updates[-2] == "ferrymq consume: 100/100 received (100%, 16 msg/s, ETA 0 s)"
    assert updates[-1] == ""  # finish() leaves the line empty for the summary


def test_disabled_progress_says_nothing_until_the_summary() -> None:
    clock, stream = Clock(), io.StringIO()
    progress = Progress("send", "sent", total=10, enabled=False, stream=stream, clock=clock)
    for _ in range(10):
        clock.now += 10
        progress.tick()
    assert stream.getvalue() == ""
    assert progress.summary() == "ferrymq send: sent 10 messages in 100.00 s (0 msg/s)"


@pytest.mark.parametrize(
    ("seconds", "text"), [(0.4, "0 s"), (42, "42 s"), (185, "3 min 05 s"), (7440, "2 h 04 min")]
)
def test_eta_reads_at_a_glance(seconds: float, text: str) -> None:
    assert format_seconds(seconds) == text


# ---- the commands, as separate processes ----


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    with BrokerProcess(tmp_path / "data", extra_args=["--non-persistent"]) as process:
        yield process


def run_on_terminal(tmp_path: Path, *argv: str) -> tuple[int, bytes, str]:
    """``ferrymq ARGV`` with stderr on a pseudo-terminal and stdout into a file; (exit status,
    stdout, what the terminal showed)."""
    leader, follower = pty.openpty()
    out = tmp_path / "stdout"
    shown = bytearray()
    try:
        with (
            out.open("wb") as stdout,
            subprocess.Popen(
                [sys.executable, "-m", "ferrymq.cli.main", *argv],
                stdout=stdout,
                stderr=follower,
                stdin=subprocess.DEVNULL,
            ) as process,
        ):
            os.close(follower)
            follower = -1
            while True:  # read while it runs: a full terminal buffer would block it
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # EIO: the process closed the terminal
                    break
                if not chunk:
                    break
                shown += chunk
            code = process.wait(timeout=RUN_TIMEOUT_S)
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    return code, out.read_bytes(), shown.decode(errors="replace")


def test_send_and_consume_show_percent_and_eta_on_a_terminal(
    broker: BrokerProcess, tmp_path: Path
) -> None:
    code, out, shown = run_on_terminal(
        tmp_path, "send", broker.url, "/queue/progress", "--count", "100000"
    )
    assert code == 0, shown
    assert out == b""
    assert CLEAR_LINE in shown
    assert "/100000 sent (" in shown
    assert "ETA " in shown
    assert "ferrymq send: sent 100000 messages in " in shown  # the summary, on a clean line
    code, out, shown = run_on_terminal(
        tmp_path, "consume", broker.url, "/queue/progress", "--count", "100000", "--no-progress"
    )
    assert code == 0, shown
    assert len(out.splitlines()) == 100000  # the messages, and nothing else, on stdout
    assert CLEAR_LINE not in shown
    assert "ETA" not in shown
    assert "received 100000 messages" in shown


def test_bench_shows_progress_inside_a_scenario(broker: BrokerProcess) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ferrymq.cli.main",
            "bench",
            broker.url,
            "--scenario",
            "queue",
            "--count",
            "150000",
            "--warmup",
            "0",
            "--timeout",
            "30",
        ],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    inside = [line for line in done.stderr.splitlines() if "/150000 received (" in line]
    assert inside, done.stderr  # a plain line (stderr is a pipe) while the scenario ran
    assert all("ETA" in line for line in inside)
    assert "received (" not in done.stdout
