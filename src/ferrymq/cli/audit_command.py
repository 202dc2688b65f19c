"""``ferrymq audit TRACE_DIR... [--master local[*]] [--out DIR]``: the delivery audit.

Runs ``ferrymq.spark.audit_job`` in a Spark session of its own (on loopback, quiet, no UI) and
prints the summary; needs the ``spark`` extra.  For a cluster, submit the job module with
spark-submit instead (its docstring has the command line).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "audit",
        help="audit message delivery from brokers' traces (PySpark)",
        description="Reconstruct each message's journey from the brokers' message traces "
        "(ferrymq broker --trace DIR) and report lost, duplicated, stuck and dead-lettered "
        "messages and latency percentiles.",
    )
    parser.add_argument("traces", nargs="+", metavar="TRACE_DIR", help="trace directories")
    parser.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    parser.add_argument("--out", help="write Parquet tables and summary.md into this directory")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        from pyspark.sql import SparkSession

        from ferrymq.spark.audit_job import run_audit
        from ferrymq.spark.session import local_session
    except ModuleNotFoundError as exc:
        print(f"ferrymq audit: needs the spark extra ({exc})", file=sys.stderr)
        return 2
    for path in args.traces:
        if "://" not in path and not os.path.isdir(path):
            print(f"ferrymq audit: no such directory: {path}", file=sys.stderr)
            return 2
    ours = SparkSession.getActiveSession() is None
    spark = local_session(
        "ferrymq-audit", master=args.master, shuffle_partitions=8, log_level="WARN"
    )
    try:
        report = run_audit(spark, args.traces, args.out)
        print(report.summary, end="")
        report.unpersist()
    finally:
        if ours:
            spark.stop()
    return 0
