"""The ``ferrymq`` Spark sink's send rate (docs/spark.md "Sink").  Run from the repository root:

    .venv/bin/python -m benchmarks.spark_sink [--count 50000] [--rows 200000] [--runs 3]

A ``ferrymq broker`` process (SQLite store, a fresh data directory per case) receives:

1. one sink task's sends without Spark (``ferrymq.spark.producer.produce``), persistent,
   100-byte bodies, with 1, 10, 100 and 1000 receipts outstanding (``maxInFlight``): what
   pipelining buys over waiting for each receipt;
2. ``df.write.format("ferrymq")`` of ``--rows`` rows from a local[2] session (two tasks, each
   its own connection), persistent and not, after one warm-up write: the whole job's wall
   time, Spark's scheduling included.

Every message is counted afterwards by draining the queue (a lost or duplicated one fails the
run).  Prints a markdown table per part.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.spark import drained

from ferrymq.spark import register
from ferrymq.spark.producer import produce
from ferrymq.spark.session import local_session
from ferrymq.spark.sink_options import sink_options
from ferrymq.spark.sink_schema import OutgoingMessage
from ferrymq.testing import BrokerProcess

BODY = b"x" * 100
WINDOWS = (1, 10, 100, 1000)


def with_broker(root: Path, case: Callable[[str], float]) -> float:
    broker = BrokerProcess(Path(tempfile.mkdtemp(dir=root))).start()
    try:
        return case(broker.url)
    finally:
        broker.stop()


def producer_case(window: int, count: int) -> Callable[[str], float]:
    def run(url: str) -> float:
        options = sink_options({"url": url, "maxInFlight": str(window)}, stream=False)
        messages = (
            OutgoingMessage("/queue/bench", BODY, {"persistent": "true", "p": f"{i}"})
            for i in range(count)
        )
        report = produce(options, messages)
        received = drained(url, "/queue/bench", count)
        if received != count:
            raise SystemExit(f"window {window}: sent {count}, the queue held {received}")
        return count / report.elapsed_s

    return run


def spark_case(rows: int, persistent: bool) -> Callable[[str], float]:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as sf

    spark = SparkSession.builder.getOrCreate()

    def run(url: str) -> float:
        frame = spark.range(rows, numPartitions=2).select(
            sf.format_string("%0100d", "id").alias("body")
        )

        def save(destination: str) -> float:
            started = time.monotonic()
            (
                frame.write.format("ferrymq")
                .option("url", url)
                .option("destination", destination)
                .option("persistent", str(persistent).lower())
                .mode("append")
                .save()
            )
            return time.monotonic() - started

        save("/queue/warmup")
        elapsed = save("/queue/bench")
        received = drained(url, "/queue/bench", rows)
        if received != rows:
            raise SystemExit(f"spark: wrote {rows}, the queue held {received}")
        return rows / elapsed

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=50_000, help="messages per producer case")
    parser.add_argument("--rows", type=int, default=200_000, help="rows per Spark write")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        print("| maxInFlight | persistent msg/s (median of runs) | runs |")
        print("| ---: | ---: | --- |")
        for window in WINDOWS:
            count = args.count if window > 1 else max(args.count // 10, 1000)
            rates = [with_broker(root, producer_case(window, count)) for _ in range(args.runs)]
            shown = ", ".join(f"{rate:,.0f}" for rate in rates)
            print(f"| {window} | {statistics.median(rates):,.0f} | {shown} |", flush=True)
        register(local_session("ferrymq-bench-sink"))
        print()
        print(f"| df.write of {args.rows:,} rows, local[2] | rows/s (median) | runs |")
        print("| --- | ---: | --- |")
        for persistent in (True, False):
            case = spark_case(args.rows, persistent)
            rates = [with_broker(root, case) for _ in range(args.runs)]
            shown = ", ".join(f"{rate:,.0f}" for rate in rates)
            label = "persistent" if persistent else "non-persistent"
            print(f"| {label} | {statistics.median(rates):,.0f} | {shown} |", flush=True)


if __name__ == "__main__":
    main()
