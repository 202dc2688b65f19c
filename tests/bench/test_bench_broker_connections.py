"""``benchmarks/broker_connections.py`` end to end with tiny counts: every case (one broker, an
async and a sync mirror, federation across one hop) starts its ``ferrymq broker`` processes,
counts every message, checks the mirror's target against its source, and prints the table
docs/benchmarks.md records (issue 18, "Performance")."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

ROOT = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 360
COUNT = 200


def test_every_case_runs_and_counts_every_message() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.broker_connections",
            "--count",
            str(COUNT),
            "--warmup",
            "0",
            "--runs",
            "1",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| queue")]
    paths = [
        "1 broker",
        "A (mirror -> B)",
        "A (sync mirror -> B)",
        "B -> federation -> A",
    ]
    expected = [(s, p) for s in ("queue", "queue-persistent") for p in paths]
    assert [tuple(cell.strip() for cell in row.split("|")[1:3]) for row in rows] == expected
    assert all(row.rstrip().endswith("| ok |") for row in rows), rows
    runs = re.findall(r"received (\d+), lost (\d+), dup (\d+)", done.stdout)
    assert runs == [(str(COUNT), "0", "0")] * len(expected)
    mirrored = re.findall(r"drained [\d.]+ s after the run, forwarded (\d+)", done.stdout)
    # A send and an acknowledgement per message, and the queue's creation, reached B.
    assert [int(n) >= 2 * COUNT + 1 for n in mirrored] == [True] * 4
