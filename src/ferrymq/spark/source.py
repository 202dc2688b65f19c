"""The streaming source of ``format("ferrymq")``: a destination's messages as rows.

``spark.readStream.format("ferrymq").option("url", ...).option("destination", ...).load()``.
Options, row schema and guarantees are documented in docs/spark.md; the moving parts are
``consumer`` (the broker side, on the driver), ``spool`` (what a restarted driver replays) and
``rows`` (the schema, as Arrow).

Where each method runs (reference spark.md §1.4) decides the shape of this class:

* ``__init__`` runs in every process Spark builds a reader in, so it only parses options;
* ``initialOffset``, ``latestOffset``, ``partitions``, ``commit`` and ``stop`` run on one
  long-lived instance in the driver's streaming runner: the ``SourceConsumer`` lives there;
* ``read`` runs on executors, on another instance: the rows travel inside the partitions, so
  executors need neither the broker nor the spool, and a cluster works as ``local[*]`` does.

Offsets are ``{"offset": n}``: n numbers the messages this query has taken, from 1.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Final

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from ferrymq.spark.consumer import (
    DEFAULT_NUM_PARTITIONS,
    DEFAULT_POLL_TIMEOUT_MS,
    DEFAULT_PREFETCH,
    SourceConsumer,
    SourceOptions,
)
from ferrymq.spark.options import (
    CONNECTION_OPTIONS,
    OptionError,
    OptionReader,
    read_connection_options,
)
from ferrymq.spark.rows import MESSAGE_SCHEMA, check_schema, project

__all__ = [
    "MESSAGE_SCHEMA",
    "SOURCE_OPTIONS",
    "DataLossError",
    "FerryMQStreamReader",
    "MessagesPartition",
    "read_source_options",
]

log = logging.getLogger(__name__)

OFFSET_KEY: Final = "offset"
SOURCE_OPTIONS: Final = (
    *CONNECTION_OPTIONS,
    "selector",
    "subscriptionName",
    "maxMessagesPerTrigger",
    "prefetch",
    "spoolLocation",
    "failOnDataLoss",
    "numPartitions",
    "pollTimeoutMs",
)


@dataclass(eq=False)
class DataLossError(Exception):
    """Spark replays a batch whose rows the spool no longer has (``failOnDataLoss``)."""

    spool_location: str
    destination: str
    first: int
    last: int
    found: int

    def __str__(self) -> str:
        return (
            f"the spool at {self.spool_location} has {self.found} of the "
            f"{self.last - self.first + 1} rows of offsets {self.first}..{self.last} of "
            f"{self.destination} (set failOnDataLoss=false to go on without them)"
        )


def read_source_options(options: Mapping[str, str]) -> SourceOptions:
    """The source's options, checked (``OptionError`` names the first bad one)."""
    reader = OptionReader(options)
    connection = read_connection_options(reader)
    subscription_name = reader.text("subscriptionName")
    if subscription_name is not None:
        if not connection.is_topic:
            raise OptionError("subscriptionName", "a durable subscription needs a /topic/")
        if connection.client_id is None:
            raise OptionError("clientId", "is required with subscriptionName")
    max_messages = reader.optional_integer("maxMessagesPerTrigger")
    source = SourceOptions(
        connection=connection,
        selector=reader.text("selector"),
        subscription_name=subscription_name,
        max_messages_per_trigger=max_messages,
        # A batch never holds more than the prefetch window (the unacknowledged messages).
        prefetch=reader.integer("prefetch", max(DEFAULT_PREFETCH, max_messages or 0)),
        spool_location=reader.text("spoolLocation"),
        fail_on_data_loss=reader.boolean("failOnDataLoss", True),
        num_partitions=reader.integer("numPartitions", DEFAULT_NUM_PARTITIONS),
        poll_timeout_ms=reader.integer("pollTimeoutMs", DEFAULT_POLL_TIMEOUT_MS, minimum=0),
    )
    reader.refuse_unknown(SOURCE_OPTIONS)
    return source


class MessagesPartition(InputPartition):
    """Rows of one partition of a micro-batch, as an Arrow IPC stream."""

    def __init__(self, index: int, first: int, last: int, data: bytes) -> None:
        super().__init__(data)
        self.index = index
        self.first = first
        self.last = last

    def __repr__(self) -> str:
        return f"MessagesPartition({self.index}, offsets {self.first}..{self.last})"


def _offset(value: Mapping[str, object]) -> int:
    number = value.get(OFFSET_KEY)
    if not isinstance(number, int):
        raise ValueError(f"not a ferrymq source offset: {value!r}")
    return number


class FerryMQStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Spark's side of the source; the module docstring says which method runs where."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self.options = read_source_options(options)
        self.schema = check_schema(schema)
        self._consumer: SourceConsumer | None = None

    def _driver(self) -> SourceConsumer:
        """The driver-side state, made at the first driver-side call (loading the spool)."""
        if self._consumer is None:
            self._consumer = SourceConsumer(self.options)
        return self._consumer

    def initialOffset(self) -> dict[str, int]:  # noqa: N802
        """A new checkpoint starts after what the spool says was committed (0 if empty)."""
        return {OFFSET_KEY: self._driver().committed_offset}

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802
        limit = self.options.max_messages_per_trigger
        return ReadAllAvailable() if limit is None else ReadMaxRows(limit)

    def latestOffset(self, start: dict[str, int], limit: ReadLimit) -> dict[str, int]:  # noqa: N802
        # Spark may pass ReadAllAvailable whatever getDefaultReadLimit said; it wins then.
        cap = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        return {OFFSET_KEY: self._driver().latest(_offset(start), cap)}

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
        self._driver().prepare_available_now(int(time.time() * 1000))

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        first, last = _offset(start) + 1, _offset(end)
        if last < first:
            return []
        batches = self._driver().rows(first - 1, last)
        found = sum(batch.num_rows for batch in batches)
        if found != last - first + 1:
            self._missing(first, last, found)
        if not batches:
            return []
        merged = pa.Table.from_batches(batches).combine_chunks().to_batches()[0]
        size = -(-merged.num_rows // self.options.num_partitions)
        return [
            self._partition(index, merged.slice(row, size))
            for index, row in enumerate(range(0, merged.num_rows, size))
        ]

    def _partition(self, index: int, rows: pa.RecordBatch) -> MessagesPartition:
        offsets = rows.column(OFFSET_KEY)
        batch = project(rows, self.schema)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, batch.schema) as writer:
            writer.write_batch(batch)
        return MessagesPartition(
            index,
            int(offsets[0].as_py()),
            int(offsets[len(offsets) - 1].as_py()),
            sink.getvalue().to_pybytes(),
        )

    def _missing(self, first: int, last: int, found: int) -> None:
        where = f"offsets {first}..{last} of {self.options.connection.destination}"
        if self.options.spool_location is None:
            log.warning(
                "ferrymq source: %s are not in memory (no spoolLocation): the batch is replayed "
                "with %d of %d rows; the broker redelivers the rest",
                where,
                found,
                last - first + 1,
            )
            return
        error = DataLossError(
            self.options.spool_location, self.options.connection.destination, first, last, found
        )
        if self.options.fail_on_data_loss:
            raise error
        log.warning("ferrymq source: %s; going on without them", error)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """On an executor: the rows are in the partition."""
        assert isinstance(partition, MessagesPartition)
        yield from pa.ipc.open_stream(pa.py_buffer(partition.value))

    def commit(self, end: dict[str, int]) -> None:
        self._driver().acknowledge_through(_offset(end))

    def stop(self) -> None:
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            consumer.close()
