"""The ``ferrymq`` streaming source in the shared local[2] session: the row schema and its
content (headers, JMS columns, the broker path of a message that crossed a network bridge),
batches of maxMessagesPerTrigger under availableNow with the queue emptied and the spool
truncated at the end, a durable topic subscription that keeps what was published while the
query was down, and a bad option failing the query with its name."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import Row, SparkSession

from ferrymq.client import connect as connect_async
from ferrymq.spark import register
from ferrymq.spark.source import MESSAGE_SCHEMA
from ferrymq.testing import BrokerThread, broker_config
from ferrymq.testing.network import BrokerNetwork
from tests.spark.queues import queue_depth, send_numbered

QUEUE = "/queue/SPARK.ROWS"
WAIT_S = 60


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    with BrokerThread(broker_config(tmp_path / "data")) as started:
        yield started


def rows_when(spark: SparkSession, table: str, count: int) -> list[Row]:
    """The memory sink's rows once it has ``count`` of them."""
    deadline = time.monotonic() + WAIT_S
    while spark.table(table).count() < count:
        assert time.monotonic() < deadline, f"{table} did not reach {count} rows"
        time.sleep(0.2)
    return spark.table(table).orderBy("offset").collect()


def read_all(spark: SparkSession, url: str, name: str) -> list[Row]:
    """Stream ``QUEUE`` into a memory table until two rows arrived."""
    register(spark)
    stream = (
        spark.readStream.format("ferrymq")
        .option("url", url)
        .option("destination", QUEUE)
        .option("pollTimeoutMs", "200")
        .load()
    )
    query = stream.writeStream.format("memory").queryName(name).start()
    try:
        return rows_when(spark, name, 2)
    finally:
        query.stop()


async def test_rows_carry_the_message_its_headers_and_the_brokers_it_crossed(
    tmp_path: Path, spark: SparkSession
) -> None:
    net = BrokerNetwork(tmp_path)
    net.add("A", '<networkConnector name="toB" uri="static:({B})"/>')
    net.add("B")
    expires_ms = int(time.time() * 1000) + 3_600_000
    async with net:
        await net.wait_for_bridges()
        conn = await connect_async(net.url("B"))
        try:
            await conn.send(
                QUEUE,
                b"\x00\xffbinary",
                headers={
                    "correlation-id": "c-1",
                    "reply-to": "/queue/REPLIES",
                    "type": "order",
                    "JMSXGroupID": "group-1",
                    "JMSXGroupSeq": "3",
                    "custom": "value",
                },
                persistent=True,
                priority=7,
                expires=expires_ms,
            )
        finally:
            await conn.disconnect()
        # Forwarded to B once the source's subscription there makes demand on A.
        await net.produce("A", QUEUE, 1)
        local, forwarded = await asyncio.to_thread(read_all, spark, net.url("B"), "rows")

    assert spark.table("rows").schema == MESSAGE_SCHEMA
    assert local["destination"] == QUEUE
    assert local["message_id"].startswith("ID:")
    assert bytes(local["body"]) == b"\x00\xffbinary"
    assert local["headers"]["custom"] == "value"
    assert local["headers"]["message-id"] == local["message_id"]
    assert "subscription" not in local["headers"]
    assert "ack" not in local["headers"]
    assert (local["correlation_id"], local["reply_to"], local["type"]) == (
        "c-1",
        "/queue/REPLIES",
        "order",
    )
    assert (local["group_id"], local["group_seq"]) == ("group-1", 3)
    assert (local["priority"], local["persistent"], local["redelivered"]) == (7, True, False)
    assert int(local["expires"].timestamp() * 1000) == expires_ms
    assert abs(local["timestamp"].timestamp() - time.time()) < WAIT_S
    assert local["broker_path"] == []
    assert local["offset"] == 1

    assert bytes(forwarded["body"]) == b"m-000"
    assert forwarded["broker_path"] == ["A"]
    assert forwarded["offset"] == 2


def test_available_now_reads_batches_of_max_messages_per_trigger_and_empties_the_queue(
    broker: BrokerThread, tmp_path: Path, spark: SparkSession
) -> None:
    url = f"tcp://127.0.0.1:{broker.port}"
    send_numbered(url, "/queue/SPARK.BATCHES", 25)
    register(spark)
    query = (
        spark.readStream.format("ferrymq")
        .option("url", url)
        .option("destination", "/queue/SPARK.BATCHES")
        .option("maxMessagesPerTrigger", "7")
        .option("spoolLocation", str(tmp_path / "spool"))
        .option("pollTimeoutMs", "500")
        .load()
        .writeStream.format("memory")
        .queryName("batches")
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(WAIT_S)
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert sizes == [7, 7, 7, 4]
    rows = spark.table("batches").orderBy("offset").collect()
    assert [bytes(row["body"]).decode() for row in rows] == [f"m{n}" for n in range(25)]
    assert [row["offset"] for row in rows] == list(range(1, 26))
    assert queue_depth(broker, "SPARK.BATCHES") == 0  # the last batch too: acknowledged at the end
    assert os.listdir(tmp_path / "spool") == ["committed"]


def test_a_durable_topic_subscription_keeps_what_was_published_while_the_query_was_down(
    broker: BrokerThread, tmp_path: Path, spark: SparkSession
) -> None:
    url = f"tcp://127.0.0.1:{broker.port}"
    register(spark)

    def run() -> None:
        query = (
            spark.readStream.format("ferrymq")
            .option("url", url)
            .option("destination", "/topic/SPARK.PRICES")
            .option("clientId", "spark-prices")
            .option("subscriptionName", "prices")
            .option("spoolLocation", str(tmp_path / "spool"))
            .option("pollTimeoutMs", "500")
            .load()
            .writeStream.format("parquet")
            .option("path", str(tmp_path / "out"))
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(WAIT_S)
        assert query.exception() is None

    run()  # subscribes durably; nothing published yet
    send_numbered(url, "/topic/SPARK.PRICES", 5, prefix="p")
    run()
    rows = spark.read.parquet(str(tmp_path / "out")).orderBy("offset").collect()
    assert [bytes(row["body"]).decode() for row in rows] == [f"p{n}" for n in range(5)]


def test_a_bad_option_fails_the_query_naming_it(spark: SparkSession) -> None:
    register(spark)
    query = (
        spark.readStream.format("ferrymq")
        .option("url", "tcp://127.0.0.1:1")
        .option("destination", "/queue/SPARK.NOWHERE")
        .option("maxMessagesPerTrigger", "0")
        .load()
        .writeStream.format("memory")
        .queryName("bad_option")
        .start()
    )
    with pytest.raises(StreamingQueryException, match="maxMessagesPerTrigger"):
        query.awaitTermination(WAIT_S)
