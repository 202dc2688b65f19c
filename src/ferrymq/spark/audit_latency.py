"""Latency percentiles of a delivery audit: end to end per route and destination, and per hop.

End to end is from the origin broker accepting a message to its first delivery to a consumer
(not a bridge); the route is the broker path it took, the delivering broker last.  A hop is
from a broker handing the message to a network bridge (``forwarded``) to the next broker
accepting it from that bridge.  Times come from different brokers' clocks, so a hop or a route
can come out negative by the clocks' skew: those are counted at 0 ms.  Percentiles are Spark's
``percentile_approx`` (exact up to 1/10000 of the range for groups this small).
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf

__all__ = ["HISTOGRAM_EDGES_MS", "hop_latency", "latency_histogram", "route_latency", "with_names"]

PERCENTILES = (0.5, 0.95, 0.99)
HISTOGRAM_EDGES_MS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000)
"""Upper edges of the end-to-end histogram's buckets; the last bucket has no upper edge."""


def _percentiles(column: str) -> list[Column]:
    values = sf.percentile_approx(column, list(PERCENTILES), 10000)
    return [
        sf.count(column).alias("messages"),
        values[0].alias("p50_ms"),
        values[1].alias("p95_ms"),
        values[2].alias("p99_ms"),
        sf.max(column).alias("max_ms"),
    ]


def with_names(frame: DataFrame, ids: str, names: Mapping[str, str], into: str) -> DataFrame:
    """Add column ``into``: the broker ids of array column ``ids`` as names joined by ``>``."""
    if names:
        table = sf.create_map(*[sf.lit(part) for pair in names.items() for part in pair])
        named = sf.transform(sf.col(ids), lambda id_: sf.coalesce(sf.element_at(table, id_), id_))
    else:
        named = sf.col(ids)
    return frame.withColumn(into, sf.array_join(named, ">"))


def route_latency(journey_table: DataFrame, names: Mapping[str, str]) -> DataFrame:
    """End-to-end latency percentiles per route and destination."""
    delivered = journey_table.where(sf.col("end_to_end_ms").isNotNull())
    return (
        with_names(delivered, "route_ids", names, "route")
        .groupBy("route", "destination")
        .agg(*_percentiles("end_to_end_ms"))
        .orderBy("destination", "route")
    )


def hop_latency(events: DataFrame, names: Mapping[str, str]) -> DataFrame:
    """Per-hop latency percentiles per pair of brokers and destination."""
    messages = events.where(sf.col("message_id").isNotNull())
    key = ["message_id", "destination", "from_id", "to_id"]
    forwarded = (
        messages.where((sf.col("kind") == "forwarded") & sf.col("remote_broker_id").isNotNull())
        .select(
            "message_id",
            "destination",
            sf.col("broker_id").alias("from_id"),
            sf.col("remote_broker_id").alias("to_id"),
            "ts_us",
        )
        .groupBy(*key)
        .agg(sf.min("ts_us").alias("forwarded_at"))
    )
    arrived = (
        messages.where((sf.col("kind") == "sent") & sf.col("network"))
        .select(
            "message_id",
            "destination",
            sf.col("remote_broker_id").alias("from_id"),
            sf.col("broker_id").alias("to_id"),
            "ts_us",
        )
        .groupBy(*key)
        .agg(sf.min("ts_us").alias("arrived_at"))
    )
    hops = forwarded.join(arrived, key).withColumn(
        "hop_ms", sf.greatest((sf.col("arrived_at") - sf.col("forwarded_at")) / 1000.0, sf.lit(0.0))
    )
    hops = with_names(hops.withColumn("pair", sf.array("from_id", "to_id")), "pair", names, "hop")
    return hops.groupBy("hop", "destination").agg(*_percentiles("hop_ms")).orderBy("hop")


def latency_histogram(journey_table: DataFrame) -> list[tuple[str, int]]:
    """End-to-end latencies counted into buckets (label, count), every bucket listed."""
    latency = sf.col("end_to_end_ms")
    bucket = sf.lit(len(HISTOGRAM_EDGES_MS))
    for index, edge in reversed(list(enumerate(HISTOGRAM_EDGES_MS))):
        bucket = sf.when(latency < edge, sf.lit(index)).otherwise(bucket)
    rows = (
        journey_table.where(latency.isNotNull()).groupBy(bucket.alias("bucket")).count().collect()
    )
    counts = {int(row["bucket"]): int(row["count"]) for row in rows}
    labels = []
    low = 0
    for edge in HISTOGRAM_EDGES_MS:
        labels.append(f"{low}-{edge} ms")
        low = edge
    labels.append(f">= {low} ms")
    return [(label, counts.get(index, 0)) for index, label in enumerate(labels)]
