"""The stream reader's Spark methods called directly, on a spool written beforehand and a
broker URL nobody listens on (a replay must not need the broker): partitions split a batch
and carry its rows, a user schema selects columns, a missing range follows failOnDataLoss."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows
from pyspark.sql.types import StructType

from ferrymq.spark.rows import MESSAGE_SCHEMA, message_batch
from ferrymq.spark.source import DataLossError, FerryMQStreamReader
from ferrymq.spark.spool import Spool, storage_for

NOWHERE = {"url": "tcp://127.0.0.1:1", "destination": "/queue/REPLAY"}


def spooled(location: Path, first: int, count: int, committed: int) -> pa.RecordBatch:
    rows = message_batch(
        [
            ("/queue/REPLAY", f"ID:b-1:{n}", {"priority": "4"}, f"m{n}".encode())
            for n in range(first, first + count)
        ],
        first,
    )
    spool = Spool(storage_for(str(location)))
    spool.append(rows)
    spool.commit(committed)
    return rows


def read(reader: FerryMQStreamReader, start: int, end: int) -> list[pa.RecordBatch]:
    partitions = reader.partitions({"offset": start}, {"offset": end})
    return [batch for partition in partitions for batch in reader.read(partition)]


def test_a_replay_comes_from_the_spool_split_into_partitions(tmp_path: Path) -> None:
    rows = spooled(tmp_path / "spool", 4, 5, committed=3)
    options = {**NOWHERE, "spoolLocation": str(tmp_path / "spool"), "numPartitions": "2"}
    reader = FerryMQStreamReader(options, MESSAGE_SCHEMA)
    try:
        assert reader.initialOffset() == {"offset": 3}
        partitions = reader.partitions({"offset": 3}, {"offset": 8})
        assert [repr(p) for p in partitions] == [
            "MessagesPartition(0, offsets 4..6)",
            "MessagesPartition(1, offsets 7..8)",
        ]
        assert pa.Table.from_batches(read(reader, 3, 8)).equals(pa.Table.from_batches([rows]))
        assert [b.num_rows for b in read(reader, 5, 6)] == [1]
        assert reader.partitions({"offset": 8}, {"offset": 8}) == []
    finally:
        reader.stop()


def test_a_user_schema_selects_columns(tmp_path: Path) -> None:
    spooled(tmp_path / "spool", 1, 2, committed=0)
    schema = StructType([MESSAGE_SCHEMA["offset"], MESSAGE_SCHEMA["body"]])
    reader = FerryMQStreamReader({**NOWHERE, "spoolLocation": str(tmp_path / "spool")}, schema)
    try:
        (batch,) = read(reader, 0, 2)
        assert batch.to_pylist() == [{"offset": 1, "body": b"m1"}, {"offset": 2, "body": b"m2"}]
    finally:
        reader.stop()


def test_a_range_missing_from_the_spool_follows_fail_on_data_loss(tmp_path: Path) -> None:
    spooled(tmp_path / "spool", 1, 2, committed=0)
    options = {**NOWHERE, "spoolLocation": str(tmp_path / "spool")}
    strict = FerryMQStreamReader(options, MESSAGE_SCHEMA)
    with pytest.raises(DataLossError, match=r"has 2 of the 4 rows of offsets 1\.\.4"):
        strict.partitions({"offset": 0}, {"offset": 4})
    lenient = FerryMQStreamReader({**options, "failOnDataLoss": "false"}, MESSAGE_SCHEMA)
    assert [b.num_rows for b in read(lenient, 0, 4)] == [2]
    without_spool = FerryMQStreamReader(NOWHERE, MESSAGE_SCHEMA)
    assert without_spool.partitions({"offset": 0}, {"offset": 4}) == []


def test_the_default_read_limit_is_max_messages_per_trigger() -> None:
    assert FerryMQStreamReader(NOWHERE, MESSAGE_SCHEMA).getDefaultReadLimit() == (
        ReadAllAvailable()
    )
    limited = FerryMQStreamReader({**NOWHERE, "maxMessagesPerTrigger": "7"}, MESSAGE_SCHEMA)
    assert limited.getDefaultReadLimit() == ReadMaxRows(7)
