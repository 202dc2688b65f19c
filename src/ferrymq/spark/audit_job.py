"""The delivery-audit job: traces in, Parquet tables and ``summary.md`` out.

Run it as ``ferrymq audit TRACE_DIR... --out DIR`` (which picks the master, ``local[*]`` by
default), or on a cluster with spark-submit; the job never sets the master itself::

    (cd src && zip -qr ../ferrymq.zip ferrymq)
    spark-submit --master spark://host:7077 --py-files ferrymq.zip \\
        --conf spark.sql.shuffle.partitions=8 --conf spark.log.level=WARN \\
        src/ferrymq/spark/audit_job.py hdfs:///traces/a hdfs:///traces/b --out hdfs:///audit

Tables written under the output directory (overwritten): ``journeys`` (one row per message and
destination, with its status), ``lost``, ``duplicated``, ``stuck`` (one row per message stuck on
a broker; what waits in a dead-letter queue is reported as dead-lettered instead),
``dead_lettered``, ``latency_routes`` and ``latency_hops``; and ``summary.md`` (for an output on
another filesystem, a ``summary`` text table instead).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as sf

from ferrymq.spark.audit import active_consumers, brokers, journeys, placements, read_trace
from ferrymq.spark.audit_latency import hop_latency, latency_histogram, route_latency, with_names
from ferrymq.spark.audit_report import LISTED, SummaryInput, render_summary

__all__ = ["AuditReport", "main", "run_audit"]


@dataclass
class AuditReport:
    counts: dict[str, int]
    """Messages (message id and destination) per status."""
    journeys: DataFrame
    stuck: DataFrame
    dead_lettered: DataFrame
    routes: DataFrame
    hops: DataFrame
    summary: str

    def unpersist(self) -> None:
        self.journeys.unpersist()


def run_audit(spark: SparkSession, paths: Sequence[str], out: str | None = None) -> AuditReport:
    """Audit the traces under ``paths``; with ``out``, write the tables and the summary."""
    events = read_trace(spark, paths).cache()
    broker_table = brokers(events).cache()
    names = {row["broker_id"]: row["broker_name"] for row in broker_table.collect()}
    placement_table = placements(
        events, broker_table, active_consumers(events, broker_table)
    ).cache()
    journey_table = journeys(events, placement_table)
    journey_table = with_names(journey_table, "route_ids", names, "route").cache()
    origin_names = sf.create_map(*[sf.lit(part) for pair in names.items() for part in pair])
    counts = {
        row["status"]: int(row["count"])
        for row in journey_table.groupBy("status").count().collect()
    }
    acks = (
        events.where((sf.col("kind") == "acked") & ~sf.coalesce(sf.col("network"), sf.lit(False)))
        .groupBy("message_id", "destination")
        .agg(
            sf.collect_list(sf.concat_ws(" ", "broker_name", "consumer_id")).alias("acks"),
        )
    )
    lost = journey_table.where(sf.col("status") == "lost")
    if names:
        lost = lost.withColumn("origin", sf.element_at(origin_names, sf.col("origin_broker_id")))
    else:
        lost = lost.withColumn("origin", sf.col("origin_broker_id"))
    duplicated = journey_table.where(sf.col("status") == "duplicated").join(
        acks, ["message_id", "destination"], "left"
    )
    stuck_journeys = journey_table.where(sf.col("status") == "stuck")
    stuck = (
        placement_table.where("stuck")
        .join(stuck_journeys, ["message_id", "destination"], "left_semi")
        .select(
            "message_id",
            "destination",
            "broker_id",
            "broker_name",
            "container",
            "arrived_at",
            sf.timestamp_micros("arrived_at").alias("since"),
            "broker_path",
        )
    )
    dead_lettered = events.where(sf.col("kind") == "dead_lettered").select(
        "message_id",
        "destination",
        "broker_id",
        "broker_name",
        "cause",
        sf.col("dead_letter_queue").alias("dlq"),
        sf.timestamp_micros("ts_us").alias("at"),
    )
    routes = route_latency(journey_table, names)
    hops = hop_latency(events, names)
    span = events.agg(sf.count("*"), sf.min("ts_us"), sf.max("ts_us")).first()
    assert span is not None
    summary = render_summary(
        SummaryInput(
            records=int(span[0]),
            brokers=sorted(names.values()),
            first_us=span[1],
            last_us=span[2],
            dropped={
                row["broker_name"]: int(row["dropped"] or 0)
                for row in broker_table.collect()
                if row["broker_name"] is not None
            },
            counts=counts,
            lost=[r.asDict() for r in lost.orderBy("sent_at_us").limit(LISTED).collect()],
            duplicated=[
                r.asDict() for r in duplicated.orderBy("message_id").limit(LISTED).collect()
            ],
            stuck=[r.asDict() for r in stuck.orderBy("arrived_at").limit(LISTED).collect()],
            stuck_total=stuck.count(),
            dead_lettered=[r.asDict() for r in dead_lettered.orderBy("at").limit(LISTED).collect()],
            dead_lettered_total=dead_lettered.count(),
            routes=[r.asDict() for r in routes.collect()],
            hops=[r.asDict() for r in hops.collect()],
            histogram=latency_histogram(journey_table),
        )
    )
    if out is not None:
        tables = {
            "journeys": journey_table,
            "lost": lost,
            "duplicated": duplicated,
            "stuck": stuck,
            "dead_lettered": dead_lettered,
            "latency_routes": routes,
            "latency_hops": hops,
        }
        for name, table in tables.items():
            table.write.mode("overwrite").parquet(f"{out.rstrip('/')}/{name}")
        _write_summary(spark, out, summary)
    events.unpersist()
    broker_table.unpersist()
    placement_table.unpersist()
    return AuditReport(counts, journey_table, stuck, dead_lettered, routes, hops, summary)


def _write_summary(spark: SparkSession, out: str, summary: str) -> None:
    scheme = urlparse(out).scheme
    if scheme in ("", "file"):
        directory = Path(urlparse(out).path if scheme else out)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "summary.md").write_text(summary)
    else:
        lines = spark.createDataFrame([(line,) for line in summary.splitlines()], "value string")
        lines.coalesce(1).write.mode("overwrite").text(f"{out.rstrip('/')}/summary")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="audit_job", description="Audit message delivery from FerryMQ brokers' traces."
    )
    parser.add_argument("traces", nargs="+", metavar="TRACE_DIR", help="trace directories")
    parser.add_argument("--out", help="write Parquet tables and summary.md here")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """spark-submit entry point: the master and settings come from spark-submit."""
    args = build_parser().parse_args(argv)
    spark = SparkSession.builder.appName("ferrymq-audit").getOrCreate()
    try:
        report = run_audit(spark, args.traces, args.out)
        print(report.summary)
        report.unpersist()
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
