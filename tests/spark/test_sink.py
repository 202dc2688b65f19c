"""The ``ferrymq`` sink (issue 7 part 1) on the shared local[2] session, against real brokers:
a retried micro-batch reaches the consumer once per row, batch writes arrive intact, bad columns
and options fail before anything is sent, and a committed write survives a broker kill -9."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.errors import AnalysisException, StreamingQueryException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as sf
from pyspark.sql.types import BinaryType, MapType, StringType, StructField, StructType

from ferrymq.client.blocking import BlockingMessage, connect
from ferrymq.spark import register
from ferrymq.spark.producer import ProducerReport, SinkSendError, produce
from ferrymq.spark.sink_options import sink_options
from ferrymq.spark.sink_schema import OutgoingMessage
from ferrymq.testing import BrokerProcess, BrokerThread, broker_config

WAIT_S = 30
QUIET_S = 0.5
"""After the expected count, how long nothing more may arrive (a bounded quiet period)."""
PMID = "ferrymq.producer-message-id"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    """A persistent broker in this process, for the executors' and the test's connections."""
    with BrokerThread(broker_config(tmp_path / "data")) as started:
        yield started


@pytest.fixture
def sinks(spark: SparkSession) -> SparkSession:
    register(spark)
    return spark


def url_of(broker: BrokerThread) -> str:
    return f"tcp://127.0.0.1:{broker.port}"


def duplicates_dropped(broker: BrokerThread) -> int:
    def read() -> int:
        assert broker.broker is not None
        return broker.broker.service.region.dedup.duplicates

    return broker.call(read)


def drain(url: str, destination: str, expected: int | None) -> list[BlockingMessage]:
    """What ``destination`` holds: until ``expected`` messages came (None: until a quiet
    period), then a quiet period in which no more may come."""
    received: list[BlockingMessage] = []
    with connect(url) as connection:
        subscription = connection.subscribe(destination)
        deadline = time.monotonic() + WAIT_S
        while expected is not None and len(received) < expected:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"{len(received)} of {expected} messages on {destination}"
            received.append(subscription.get(remaining))
        while True:
            try:
                received.append(subscription.get(QUIET_S))
            except TimeoutError:
                break
            assert len(received) < 100_000, "messages keep coming"
    return received


# ---- one task's sends, without Spark ----


def test_a_task_s_sends_are_pipelined_receipted_and_in_order(broker: BrokerThread) -> None:
    options = sink_options({"url": url_of(broker), "maxInFlight": "16"}, stream=False)
    messages = (
        OutgoingMessage("/queue/pipe", f"m{i}".encode(), {PMID: f"t:{i}"}) for i in range(500)
    )
    report = produce(options, messages)
    assert (report.messages, report.body_bytes) == (500, sum(len(f"m{i}") for i in range(500)))
    assert [m.text for m in drain(url_of(broker), "/queue/pipe", 500)] == [
        f"m{i}" for i in range(500)
    ]


def test_a_refused_message_fails_the_task_naming_its_row(broker: BrokerThread) -> None:
    options = sink_options({"url": url_of(broker)}, stream=False)
    messages = [
        OutgoingMessage("/bogus/x" if i == 40 else "/queue/ok", b"x", {PMID: f"r:{i}"})
        for i in range(60)
    ]
    with pytest.raises(SinkSendError, match="row 40 of the partition, to /bogus/x: broker error"):
        produce(options, messages)
    # Everything written before the refused row reached the broker before the task failed.
    assert len(drain(url_of(broker), "/queue/ok", 40)) >= 40


@pytest.mark.slow
def test_a_broker_that_stops_receipting_fails_the_task_in_bounded_time(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data").start()
    options = sink_options(
        {"url": broker.url, "maxInFlight": "10", "receiptTimeoutMs": "1000"}, stream=False
    )
    sending = threading.Event()

    def messages() -> Iterator[OutgoingMessage]:
        for i in range(10**6):
            if i == 100:  # past the first window: connected and receipted
                sending.set()
            yield OutgoingMessage("/queue/slow", b"x", {PMID: f"s:{i}"})

    outcome: list[BaseException | ProducerReport] = []

    def send() -> None:
        try:
            outcome.append(produce(options, messages()))
        except BaseException as exc:
            outcome.append(exc)

    sender = threading.Thread(target=send)
    sender.start()
    try:
        assert sending.wait(WAIT_S), "the task never got going"
        broker.pause()
        sender.join(WAIT_S)
        assert not sender.is_alive(), "the task still waits for a receipt"
    finally:
        broker.resume()
        broker.kill()
        sender.join(WAIT_S)
    (error,) = outcome
    assert isinstance(error, SinkSendError)
    assert "no receipt from" in str(error)
    assert "within 1 s" in str(error)


# ---- Spark ----


def write_lines(directory: Path, first: int, count: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    lines = "".join(f"r{n:04d}\n" for n in range(first, first + count))
    (directory / f"rows-{first:04d}.txt").write_text(lines)


def test_a_retried_batch_reaches_the_consumer_once_per_row(
    sinks: SparkSession, broker: BrokerThread, tmp_path: Path
) -> None:
    """Batch 0 fails on row r0450 after the rows before it were sent (the broker refuses its
    destination, so the task fails). Restarted from its checkpoint, the query runs batch 0
    again with the same query id, batch id and row positions: the broker drops every re-sent
    row it already had, including those the consumer has already taken."""
    url = url_of(broker)
    rows, checkpoint = tmp_path / "rows", tmp_path / "checkpoint"
    write_lines(rows, 0, 300)
    write_lines(rows, 300, 300)

    def run(destination: Column) -> tuple[str, Exception | None]:
        query = (
            sinks.readStream.format("text")
            .load(str(rows))
            .select(sf.col("value").alias("body"), destination.alias("destination"))
            .writeStream.format("ferrymq")
            .option("url", url)
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        try:
            finished = query.awaitTermination(WAIT_S)
        except StreamingQueryException as exc:
            return query.id, exc
        finally:
            query.stop()
        assert finished, "the query did not finish"
        return query.id, None

    first_id, failure = run(
        sf.when(sf.col("value") == "r0450", sf.lit("/bogus/x")).otherwise(sf.lit("/queue/out"))
    )
    assert failure is not None
    assert "to /bogus/x: broker error" in str(failure)
    before = drain(url, "/queue/out", 150)  # at least the 150 rows before r0450 in its file
    assert duplicates_dropped(broker) == 0

    second_id, failure = run(sf.lit("/queue/out"))
    assert failure is None
    after = drain(url, "/queue/out", 600 - len(before))

    assert second_id == first_id
    bodies = Counter(m.text for m in before + after)
    assert bodies == Counter(f"r{n:04d}" for n in range(600))
    assert duplicates_dropped(broker) == len(before)
    assert {m.headers[PMID].rsplit(":", 2)[0] for m in before + after} == {f"{first_id}:0"}


def test_rows_read_by_the_source_are_written_to_another_queue_intact(
    sinks: SparkSession, broker: BrokerThread, tmp_path: Path
) -> None:
    """Source -> sink as they are: the shared column names carry the JMS headers across, the
    ``destination`` option wins over the rows' ``destination`` (the queue they came from)."""
    url = url_of(broker)
    expires_ms = int(time.time() * 1000) + 3_600_000
    with connect(url) as producer:
        for n in range(30):
            producer.send(
                "/queue/in",
                bytes([n, 0, 255]),
                headers={"n": str(n), "correlation-id": f"c-{n}", "JMSXGroupID": "g"},
                persistent=n % 2 == 0,
                priority=n % 10,
                expires=expires_ms,
                receipt=True,
            )
    query = (
        sinks.readStream.format("ferrymq")
        .option("url", url)
        .option("destination", "/queue/in")
        .option("spoolLocation", str(tmp_path / "spool"))
        .option("pollTimeoutMs", "300")
        .load()
        .writeStream.format("ferrymq")
        .option("url", url)
        .option("destination", "/queue/copy")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(WAIT_S), "the query did not finish"
    finally:
        query.stop()
    copies = {int(m.headers["n"]): m for m in drain(url, "/queue/copy", 30)}
    assert sorted(copies) == list(range(30))
    for n, message in copies.items():
        assert message.body == bytes([n, 0, 255])
        assert message.headers["correlation-id"] == f"c-{n}"
        assert message.headers["JMSXGroupID"] == "g"
        assert message.headers["priority"] == str(n % 10)
        assert message.headers.get("persistent", "false") == str(n % 2 == 0).lower()
        assert message.headers["expires"] == str(expires_ms)
        assert message.headers[PMID].startswith(f"{query.id}:")
    assert drain(url, "/queue/in", None) == []


STRING_ROWS = StructType(
    [
        StructField("body", StringType()),
        StructField("headers", MapType(StringType(), StringType())),
        StructField("correlation_id", StringType()),
        StructField("type", StringType()),
        StructField("reply_to", StringType()),
        StructField("group_id", StringType()),
    ]
)


def string_rows(spark: SparkSession) -> DataFrame:
    rows = [
        (
            f"text {n} \u00e9\u6f22 a:b\\c",
            {"n": str(n), "colon:key": "x\ny"},
            f"c-{n}",
            "t",
            "/queue/r",
            "g",
        )
        for n in range(20)
    ]
    n = sf.col("headers")["n"].cast("int")
    return (
        spark.createDataFrame(rows, STRING_ROWS)
        .repartition(2)
        .withColumn("priority", n % 10)
        .withColumn("persistent", n % 2 == 0)
        .withColumn("expires", sf.lit("2100-01-01 00:00:00").cast("timestamp"))
    )


def test_batch_writes_deliver_strings_binaries_and_headers_intact(
    sinks: SparkSession, broker: BrokerThread
) -> None:
    url = url_of(broker)

    def save(frame: DataFrame, destination: str, **options: str) -> None:
        (
            frame.write.format("ferrymq")
            .option("url", url)
            .option("destination", destination)
            .options(**options)
            .mode("append")
            .save()
        )

    save(string_rows(sinks), "/queue/text", writeId="w-text")
    save(string_rows(sinks), "/queue/text", writeId="w-text")  # the same write again: dropped
    received = {m.headers["n"]: m for m in drain(url, "/queue/text", 20)}
    assert sorted(received, key=int) == [str(n) for n in range(20)]
    for n, message in received.items():
        assert message.text == f"text {n} \u00e9\u6f22 a:b\\c"
        assert message.headers["colon:key"] == "x\ny"
        assert message.headers["correlation-id"] == f"c-{n}"
        assert message.headers["priority"] == str(int(n) % 10)
        assert (message.headers["type"], message.headers["reply-to"]) == ("t", "/queue/r")
        assert message.headers["JMSXGroupID"] == "g"
        assert message.headers.get("persistent", "false") == str(int(n) % 2 == 0).lower()
        assert message.headers["expires"] == "4102444800000"  # 2100-01-01 in the session's UTC
        assert message.headers[PMID].startswith("w-text:")
    assert duplicates_dropped(broker) == 20

    bodies = [bytes([n, 0, 255, 10]) + bytes(range(256)) * n for n in range(10)]
    binary = sinks.createDataFrame(
        [(body, {"n": str(n)}) for n, body in enumerate(bodies)],
        StructType(
            [
                StructField("body", BinaryType()),
                StructField("headers", MapType(StringType(), StringType())),
            ]
        ),
    )
    save(binary.repartition(2), "/queue/binary")
    got = {int(m.headers["n"]): m for m in drain(url, "/queue/binary", 10)}
    assert [got[n].body for n in range(10)] == bodies
    # One write id, made on the driver, for every task: "<writeId>:<partition>:<row>".
    ids = [got[n].headers[PMID].split(":") for n in range(10)]
    assert len({write_id for write_id, _, _ in ids}) == 1
    assert {partition for _, partition, _ in ids} == {"0", "1"}


def test_bad_columns_and_options_fail_before_anything_is_sent(
    sinks: SparkSession, broker: BrokerThread, tmp_path: Path
) -> None:
    url = url_of(broker)
    numbers = sinks.range(3)
    with pytest.raises(AnalysisException, match="ferrymq sink column 'body': is required"):
        numbers.write.format("ferrymq").option("url", url).option("destination", "/queue/b").mode(
            "append"
        ).save()
    texts = numbers.select(sf.col("id").cast("string").alias("body"))
    with pytest.raises(AnalysisException, match="ferrymq option 'destinaton': unknown option"):
        texts.write.format("ferrymq").option("url", url).option("destinaton", "/queue/b").mode(
            "append"
        ).save()
    with pytest.raises(AnalysisException, match="ferrymq option 'mode': overwrite cannot"):
        texts.write.format("ferrymq").option("url", url).option("destination", "/queue/b").mode(
            "overwrite"
        ).save()
    # A stream's writer is built when its first batch runs: the query stops there, unsent.
    query = (
        sinks.readStream.format("rate")
        .load()
        .select(sf.col("value").alias("body"))
        .writeStream.format("ferrymq")
        .option("url", url)
        .option("destination", "/queue/b")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    try:
        with pytest.raises(StreamingQueryException, match="'body': must be BINARY or STRING"):
            query.awaitTermination(WAIT_S)
    finally:
        query.stop()
    assert drain(url, "/queue/b", None) == []


@pytest.mark.slow
def test_a_committed_write_survives_a_broker_kill(sinks: SparkSession, tmp_path: Path) -> None:
    """Receipts come once messages are on disk, and the write returns only after the last:
    kill -9 right after ``save()`` loses nothing. Sent through a failover URL."""
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        url = f"failover:({broker.url})?maxReconnectAttempts=0"
        frame = sinks.range(2000).select(sf.format_string("p%d", "id").alias("body"))
        frame.repartition(2).write.format("ferrymq").option("url", url).option(
            "destination", "/queue/kept"
        ).mode("append").save()
        broker.kill()
        broker.start()
        received = drain(broker.url, "/queue/kept", 2000)
        assert sorted(m.text for m in received) == sorted(f"p{n}" for n in range(2000))
    finally:
        broker.kill()
