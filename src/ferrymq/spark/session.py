"""A Spark session for FerryMQ's own programs (``ferrymq audit``, the tests, the benchmarks):
quiet, no UI, and on loopback when the master is local (reference spark.md §2.2).

Users' jobs build their own sessions; on a cluster (``spark-submit --master ...``) the job
modules call ``SparkSession.builder.getOrCreate()`` and take what spark-submit configured.
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

LOOPBACK = "127.0.0.1"
FAST_START_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""Cheaper JVM start for short local runs (spark.md §4.3: a modest, noisy gain)."""


def local_session(
    app_name: str,
    *,
    master: str = "local[2]",
    shuffle_partitions: int = 2,
    log_level: str = "ERROR",
    fast_start: bool = False,
) -> SparkSession:
    """The active session, or a new one on ``master``. Workers run this interpreter, so they
    import the same installed ``ferrymq``; a local master binds the driver to loopback only."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder: SparkSession.Builder = SparkSession.builder
    builder = (
        builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.default.parallelism", str(shuffle_partitions))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.log.level", log_level)
    )
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)
        builder = builder.config("spark.driver.bindAddress", LOOPBACK).config(
            "spark.driver.host", LOOPBACK
        )
    if fast_start:
        builder = builder.config("spark.driver.extraJavaOptions", FAST_START_JVM_OPTIONS)
    return builder.getOrCreate()
