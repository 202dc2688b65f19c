"""Issue 7's test of the source: a streaming query reads 10,000 messages from a queue into a
file sink; its driver (the Spark session, JVM and all) is killed mid-way and the query is
restarted from its checkpoint. The sink then holds each message exactly once (offsets 1..10000,
each body once) and the queue is empty.

The killed query runs in its own process group (source_driver.py), so that SIGKILL takes the
JVM and its Python workers along; the broker runs in this process and outlives it. The output
is read with the shared session.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from ferrymq.testing import BrokerThread, broker_config
from tests.spark.queues import queue_depth, send_numbered

DRIVER = Path(__file__).with_name("source_driver.py")
QUEUE_NAME = "SPARK.CRASH"
COUNT = 10_000
KILL_AFTER_BATCHES = 3
WAIT_S = 180.0


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    with BrokerThread(broker_config(tmp_path / "data")) as started:
        yield started


def start_driver(
    url: str, workdir: Path, log: Path, *, available_now: bool
) -> subprocess.Popen[bytes]:
    args = [sys.executable, str(DRIVER), url, f"/queue/{QUEUE_NAME}", str(workdir)]
    with log.open("ab") as output:
        return subprocess.Popen(
            [*args, *(["--available-now"] if available_now else [])],
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the JVM dies with it
        )


def committed_batches(workdir: Path) -> int:
    commits = workdir / "checkpoint" / "commits"
    if not commits.is_dir():
        return 0
    return sum(1 for name in os.listdir(commits) if name.isdigit())


def kill_group(process: subprocess.Popen[bytes]) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    raise AssertionError("processes of the killed driver are still alive")


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_killed_query_restarted_from_its_checkpoint_delivers_each_message_once(
    broker: BrokerThread, tmp_path: Path, spark: SparkSession
) -> None:
    url = f"tcp://127.0.0.1:{broker.port}"
    send_numbered(url, f"/queue/{QUEUE_NAME}", COUNT)
    workdir = tmp_path / "query"
    log = tmp_path / "driver.log"

    first = start_driver(url, workdir, log, available_now=False)
    try:
        deadline = time.monotonic() + WAIT_S
        while committed_batches(workdir) < KILL_AFTER_BATCHES:
            assert first.poll() is None, log.read_text()[-4000:]
            assert time.monotonic() < deadline, log.read_text()[-4000:]
            time.sleep(0.05)
    finally:
        kill_group(first)
    left = queue_depth(broker, QUEUE_NAME)
    assert 0 < left < COUNT, f"the kill was not mid-way: {left} messages left"

    second = start_driver(url, workdir, log, available_now=True)
    try:
        assert second.wait(timeout=WAIT_S * 2) == 0, log.read_text()[-4000:]
    finally:
        if second.poll() is None:
            kill_group(second)

    rows = spark.read.parquet(str(workdir / "out")).select("offset", "body").collect()
    assert len(rows) == COUNT
    assert sorted(row["offset"] for row in rows) == list(range(1, COUNT + 1))
    assert sorted(bytes(row["body"]).decode() for row in rows) == sorted(
        f"m{n}" for n in range(COUNT)
    )
    assert queue_depth(broker, QUEUE_NAME) == 0
