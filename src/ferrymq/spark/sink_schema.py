"""The sink's input columns and how a row becomes a SEND.

``sink_layout(schema, destination)`` runs once on the driver, when Spark asks for the writer: it
finds the columns the sink understands (by name, ignoring case, as Spark resolves names), checks
their types and refuses a schema it cannot write with the column's name in the message. The
resulting ``SinkLayout`` is pickled to the tasks, where ``message(row)`` is all that runs per
row: positions and converters are settled, nothing is looked up by name.

Columns the sink does not know are ignored (as Kafka's sink does), so a row read by the
``ferrymq`` source (``message_id``, ``redelivered``, ``timestamp``...) can be written as it is:
the columns both have (``destination``, ``body``, ``headers``, ``priority``, ``correlation_id``,
``reply_to``, ``type``, ``expires``, ``persistent``, ``group_id``, ``group_seq``) have the same
names and types (``ferrymq.spark.rows``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructType,
    TimestampType,
)

from ferrymq.stomp import constants as h

BODY: Final = "body"
DESTINATION: Final = "destination"
HEADERS: Final = "headers"

_INTEGRAL = (ByteType, ShortType, IntegerType, LongType)

DROPPED_HEADERS: Final = frozenset(
    {
        h.DESTINATION,
        h.RECEIPT_HEADER,
        h.TRANSACTION,
        h.CONTENT_LENGTH,
        h.MESSAGE_ID,
        h.SUBSCRIPTION,
        h.ACK_HEADER,
        h.REDELIVERED,
        h.FERRYMQ_PRODUCER_MESSAGE_ID,
    }
)
"""Entries of a ``headers`` map that are not the row's to set: the frame's own (the sink sets
destination and receipt; content-length follows the body), what the broker assigns on delivery
(a row read by the source carries them), and the duplicate-detection id the sink derives."""


@dataclass(eq=False)
class SinkSchemaError(ValueError):
    """A schema the sink cannot write; ``column`` names the offending input column."""

    column: str
    problem: str

    def __post_init__(self) -> None:
        super().__init__(self.column, self.problem)  # args as fields: it pickles

    def __str__(self) -> str:
        return f"ferrymq sink column {self.column!r}: {self.problem}"


@dataclass(eq=False)
class SinkRowError(ValueError):
    """A row the sink cannot send; ``row`` is its position in the task's partition."""

    column: str
    row: int
    problem: str

    def __post_init__(self) -> None:
        super().__init__(self.column, self.row, self.problem)

    def __str__(self) -> str:
        where = f"row {self.row} of the partition"
        return f"ferrymq sink column {self.column!r}, {where}: {self.problem}"


@dataclass(frozen=True, slots=True)
class OutgoingMessage:
    destination: str
    body: bytes
    headers: dict[str, str]


Converter = Callable[[Any], str]


def _text(value: Any) -> str:
    return str(value)


def _boolean(value: Any) -> str:
    return "true" if value else "false"


def _priority(value: Any) -> str:
    if not 0 <= value <= 9:
        raise ValueError(f"priority must be 0-9, not {value}")
    return str(value)


def _expires(value: Any) -> str:
    """Absolute ms since the epoch (0: never), as ActiveMQ's STOMP ``expires`` has it. A
    TIMESTAMP arrives as a naive datetime in the worker's local time (PySpark's row converter),
    which is what ``datetime.timestamp`` assumes of a naive one."""
    if isinstance(value, dt.datetime):
        return str(round(value.timestamp() * 1000))
    if value < 0:
        raise ValueError(f"expires must be ms since the epoch (0: never), not {value}")
    return str(value)


@dataclass(frozen=True, slots=True)
class HeaderColumn:
    """An optional input column that sets one standard message header."""

    column: str
    header: str
    types: tuple[type[DataType], ...]
    convert: Converter
    meaning: str


HEADER_COLUMNS: Final = (
    HeaderColumn("correlation_id", h.CORRELATION_ID, (StringType,), _text, "JMSCorrelationID"),
    HeaderColumn("type", h.TYPE, (StringType,), _text, "JMSType"),
    HeaderColumn("reply_to", h.REPLY_TO, (StringType,), _text, "JMSReplyTo destination"),
    HeaderColumn("group_id", h.JMSX_GROUP_ID, (StringType,), _text, "JMSXGroupID"),
    HeaderColumn("group_seq", h.JMSX_GROUP_SEQ, _INTEGRAL, _text, "JMSXGroupSeq"),
    HeaderColumn("priority", h.PRIORITY, _INTEGRAL, _priority, "JMSPriority 0-9"),
    HeaderColumn("persistent", h.PERSISTENT, (BooleanType,), _boolean, "delivery mode"),
    HeaderColumn("expires", h.EXPIRES, (TimestampType, *_INTEGRAL), _expires, "ms since the epoch"),
)
"""The standard headers a row may set through a column of their own; a non-null column value
wins over the same header in the ``headers`` map."""


@dataclass(frozen=True, slots=True)
class SinkLayout:
    """Where a row's parts are: column positions and their converters, settled on the driver."""

    body: int
    body_is_text: bool
    destination: str | None
    """The ``destination`` option: every row goes there."""
    destination_column: int | None
    """Used when there is no ``destination`` option."""
    headers: int | None
    header_columns: tuple[tuple[int, HeaderColumn], ...]
    persistent: bool
    """For rows that say nothing about it (no ``persistent`` column value or header)."""

    def message(self, row: Sequence[Any], index: int) -> OutgoingMessage:
        """The SEND for ``row``, the ``index``-th of its partition (named in errors)."""
        headers: dict[str, str] = {}
        if self.headers is not None:
            given: Mapping[str, str | None] | None = row[self.headers]
            if given:
                headers = {
                    name: value
                    for name, value in given.items()
                    if value is not None and name not in DROPPED_HEADERS
                }
        for position, column in self.header_columns:
            value = row[position]
            if value is not None:
                try:
                    headers[column.header] = column.convert(value)
                except ValueError as exc:
                    raise SinkRowError(column.column, index, str(exc)) from None
        if self.persistent and h.PERSISTENT not in headers:
            headers[h.PERSISTENT] = "true"
        return OutgoingMessage(self._destination(row, index), self._body(row), headers)

    def _body(self, row: Sequence[Any]) -> bytes:
        value = row[self.body]
        if value is None:
            return b""
        if self.body_is_text:
            return str(value).encode()
        return value if type(value) is bytes else bytes(value)

    def _destination(self, row: Sequence[Any], index: int) -> str:
        if self.destination is not None:
            return self.destination
        assert self.destination_column is not None
        value = row[self.destination_column]
        if not value:
            raise SinkRowError(
                DESTINATION, index, "is null or empty and there is no 'destination' option"
            )
        return str(value)


def sink_layout(schema: StructType, destination: str | None, *, persistent: bool) -> SinkLayout:
    """Check ``schema`` and settle where each part of a message comes from; raises
    ``SinkSchemaError`` naming the column. ``destination`` (the option), when given, wins over a
    ``destination`` column, as Kafka's ``topic`` option wins over its column: a row read from one
    queue by the ``ferrymq`` source can then be written to another."""
    positions = _positions(schema)
    fields = schema.fields

    def find(name: str, types: tuple[type[DataType], ...], expected: str) -> int | None:
        position = positions.get(name)
        if position is not None and not isinstance(fields[position].dataType, types):
            found = fields[position].dataType.simpleString()
            raise SinkSchemaError(name, f"must be {expected}, not {found}")
        return position

    body = find(BODY, (BinaryType, StringType), "BINARY or STRING")
    if body is None:
        columns = ", ".join(schema.fieldNames()) or "none"
        raise SinkSchemaError(BODY, f"is required (BINARY or STRING); the columns are: {columns}")
    destination_column = find(DESTINATION, (StringType,), "STRING")
    if destination is None and destination_column is None:
        raise SinkSchemaError(
            DESTINATION, "is missing, and so is the 'destination' option: one must say where to"
        )
    headers = find(HEADERS, (MapType,), "MAP<STRING,STRING>")
    if headers is not None:
        map_type = fields[headers].dataType
        assert isinstance(map_type, MapType)
        if not (
            isinstance(map_type.keyType, StringType) and isinstance(map_type.valueType, StringType)
        ):
            raise SinkSchemaError(
                HEADERS, f"must be MAP<STRING,STRING>, not {map_type.simpleString()}"
            )
    header_columns = []
    for column in HEADER_COLUMNS:
        names = " or ".join(t().simpleString().upper() for t in column.types)
        position = find(column.column, column.types, names)
        if position is not None:
            header_columns.append((position, column))
    return SinkLayout(
        body=body,
        body_is_text=isinstance(fields[body].dataType, StringType),
        destination=destination,
        destination_column=None if destination is not None else destination_column,
        headers=headers,
        header_columns=tuple(header_columns),
        persistent=persistent,
    )


def _positions(schema: StructType) -> dict[str, int]:
    """Column name (lower case) -> position; a name given twice (ignoring case) is refused if
    the sink would read it."""
    known = {BODY, DESTINATION, HEADERS} | {column.column for column in HEADER_COLUMNS}
    positions: dict[str, int] = {}
    for position, name in enumerate(schema.fieldNames()):
        key = name.lower()
        if key in positions and key in known:
            raise SinkSchemaError(name, "appears more than once (names are compared ignoring case)")
        positions.setdefault(key, position)
    return positions
