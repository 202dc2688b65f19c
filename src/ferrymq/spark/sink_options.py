"""The sink's options (``df.write(Stream).format("ferrymq").option(name, value)``), read with the
shared ``OptionReader`` (names in any case, an unknown name refused with a suggestion) when
Spark builds the writer on the driver, so a mistake fails before any row is sent.

The connection options are the source's (``ferrymq.spark.options``), except that ``destination``
may be left out when every row names its own in a ``destination`` column.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from ferrymq.spark.options import (
    CLIENT_ID,
    CONNECTION_OPTIONS,
    ConnectionOptions,
    OptionError,
    OptionReader,
    read_connection_options,
)

PERSISTENT: Final = "persistent"
MAX_IN_FLIGHT: Final = "maxInFlight"
RECEIPT_TIMEOUT_MS: Final = "receiptTimeoutMs"
WRITE_ID: Final = "writeId"
SINK_OPTIONS: Final = (*CONNECTION_OPTIONS, PERSISTENT, MAX_IN_FLIGHT, RECEIPT_TIMEOUT_MS, WRITE_ID)

SPARK_STREAM_OPTIONS: Final = ("checkpointLocation", "queryName")
"""What ``writeStream.option(...)``/``queryName(...)`` are for Spark itself, and which Spark
passes to the writer with the sink's own options."""

DEFAULT_MAX_IN_FLIGHT: Final = 1000
"""Sends a task has written but the broker has not receipted yet. 100 already reaches the
pipelined rate on loopback (docs/spark.md, "Sink"); 1000 leaves room for a network's round trip.
A failover transport keeps each unreceipted send to replay it, so this also bounds that memory."""
DEFAULT_RECEIPT_TIMEOUT_MS: Final = 60_000
"""How long a task waits for the next receipt before failing (and being retried by Spark)."""

ROW_DESTINATIONS: Final = ""
"""``SinkOptions.connection.destination`` when there is no ``destination`` option: each row
names its own."""


@dataclass(frozen=True, slots=True)
class SinkOptions:
    connection: ConnectionOptions
    """``destination`` is ``ROW_DESTINATIONS`` when the option was not given."""
    persistent: bool
    """For rows that do not say (no ``persistent`` column value or header). Default true, JMS's
    default delivery mode (a STOMP SEND that says nothing is non-persistent)."""
    max_in_flight: int
    receipt_timeout_s: float
    write_id: str | None
    """``df.write`` only: the prefix of the duplicate-detection ids; None: a new one per write."""

    @property
    def destination(self) -> str | None:
        """The ``destination`` option, or None when each row says."""
        return self.connection.destination or None


def sink_options(options: Mapping[str, str], *, stream: bool) -> SinkOptions:
    """Read and check the writer's ``options``; raises ``OptionError`` naming the option."""
    reader = OptionReader(options)
    connection = read_connection_options(reader, destination_required=False)
    if connection.client_id is not None:
        raise OptionError(
            CLIENT_ID,
            "is for a durable subscription; every sink task opens its own connection, and the "
            "broker refuses a second connection with the same client id",
        )
    max_in_flight = reader.integer(MAX_IN_FLIGHT, DEFAULT_MAX_IN_FLIGHT)
    receipt_timeout_ms = reader.integer(RECEIPT_TIMEOUT_MS, DEFAULT_RECEIPT_TIMEOUT_MS)
    write_id = reader.text(WRITE_ID)
    if stream:
        if write_id is not None:
            raise OptionError(
                WRITE_ID, "is for df.write; a stream's ids come from its query and batch ids"
            )
        for name in SPARK_STREAM_OPTIONS:
            reader.text(name)
    persistent = reader.boolean(PERSISTENT, True)
    reader.refuse_unknown(SINK_OPTIONS)
    return SinkOptions(
        connection=connection,
        persistent=persistent,
        max_in_flight=max_in_flight,
        receipt_timeout_s=receipt_timeout_ms / 1000,
        write_id=write_id,
    )
