"""The sink's checks of columns and options, and how a row becomes a SEND: plain functions, no
Spark session and no broker."""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql import Row
from pyspark.sql.types import (
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from ferrymq.spark.options import OptionError
from ferrymq.spark.rows import MESSAGE_SCHEMA
from ferrymq.spark.sink_options import sink_options
from ferrymq.spark.sink_schema import SinkRowError, SinkSchemaError, sink_layout

URL = "tcp://127.0.0.1:61613"


def schema(**columns: DataType) -> StructType:
    return StructType([StructField(name, kind) for name, kind in columns.items()])


def test_a_row_becomes_destination_body_and_headers() -> None:
    layout = sink_layout(
        schema(
            body=StringType(),
            headers=MapType(StringType(), StringType()),
            correlation_id=StringType(),
            PRIORITY=IntegerType(),
            expires=LongType(),
        ),
        "/queue/out",
        persistent=True,
    )
    row = Row(
        body="héllo", headers={"k": "v", "gone": None}, correlation_id="c-1", PRIORITY=7, expires=0
    )
    message = layout.message(row, 0)
    assert message.destination == "/queue/out"
    assert message.body == "héllo".encode()
    assert message.headers == {
        "k": "v",
        "correlation-id": "c-1",
        "priority": "7",
        "expires": "0",
        "persistent": "true",
    }


def test_columns_win_over_the_headers_map_and_frame_headers_are_dropped() -> None:
    layout = sink_layout(
        schema(
            body=BinaryType(), headers=MapType(StringType(), StringType()), priority=IntegerType()
        ),
        "/queue/out",
        persistent=False,
    )
    given = {
        "priority": "1",
        "destination": "/queue/elsewhere",
        "receipt": "r-9",
        "message-id": "ID:x-1:1",
        "ferrymq.producer-message-id": "theirs",
        "content-length": "3",
        "persistent": "true",
    }
    message = layout.message(Row(body=bytearray(b"\x00\xff"), headers=given, priority=9), 0)
    assert message.body == b"\x00\xff"
    assert message.headers == {"priority": "9", "persistent": "true"}


def test_a_null_column_value_leaves_the_header_alone() -> None:
    layout = sink_layout(
        schema(body=StringType(), priority=IntegerType()), "/queue/q", persistent=False
    )
    assert layout.message(Row(body=None, priority=None), 0).headers == {}
    assert layout.message(Row(body=None, priority=None), 0).body == b""


def test_the_destination_option_wins_over_the_column() -> None:
    columns = schema(body=StringType(), destination=StringType())
    routed = sink_layout(columns, None, persistent=True)
    assert routed.message(Row(body="x", destination="/topic/a"), 0).destination == "/topic/a"
    fixed = sink_layout(columns, "/queue/b", persistent=True)
    assert fixed.message(Row(body="x", destination="/topic/a"), 0).destination == "/queue/b"
    with pytest.raises(SinkRowError, match="'destination', row 3 of the partition"):
        routed.message(Row(body="x", destination=None), 3)


def test_expires_from_a_timestamp_is_epoch_ms() -> None:
    layout = sink_layout(
        schema(body=StringType(), expires=TimestampType()), "/queue/q", persistent=False
    )
    when = dt.datetime(2030, 1, 2, 3, 4, 5, 678000, tzinfo=dt.UTC)
    naive_local = when.astimezone().replace(tzinfo=None)  # what PySpark's converter hands over
    message = layout.message(Row(body="x", expires=naive_local), 0)
    assert message.headers["expires"] == str(int(when.timestamp() * 1000))


def test_a_bad_priority_names_column_and_row() -> None:
    layout = sink_layout(
        schema(body=StringType(), priority=IntegerType()), "/queue/q", persistent=False
    )
    with pytest.raises(
        SinkRowError, match=r"'priority', row 5 of the partition: priority must be 0-9"
    ):
        layout.message(Row(body="x", priority=12), 5)


def test_the_source_rows_can_be_written_back() -> None:
    layout = sink_layout(MESSAGE_SCHEMA, "/queue/copy", persistent=True)
    names = {column.column for _, column in layout.header_columns}
    assert names == {
        "priority",
        "correlation_id",
        "reply_to",
        "type",
        "expires",
        "persistent",
        "group_id",
        "group_seq",
    }
    assert layout.headers is not None


@pytest.mark.parametrize(
    ("columns", "destination", "message"),
    [
        (schema(value=StringType()), "/queue/q", "'body': is required .* the columns are: value"),
        (schema(body=LongType()), "/queue/q", "'body': must be BINARY or STRING, not bigint"),
        (
            schema(body=StringType()),
            None,
            "'destination': is missing, and so is the 'destination' option",
        ),
        (
            schema(body=StringType(), destination=IntegerType()),
            None,
            "'destination': must be STRING",
        ),
        (
            schema(body=StringType(), headers=MapType(StringType(), IntegerType())),
            "/queue/q",
            "'headers': must be MAP<STRING,STRING>, not map<string,int>",
        ),
        (
            schema(body=StringType(), priority=StringType()),
            "/queue/q",
            "'priority': must be TINYINT or",
        ),
        (
            schema(body=StringType(), Body=StringType()),
            "/queue/q",
            "'Body': appears more than once",
        ),
    ],
)
def test_a_schema_the_sink_cannot_write_is_refused_naming_the_column(
    columns: StructType, destination: str | None, message: str
) -> None:
    with pytest.raises(SinkSchemaError, match=message):
        sink_layout(columns, destination, persistent=True)


def test_options_have_defaults_and_any_case() -> None:
    options = sink_options({"url": URL, "destination": "/queue/q", "maxinflight": "7"}, stream=True)
    assert options.destination == "/queue/q"
    assert options.max_in_flight == 7
    assert options.persistent
    assert options.receipt_timeout_s == 60.0
    assert sink_options({"url": URL}, stream=False).destination is None


def test_spark_s_own_stream_options_are_accepted() -> None:
    given = {
        "url": URL,
        "destination": "/queue/q",
        "checkpointlocation": "/tmp/c",
        "queryname": "q",
    }
    assert sink_options(given, stream=True).destination == "/queue/q"


@pytest.mark.parametrize(
    ("given", "stream", "message"),
    [
        ({}, False, "'url': is required"),
        ({"url": "foo://x"}, False, "'url': unknown transport scheme 'foo'"),
        ({"url": "tcp://h:1?bogus=1"}, False, "'url': unknown option 'bogus'"),
        (
            {"url": URL, "destination": "q"},
            False,
            "'destination': must be /queue/NAME or /topic/NAME",
        ),
        ({"url": URL, "maxInFlight": "0"}, False, "'maxInFlight': must be at least 1"),
        ({"url": URL, "persistent": "yes"}, False, "'persistent': must be true or false"),
        (
            {"url": URL, "maxinflite": "5"},
            False,
            "unknown option \\(did you mean 'maxInFlight'\\?\\)",
        ),
        ({"url": URL, "writeId": "w"}, True, "'writeId': is for df.write"),
        ({"url": URL, "clientId": "c"}, False, "'clientId': is for a durable subscription"),
        ({"url": URL, "checkpointLocation": "/tmp/c"}, False, "unknown option"),
    ],
)
def test_an_option_the_sink_cannot_use_is_refused_naming_it(
    given: dict[str, str], stream: bool, message: str
) -> None:
    with pytest.raises(OptionError, match=message):
        sink_options(given, stream=stream)
