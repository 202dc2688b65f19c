"""Reconstructing each message's journey across a broker network from the brokers' traces.

Pure DataFrame-to-DataFrame functions (no session, no files), so tests and the job share them.
The input is the message trace the brokers write (``ferrymq broker --trace DIR``): one record
per event, as JSON lines.  The words used here:

* a *placement* is a message on one broker in one container (a queue, or a durable
  subscription): it *arrives* there when it is sent to a queue (by a producer or a network
  bridge) or stored, and *leaves* when it is acknowledged (by a consumer or a bridge that
  forwarded it), expires or is dead-lettered.  A placement whose last arrival is later than its
  last departure is *sitting* there at the end of the trace (a message that was never stored
  is not sitting on a broker that stopped after it arrived: it went with the broker's memory);
* a sitting placement is *stuck* when no consumer that could take it is subscribed on that
  broker at the end of the trace: a local consumer of a matching destination, or a network
  consumer whose next broker is not already on the message's path (seed 001 Figure 3.2's note).
  Consumers that left because their broker was being stopped count as present;
* a *journey* is everything that happened to one message id on one destination, on every broker.

The status of a journey, first match wins: ``dead_letter_copy`` (the copy a dead-letter queue
holds: reported with its original), ``duplicated`` (acknowledged by consumers more than once: a
queue message anywhere in the network, a topic message within one subscription),
``dead_lettered``, ``consumed``, ``expired``, ``stuck``, ``queued`` (sitting where a consumer
can take it), ``lost`` (stored, yet never acknowledged, expired, dead-lettered, and sitting
nowhere) and ``discarded`` (never stored and gone: a non-persistent message, or a topic message
without durable subscribers).  Selectors and networkTTL are not modelled: a consumer of the
destination counts as able to take a message.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as sf
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

__all__ = [
    "STATUSES",
    "TRACE_SCHEMA",
    "active_consumers",
    "brokers",
    "journeys",
    "placements",
    "read_trace",
]

TRACE_SCHEMA = StructType(
    [
        StructField("ts_us", LongType()),
        StructField("seq", LongType()),
        StructField("kind", StringType()),
        StructField("broker_id", StringType()),
        StructField("broker_name", StringType()),
        StructField("message_id", StringType()),
        StructField("producer_message_id", StringType()),
        StructField("destination", StringType()),
        StructField("container", StringType()),
        StructField("persistent", BooleanType()),
        StructField("broker_path", ArrayType(StringType())),
        StructField("connection_id", StringType()),
        StructField("consumer_id", StringType()),
        StructField("network", BooleanType()),
        StructField("remote_broker_id", StringType()),
        StructField("redelivery_count", IntegerType()),
        StructField("cause", StringType()),
        StructField("dead_letter_queue", StringType()),
        StructField("dropped", LongType()),
    ]
)
"""The trace record (``ferrymq.service.trace.FIELDS``); a missing field reads as null."""

STATUSES = (
    "consumed",
    "duplicated",
    "dead_lettered",
    "expired",
    "stuck",
    "queued",
    "lost",
    "discarded",
    "dead_letter_copy",
)

_DELIVERY_KINDS = ("delivered", "redelivered")
_LEAVING_KINDS = ("acked", "expired", "dead_lettered")
_QUEUE = r"^(queue|temp-queue)://"


def read_trace(spark: SparkSession, paths: Sequence[str]) -> DataFrame:
    """Every record under the trace directories; a line that does not parse (the last one
    after a SIGKILL may be cut short) is skipped."""
    frame = (
        spark.read.schema(TRACE_SCHEMA)
        .option("mode", "PERMISSIVE")
        .option("pathGlobFilter", "*.jsonl")
        .json(list(paths))
    )
    return frame.where(
        sf.col("kind").isNotNull() & sf.col("broker_id").isNotNull() & sf.col("ts_us").isNotNull()
    )


def _kind(*kinds: str) -> Column:
    return sf.col("kind").isin(*kinds)


def _network() -> Column:
    return sf.coalesce(sf.col("network"), sf.lit(False))


def brokers(events: DataFrame) -> DataFrame:
    """One row per broker id: its name, its last start and, if it was then stopped cleanly,
    when (``stopped_at``)."""
    return (
        events.groupBy("broker_id")
        .agg(
            sf.max("broker_name").alias("broker_name"),
            sf.max(sf.when(_kind("started"), sf.col("ts_us"))).alias("last_start"),
            sf.max(sf.when(_kind("stopping"), sf.col("ts_us"))).alias("last_stop"),
            sf.sum(sf.coalesce(sf.col("dropped"), sf.lit(0))).alias("dropped"),
        )
        .withColumn(
            "stopped_at",
            sf.when(
                sf.col("last_start").isNull() | (sf.col("last_stop") >= sf.col("last_start")),
                sf.col("last_stop"),
            ),
        )
    )


def _pattern_regex(destination: Column) -> Column:
    """A destination pattern (``.`` separated, ``*`` one name, ``>`` the rest) as a regex."""
    escaped = sf.regexp_replace(destination, r"([.$^+?(){}\[\]|\\])", r"\\$1")
    one = sf.regexp_replace(escaped, r"\*", "[^.]+")
    return sf.concat(sf.lit("^"), sf.regexp_replace(one, ">", ".+"), sf.lit("$"))


def active_consumers(events: DataFrame, broker_table: DataFrame) -> DataFrame:
    """The consumers subscribed at the end of the trace, per broker (from its last start)."""
    subscribed = (
        events.where(_kind("subscribed"))
        .join(broker_table.select("broker_id", "last_start", "stopped_at"), "broker_id")
        .where(sf.col("last_start").isNull() | (sf.col("ts_us") >= sf.col("last_start")))
        .select(
            "broker_id",
            "consumer_id",
            "destination",
            _network().alias("network"),
            "remote_broker_id",
            "stopped_at",
            sf.col("ts_us").alias("subscribed_at"),
        )
    )
    left = events.where(_kind("unsubscribed")).select(
        "broker_id", "consumer_id", sf.col("ts_us").alias("left_at")
    )
    return (
        subscribed.join(left, ["broker_id", "consumer_id"], "left")
        .where(sf.col("left_at").isNull() | (sf.col("left_at") >= sf.col("subscribed_at")))
        .groupBy(
            "broker_id", "consumer_id", "destination", "network", "remote_broker_id", "stopped_at"
        )
        .agg(sf.min("left_at").alias("left_at"))
        .where(
            sf.col("left_at").isNull()
            | (sf.col("stopped_at").isNotNull() & (sf.col("left_at") >= sf.col("stopped_at")))
        )
        .withColumn("pattern", _pattern_regex(sf.col("destination")))
        .drop("left_at", "stopped_at")
    )


def placements(events: DataFrame, broker_table: DataFrame, consumers: DataFrame) -> DataFrame:
    """One row per message, destination, broker and container it arrived in, with whether it
    is sitting there at the end of the trace and whether it is stuck."""
    arrival = _kind("stored") | (_kind("sent") & sf.col("destination").rlike(_QUEUE))
    order = sf.struct("ts_us", "seq")
    found = (
        events.where(sf.col("message_id").isNotNull() & (arrival | _kind(*_LEAVING_KINDS)))
        .withColumn("container", sf.coalesce("container", "destination"))
        .groupBy("message_id", "destination", "broker_id", "container")
        .agg(
            sf.max(sf.when(arrival, order)).alias("last_arrival"),
            sf.min(sf.when(arrival, sf.col("ts_us"))).alias("arrived_at"),
            sf.max(sf.when(_kind(*_LEAVING_KINDS), order)).alias("last_leaving"),
            sf.max(_kind("stored")).alias("stored"),
            sf.first(sf.when(arrival, sf.col("broker_path")), ignorenulls=True).alias(
                "broker_path"
            ),
        )
        .where(sf.col("last_arrival").isNotNull())
        .join(broker_table.select("broker_id", "broker_name", "last_stop"), "broker_id")
        .withColumn(
            "sitting",
            (sf.col("last_leaving").isNull() | (sf.col("last_arrival") > sf.col("last_leaving")))
            & (
                sf.col("stored")
                | sf.col("last_stop").isNull()
                | (sf.col("last_stop") <= sf.col("arrived_at"))
            ),
        )
        .drop("last_arrival", "last_leaving", "last_stop")
    )
    sitting = found.where("sitting").alias("p")
    takers = consumers.alias("c")
    able = (
        (sf.col("p.broker_id") == sf.col("c.broker_id"))
        & sf.expr("p.destination rlike c.pattern")
        & (
            ~sf.col("c.network")
            | sf.col("c.remote_broker_id").isNull()
            | ~sf.coalesce(
                sf.array_contains(sf.col("p.broker_path"), sf.col("c.remote_broker_id")),
                sf.lit(False),
            )
        )
    )
    key = ["message_id", "destination", "broker_id", "container"]
    counted = (
        sitting.join(takers, able, "left")
        .groupBy(*[sf.col(f"p.{name}") for name in key])
        .agg(sf.count(sf.col("c.consumer_id")).alias("able_consumers"))
    )
    return (
        found.join(counted, key, "left")
        .withColumn("able_consumers", sf.coalesce("able_consumers", sf.lit(0)))
        .withColumn("stuck", sf.col("sitting") & (sf.col("able_consumers") == 0))
    )


def journeys(events: DataFrame, placement_table: DataFrame) -> DataFrame:
    """One row per message id and destination: where it started, what happened, its status."""
    messages = events.where(sf.col("message_id").isNotNull())
    origin = _kind("sent") & (sf.coalesce(sf.size("broker_path"), sf.lit(0)) <= 0)
    consumer_ack = _kind("acked") & ~_network()
    delivery = _kind(*_DELIVERY_KINDS) & ~_network()
    first_delivery = sf.min(
        sf.when(delivery, sf.struct("ts_us", "seq", "broker_id", "broker_path"))
    )
    per_message = messages.groupBy("message_id", "destination").agg(
        sf.first(sf.when(origin, sf.col("broker_id")), ignorenulls=True).alias("origin_broker_id"),
        sf.min(sf.when(origin, sf.col("ts_us"))).alias("sent_at_us"),
        sf.first("producer_message_id", ignorenulls=True).alias("producer_message_id"),
        sf.max("persistent").alias("persistent"),
        sf.max(_kind("stored")).alias("stored"),
        sf.sum(consumer_ack.cast("int")).alias("consumer_acks"),
        sf.sum(delivery.cast("int")).alias("deliveries"),
        sf.sum(_kind("redelivered").cast("int")).alias("redeliveries"),
        sf.sum(_kind("forwarded").cast("int")).alias("forwards"),
        sf.max(_kind("expired")).alias("expired"),
        sf.max(_kind("dead_lettered")).alias("dead_lettered"),
        first_delivery.alias("first_delivery"),
    )
    per_subscription = (
        messages.where(consumer_ack)
        .groupBy("message_id", "destination", "broker_id", "container")
        .count()
        .groupBy("message_id", "destination")
        .agg(sf.max("count").alias("most_acks_in_one_subscription"))
    )
    where = placement_table.groupBy("message_id", "destination").agg(
        sf.sort_array(sf.collect_set(sf.when(sf.col("sitting"), sf.col("broker_name")))).alias(
            "sitting_on"
        ),
        sf.sort_array(sf.collect_set(sf.when(sf.col("stuck"), sf.col("broker_name")))).alias(
            "stuck_on"
        ),
    )
    copies = (
        messages.where(_kind("dead_lettered") & sf.col("dead_letter_queue").isNotNull())
        .select("message_id", sf.col("dead_letter_queue").alias("destination"))
        .distinct()
        .withColumn("dead_letter_copy", sf.lit(True))
    )
    key = ["message_id", "destination"]
    joined = (
        per_message.join(per_subscription, key, "left")
        .join(where, key, "left")
        .join(copies, key, "left")
        .withColumn("sitting_on", sf.coalesce("sitting_on", sf.array().cast("array<string>")))
        .withColumn("stuck_on", sf.coalesce("stuck_on", sf.array().cast("array<string>")))
        .withColumn("dead_letter_copy", sf.coalesce("dead_letter_copy", sf.lit(False)))
    )
    is_queue = sf.col("destination").rlike(_QUEUE)
    duplicated = sf.when(is_queue, sf.col("consumer_acks") > 1).otherwise(
        sf.coalesce(sf.col("most_acks_in_one_subscription"), sf.lit(0)) > 1
    )
    status = (
        sf.when(sf.col("dead_letter_copy"), "dead_letter_copy")
        .when(duplicated, "duplicated")
        .when(sf.col("dead_lettered"), "dead_lettered")
        .when(sf.col("consumer_acks") > 0, "consumed")
        .when(sf.col("expired"), "expired")
        .when(sf.size("stuck_on") > 0, "stuck")
        .when(sf.size("sitting_on") > 0, "queued")
        .when(sf.col("stored"), "lost")
        .otherwise("discarded")
    )
    delivered = sf.col("first_delivery")
    route = sf.concat(
        sf.coalesce(delivered["broker_path"], sf.array().cast("array<string>")),
        sf.array(delivered["broker_id"]),
    )
    latency = (delivered["ts_us"] - sf.col("sent_at_us")) / 1000.0
    return joined.select(
        "message_id",
        "destination",
        status.alias("status"),
        "origin_broker_id",
        sf.timestamp_micros("sent_at_us").alias("sent_at"),
        "sent_at_us",
        "producer_message_id",
        "persistent",
        "consumer_acks",
        "deliveries",
        "redeliveries",
        "forwards",
        "sitting_on",
        "stuck_on",
        sf.when(delivered.isNotNull(), route).alias("route_ids"),
        sf.when(
            delivered.isNotNull() & sf.col("sent_at_us").isNotNull(),
            sf.greatest(latency, sf.lit(0.0)),
        ).alias("end_to_end_ms"),
    )
