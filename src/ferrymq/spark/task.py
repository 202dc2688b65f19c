"""What a Spark task knows about itself: its partition and, in a streaming query, the query and
micro-batch it belongs to.

``DataSourceStreamWriter.write(rows)`` is given no batch id (reference spark.md §1.8); the
streaming engine puts the query id and batch id into the task's *local properties*, under names
that are Spark internals rather than documented API. They are read here and nowhere else, so a
Spark upgrade that renames them breaks one function, loudly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from pyspark import TaskContext

QUERY_ID_PROPERTY: Final = "sql.streaming.queryId"
"""``StreamExecution.QUERY_ID_KEY``: the query's id, kept in the checkpoint, so it is the same
after a restart from that checkpoint."""
BATCH_ID_PROPERTY: Final = "streaming.sql.batchId"
"""``MicroBatchExecution.BATCH_ID_KEY``: the micro-batch being run (a re-run after a failure
or restart has the same id)."""


class NotInSparkTaskError(RuntimeError):
    """Asked for the task context outside a Spark task, or for streaming properties outside a
    streaming query."""


@dataclass(frozen=True, slots=True)
class SparkTask:
    partition_id: int
    """The partition this task writes; a retried or speculative attempt has the same one."""
    attempt: int
    """0 for the first attempt of this partition, then 1, 2... (``TaskContext.attemptNumber``)."""
    stage_id: int


@dataclass(frozen=True, slots=True)
class StreamingTask(SparkTask):
    query_id: str
    batch_id: int


def current_task() -> SparkTask:
    """The running task (raises ``NotInSparkTaskError`` outside one)."""
    context = TaskContext.get()
    if context is None:
        raise NotInSparkTaskError("not running in a Spark task (TaskContext.get() is None)")
    return SparkTask(context.partitionId(), context.attemptNumber(), context.stageId())


def current_streaming_task() -> StreamingTask:
    """The running task of a micro-batch, with its query and batch ids."""
    context = TaskContext.get()
    if context is None:
        raise NotInSparkTaskError("not running in a Spark task (TaskContext.get() is None)")
    query_id = context.getLocalProperty(QUERY_ID_PROPERTY)
    batch_id = context.getLocalProperty(BATCH_ID_PROPERTY)
    if not query_id or not batch_id:
        raise NotInSparkTaskError(
            f"the task has no {QUERY_ID_PROPERTY!r}/{BATCH_ID_PROPERTY!r} local properties: "
            "not a micro-batch of a streaming query, or a Spark version that renamed them"
        )
    return StreamingTask(
        context.partitionId(),
        context.attemptNumber(),
        context.stageId(),
        query_id,
        int(batch_id),
    )
