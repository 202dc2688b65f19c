"""Messages per second between a broker queue and Spark, through ``format("ferrymq")``, with
FerryMQ and ActiveMQ 5.17 side by side on this machine (docs/benchmarks.md "Spark"). From the
repository root:

    .venv/bin/python -m benchmarks.spark [--count 50000] [--runs 3] [--brokers ferrymq,activemq]

For each broker (a separate process, a fresh persistent store per case: FerryMQ's SQLite,
ActiveMQ's KahaDB, STOMP on a free 127.0.0.1 port), 100-byte persistent messages:

* queue -> Spark: ``--count`` messages are put on a queue first; then a ``readStream`` query
  with ``trigger(availableNow=True)`` and ``maxMessagesPerTrigger`` 5000 drains it into Spark's
  ``noop`` sink, with the spool (the exactly-once mode) and without it. Timed from ``start()``
  to the query's end, which includes acknowledging the last batch. The query's progress must
  count ``--count`` rows and the queue must be empty afterwards, or the run fails.
* Spark -> queue: ``df.write`` of ``--count`` rows on two tasks, after a warm-up write; every
  message is counted by draining the queue afterwards.

The Spark session is local[2] on loopback and is shared by every case; its start, and a first
small query of each kind (which starts Spark's Python workers), are not timed.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as sf

from ferrymq.client.blocking import connect
from ferrymq.spark import register
from ferrymq.spark.producer import produce
from ferrymq.spark.session import local_session
from ferrymq.spark.sink_options import sink_options
from ferrymq.spark.sink_schema import OutgoingMessage
from ferrymq.testing import BrokerProcess, free_port
from ferrymq.testing.activemq import ActiveMQProcess

BODY = b"x" * 100
PER_TRIGGER = 5000
QUIET_S = 2.0

ACTIVEMQ_XML = """<beans xmlns="http://www.springframework.org/schema/beans"
  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
  xsi:schemaLocation="http://www.springframework.org/schema/beans
    http://www.springframework.org/schema/beans/spring-beans.xsd
    http://activemq.apache.org/schema/core
    http://activemq.apache.org/schema/core/activemq-core.xsd">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="bench" useJmx="false"
      dataDirectory="{data}">
    <persistenceAdapter><kahaDB directory="{data}/kahadb"/></persistenceAdapter>
    <transportConnectors>
      <transportConnector name="stomp" uri="stomp://127.0.0.1:PORT"/>
    </transportConnectors>
  </broker>
</beans>
"""

BrokerCase = Callable[[str], float]
"""Given a broker's STOMP URL, run one measurement and return its rate."""


@contextmanager
def running(kind: str, root: Path) -> Iterator[str]:
    """A fresh broker of ``kind`` for one case; yields its STOMP URL."""
    base = Path(tempfile.mkdtemp(dir=root))
    if kind == "ferrymq":
        broker = BrokerProcess(base).start()
        try:
            yield broker.url
        finally:
            broker.stop()
        return
    port = free_port()
    activemq = ActiveMQProcess(
        base, ACTIVEMQ_XML.replace("PORT", str(port)), broker_name="bench", heap_mb=1024
    )
    activemq.start()
    try:
        yield f"tcp://127.0.0.1:{port}"
    finally:
        activemq.stop()


def fill(url: str, destination: str, count: int) -> None:
    """Put ``count`` persistent messages on ``destination``, each receipted."""
    options = sink_options({"url": url}, stream=False)
    messages = (
        OutgoingMessage(destination, BODY, {"persistent": "true", "n": str(n)})
        for n in range(count)
    )
    produce(options, messages)


def drained(url: str, destination: str, expected: int) -> int:
    """Take everything on ``destination``; how many there were (stops after a quiet spell)."""
    count = 0
    with connect(url) as connection:
        subscription = connection.subscribe(destination, prefetch=5000)
        while True:
            got = subscription.get_many(5000, QUIET_S if count >= expected else 30.0)
            if not got:
                return count
            count += len(got)


def source_case(spark: SparkSession, count: int, *, spool: bool) -> BrokerCase:
    def run(url: str) -> float:
        fill(url, "/queue/bench", count)
        with tempfile.TemporaryDirectory() as work:
            reader = (
                spark.readStream.format("ferrymq")
                .option("url", url)
                .option("destination", "/queue/bench")
                .option("maxMessagesPerTrigger", str(PER_TRIGGER))
                .option("prefetch", str(PER_TRIGGER))
            )
            if spool:
                reader = reader.option("spoolLocation", f"{work}/spool")
            started = time.monotonic()
            query = (
                reader.load()
                .writeStream.format("noop")
                .option("checkpointLocation", f"{work}/checkpoint")
                .trigger(availableNow=True)
                .start()
            )
            query.awaitTermination()
            elapsed = time.monotonic() - started
            rows = sum(progress["numInputRows"] for progress in query.recentProgress)
        left = drained(url, "/queue/bench", 0)
        if rows != count or left:
            raise SystemExit(f"source: {count} sent, {rows} rows read, {left} left on the queue")
        return count / elapsed

    return run


def sink_case(spark: SparkSession, count: int) -> BrokerCase:
    frame = spark.range(count, numPartitions=2).select(
        sf.format_string("%0100d", "id").alias("body")
    )

    def save(url: str, destination: str) -> float:
        started = time.monotonic()
        frame.write.format("ferrymq").option("url", url).option("destination", destination).mode(
            "append"
        ).save()
        return time.monotonic() - started

    def run(url: str) -> float:
        save(url, "/queue/warmup")
        elapsed = save(url, "/queue/bench")
        received = drained(url, "/queue/bench", count)
        if received != count:
            raise SystemExit(f"sink: wrote {count}, the queue held {received}")
        return count / elapsed

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=50_000, help="messages per case")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--brokers", default="ferrymq,activemq")
    args = parser.parse_args()
    spark = local_session("ferrymq-bench-spark")
    register(spark)
    cases = {
        "queue -> Spark, spool (exactly-once)": source_case(spark, args.count, spool=True),
        "queue -> Spark, no spool (at-least-once)": source_case(spark, args.count, spool=False),
        "Spark -> queue, df.write": sink_case(spark, args.count),
    }
    kinds = args.brokers.split(",")
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        with running("ferrymq", root) as url:  # the session's first queries start its workers
            source_case(spark, 1000, spool=True)(url)
            sink_case(spark, 1000)(url)
        print(f"{args.count:,} persistent 100-byte messages; msg/s, median of {args.runs} runs")
        print()
        print("| case | " + " | ".join(kinds) + " |")
        print("| --- |" + " ---: |" * len(kinds))
        for label, case in cases.items():
            cells = []
            for kind in kinds:
                rates = []
                for _ in range(args.runs):
                    with running(kind, root) as url:
                        rates.append(case(url))
                shown = ", ".join(f"{rate:,.0f}" for rate in rates)
                cells.append(f"{statistics.median(rates):,.0f} ({shown})")
            print(f"| {label} | " + " | ".join(cells) + " |", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
