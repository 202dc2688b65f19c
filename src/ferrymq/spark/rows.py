"""The row the source makes of a message: the schema, and messages to Arrow record batches.

The source keeps rows as Arrow record batches from the moment it takes messages from the
broker: the spool stores them as Arrow IPC, partitions carry them to executors as such, and
``read`` hands them to Spark without converting row by row (the Python Data Source API takes
``pyarrow.RecordBatch`` when its schema is exactly the one Spark derives from the query's
schema, which ``arrow_schema`` computes the same way).

The ``headers`` column holds every header of the MESSAGE frame except those that only mean
something to the subscription that received it (``subscription``, ``ack``) and
``content-length``; the other columns are read from the headers, a malformed value as null.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from ferrymq.client.subscription import AuditKey, message_audit_key
from ferrymq.stomp import constants as h

OFFSET: Final = "offset"
MESSAGE_SCHEMA: Final = StructType(
    [
        StructField("destination", StringType()),
        StructField("message_id", StringType()),
        StructField("body", BinaryType()),
        StructField("headers", MapType(StringType(), StringType())),
        StructField("timestamp", TimestampType()),
        StructField("priority", IntegerType()),
        StructField("redelivered", BooleanType()),
        StructField("broker_path", ArrayType(StringType())),
        StructField("correlation_id", StringType()),
        StructField("reply_to", StringType()),
        StructField("type", StringType()),
        StructField("expires", TimestampType()),
        StructField("persistent", BooleanType()),
        StructField("group_id", StringType()),
        StructField("group_seq", IntegerType()),
        StructField(OFFSET, LongType()),
    ]
)
"""One row per message (docs/spark.md "Rows"); ``offset`` is the source's own number for it."""

_DELIVERY_ONLY: Final = frozenset({h.SUBSCRIPTION, h.ACK_HEADER, h.CONTENT_LENGTH})


class SchemaError(ValueError):
    """A user-specified schema the source cannot produce."""


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark expects record batches of ``schema`` to have."""
    return to_arrow_schema(schema, timezone="UTC")


FULL_ARROW_SCHEMA: Final = arrow_schema(MESSAGE_SCHEMA)


def check_schema(schema: StructType) -> StructType:
    """``schema`` if every column is one of ``MESSAGE_SCHEMA``'s with the same type (a
    user-specified schema may select and reorder columns, nothing else)."""
    known = {field.name: field.dataType for field in MESSAGE_SCHEMA.fields}
    for field in schema.fields:
        expected = known.get(field.name)
        if expected is None:
            raise SchemaError(
                f"column {field.name!r} is not one the ferrymq source provides ({', '.join(known)})"
            )
        if expected != field.dataType:
            raise SchemaError(
                f"column {field.name!r} must be {expected.simpleString()}, "
                f"not {field.dataType.simpleString()}"
            )
    return schema


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None


def _epoch_us(value: str | None) -> int | None:
    """A STOMP time (ms since the epoch; 0 means none) in µs, as Arrow timestamps hold it."""
    ms = _int(value)
    return ms * 1000 if ms else None


def _flag(value: str | None) -> bool | None:
    return None if value is None else value.lower() == "true"


def message_batch(
    messages: Sequence[tuple[str, str, Mapping[str, str], bytes]], first_offset: int
) -> pa.RecordBatch:
    """Rows of ``MESSAGE_SCHEMA`` for (destination, message id, headers, body) tuples, numbered
    from ``first_offset`` on."""
    columns: dict[str, list[Any]] = {field.name: [] for field in MESSAGE_SCHEMA.fields}
    for offset, (destination, message_id, headers, body) in enumerate(messages, first_offset):
        path = headers.get(h.BROKER_PATH)
        columns["destination"].append(destination)
        columns["message_id"].append(message_id)
        columns["body"].append(body)
        columns["headers"].append(
            [(name, value) for name, value in headers.items() if name not in _DELIVERY_ONLY]
        )
        columns["timestamp"].append(_epoch_us(headers.get(h.TIMESTAMP)))
        columns["priority"].append(_int(headers.get(h.PRIORITY)))
        columns["redelivered"].append(headers.get(h.REDELIVERED, "false").lower() == "true")
        columns["broker_path"].append(path.split(",") if path else [])
        columns["correlation_id"].append(headers.get(h.CORRELATION_ID))
        columns["reply_to"].append(headers.get(h.REPLY_TO))
        columns["type"].append(headers.get(h.TYPE))
        columns["expires"].append(_epoch_us(headers.get(h.EXPIRES)))
        columns["persistent"].append(_flag(headers.get(h.PERSISTENT)) or False)
        columns["group_id"].append(headers.get(h.JMSX_GROUP_ID))
        columns["group_seq"].append(_int(headers.get(h.JMSX_GROUP_SEQ)))
        columns[OFFSET].append(offset)
    arrays = [pa.array(columns[field.name], type=field.type) for field in FULL_ARROW_SCHEMA]
    return pa.RecordBatch.from_arrays(arrays, schema=FULL_ARROW_SCHEMA)


def project(batch: pa.RecordBatch, schema: StructType) -> pa.RecordBatch:
    """The columns of ``schema`` (checked by ``check_schema``) out of a full batch."""
    target = arrow_schema(schema)
    if target.equals(batch.schema):
        return batch
    return pa.RecordBatch.from_arrays(
        [batch.column(name) for name in schema.fieldNames()], schema=target
    )


def offsets_of(batch: pa.RecordBatch) -> tuple[int, int]:
    """The first and last offsets of a non-empty full batch (consecutive by construction)."""
    column = batch.column(OFFSET)
    return int(column[0].as_py()), int(column[len(column) - 1].as_py())


def message_keys(batch: pa.RecordBatch) -> list[AuditKey]:
    """The audit key (``message_audit_key``) of each row of a full batch, read back from its
    headers: the identity the source keeps a message by across redeliveries and failovers."""
    return [
        message_audit_key(destination or "", message_id or "", dict(headers))
        for destination, message_id, headers in zip(
            batch.column("destination").to_pylist(),
            batch.column("message_id").to_pylist(),
            batch.column("headers").to_pylist(),
            strict=True,
        )
    ]
