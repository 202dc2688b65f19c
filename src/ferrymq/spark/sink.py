"""The sink of ``format("ferrymq")``: rows become messages on a FerryMQ destination.

``df.writeStream.format("ferrymq").option("url", ...).option("destination", ...)`` and the batch
``df.write`` equivalent. Each task connects to the broker itself (``local[*]`` or a cluster, the
broker must be reachable from the executors), sends its partition pipelined and returns only
when every message is receipted, so Spark commits a batch only after all of it is stored.

Exactly once at the consumers comes from the broker's duplicate detection: every message
carries a ``ferrymq.producer-message-id`` that the same row of the same batch gets again when
Spark runs the batch again, and the broker drops a re-send of an id it still remembers:

* streaming: ``<queryId>:<batchId>:<partitionId>:<row>`` (the query id survives a restart from
  the checkpoint, and a re-run batch keeps its id; ``ferrymq.spark.task``);
* ``df.write``: ``<writeId>:<partitionId>:<row>``, where ``writeId`` is made once on the driver
  when Spark builds the writer, and pickled to every task, retries included. A second
  ``save()`` is a new write with a new id, unless the ``writeId`` option names one.

No STOMP transaction per task: it would add nothing to consumers' exactly-once (the ids do
that), and it would hold the partition in the broker's memory, and in the client's for a
failover replay, until COMMIT; see docs/spark.md "Sink" for this and the duplicate window.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from ferrymq.spark.producer import produce
from ferrymq.spark.sink_options import SinkOptions, sink_options
from ferrymq.spark.sink_schema import OutgoingMessage, SinkLayout, sink_layout
from ferrymq.spark.task import current_streaming_task, current_task
from ferrymq.stomp.constants import FERRYMQ_PRODUCER_MESSAGE_ID

log = logging.getLogger(__name__)

__all__ = ["FerryMQBatchWriter", "FerryMQStreamWriter", "SinkCommitMessage"]


@dataclass(frozen=True)
class SinkCommitMessage(WriterCommitMessage):
    """What a task tells the driver: its partition's messages are all receipted."""

    id_prefix: str
    """The duplicate-detection ids of this partition are ``<id_prefix>:<row>``."""
    partition_id: int
    attempt: int
    messages: int
    body_bytes: int
    elapsed_s: float


class _Writer:
    """What the stream and batch writers share: options and layout, checked where Spark builds
    the writer (on the driver), so a bad option or column fails ``save()``, or a stream's first
    batch, before any row is sent."""

    def __init__(self, options: dict[str, str], schema: StructType, *, stream: bool) -> None:
        self._options: SinkOptions = sink_options(options, stream=stream)
        self._layout: SinkLayout = sink_layout(
            schema, self._options.destination, persistent=self._options.persistent
        )

    def _send(
        self, rows: Iterable[Sequence[Any]], id_prefix: str, partition_id: int, attempt: int
    ) -> SinkCommitMessage:
        report = produce(self._options, _identified(self._layout, rows, id_prefix))
        return SinkCommitMessage(
            id_prefix,
            partition_id,
            attempt,
            report.messages,
            report.body_bytes,
            report.elapsed_s,
        )


class FerryMQStreamWriter(_Writer, DataSourceStreamWriter):
    """``df.writeStream.format("ferrymq")``. Spark makes a fresh instance for each batch's
    commit (spark.md §1.8), so nothing is kept between calls."""

    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        super().__init__(options, schema, stream=True)

    def write(self, iterator: Iterator[Any]) -> SinkCommitMessage:
        task = current_streaming_task()
        prefix = f"{task.query_id}:{task.batch_id}:{task.partition_id}"
        return self._send(iterator, prefix, task.partition_id, task.attempt)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        # Nothing to do: every message was receipted (stored) before its task returned.
        log.info("ferrymq sink: batch %d committed (%s)", batchId, _totals(messages))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        log.warning(
            "ferrymq sink: batch %d aborted (%s). What was sent stays on the broker and may "
            "already be consumed: a STOMP message cannot be recalled. Running batch %d again "
            "(a restart from the checkpoint) re-sends the same rows with the same ids, which "
            "the broker drops while they are within its duplicate-detection window.",
            batchId,
            _totals(messages),
            batchId,
        )


class FerryMQBatchWriter(_Writer, DataSourceWriter):
    """``df.write.format("ferrymq")``. Built once per ``save()`` on the driver and pickled to
    every task, so ``write_id`` is the same for all of them and for their retries."""

    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        super().__init__(options, schema, stream=False)
        self.write_id = self._options.write_id or uuid.uuid4().hex

    def write(self, iterator: Iterator[Any]) -> SinkCommitMessage:
        task = current_task()
        prefix = f"{self.write_id}:{task.partition_id}"
        return self._send(iterator, prefix, task.partition_id, task.attempt)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        log.info("ferrymq sink: write %s committed (%s)", self.write_id, _totals(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        log.warning(
            "ferrymq sink: write %s aborted (%s). What was sent stays on the broker and may "
            "already be consumed: a STOMP message cannot be recalled. Saving again with "
            "option writeId=%s re-sends the same rows with the same ids, which the broker "
            "drops while they are within its duplicate-detection window.",
            self.write_id,
            _totals(messages),
            self.write_id,
        )


def _identified(
    layout: SinkLayout, rows: Iterable[Sequence[Any]], id_prefix: str
) -> Iterator[OutgoingMessage]:
    for index, row in enumerate(rows):
        message = layout.message(row, index)
        message.headers[FERRYMQ_PRODUCER_MESSAGE_ID] = f"{id_prefix}:{index}"
        yield message


def _totals(messages: Sequence[WriterCommitMessage | None]) -> str:
    done = [m for m in messages if isinstance(m, SinkCommitMessage)]
    sent = sum(m.messages for m in done)
    failed = len(messages) - len(done)
    return f"{sent} messages from {len(done)} tasks" + (f", {failed} failed" if failed else "")
