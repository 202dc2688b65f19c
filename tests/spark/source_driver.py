"""A Spark driver for the source's crash test (test_source_spark.py), run as its own process
so that the test can SIGKILL it, JVM and Python workers included, mid-stream.

    python tests/spark/source_driver.py URL DESTINATION WORKDIR [--available-now]

Streams the destination into a Parquet file sink under WORKDIR/out with its checkpoint in
WORKDIR/checkpoint and the spool beside it; prints ``started`` once the query runs. Without
``--available-now`` it runs until killed; with it, it drains the destination and exits.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ferrymq.spark import register
from ferrymq.spark.session import local_session

MAX_MESSAGES_PER_TRIGGER = 1000


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("destination")
    parser.add_argument("workdir")
    parser.add_argument("--available-now", action="store_true")
    args = parser.parse_args(argv)
    spark = local_session("ferrymq-source-crash-test", fast_start=True)
    register(spark)
    stream = (
        spark.readStream.format("ferrymq")
        .option("url", args.url)
        .option("destination", args.destination)
        .option("maxMessagesPerTrigger", str(MAX_MESSAGES_PER_TRIGGER))
        .option("spoolLocation", f"{args.workdir}/spool")
        .option("numPartitions", "2")
        .load()
    )
    writer = (
        stream.writeStream.format("parquet")
        .option("path", f"{args.workdir}/out")
        .option("checkpointLocation", f"{args.workdir}/checkpoint")
    )
    if args.available_now:
        writer = writer.trigger(availableNow=True)
    query = writer.start()
    print("started", flush=True)
    query.awaitTermination()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
