"""The net effect of a run of write batches, so a group commit writes each row at most once.

Message operations on one ``(container, seq)`` collapse into the pending insert when the message
was added in the same run: Add then MarkDelivered inserts ``delivered=1``, Add then Remove inserts
nothing.  What is left is applied in a fixed order (mark, remove, purge, insert), which gives the
same result as applying the operations one by one:

* a mark or remove that survives coalescing targets a row stored before the run, and marks run
  before the deletes that might follow them;
* an insert is only pending if no purge of its container and no remove of it came after it, so
  inserting last is right, and a row removed then re-added is deleted before it is inserted again.

Subscriptions and destinations live in their own tables and are kept in submission order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypeAlias

from ferrymq.store.base import (
    AddDestination,
    AddDurableSubscription,
    AddMessage,
    MarkDelivered,
    PurgeContainer,
    RemoveDestination,
    RemoveDurableSubscription,
    RemoveMessage,
    StoreOp,
)

MessageKey: TypeAlias = tuple[str, int]


@dataclass(slots=True)
class PendingInsert:
    container: str
    seq: int
    blob: bytes
    priority: int
    expiration: int
    persistent: bool
    delivered: bool


class TableOpKind:
    """Statement names for subscription and destination changes, in submission order."""

    ADD_SUBSCRIPTION = "add_subscription"
    REMOVE_SUBSCRIPTION = "remove_subscription"
    ADD_DESTINATION = "add_destination"
    REMOVE_DESTINATION = "remove_destination"


TableOp: TypeAlias = tuple[str, tuple[object, ...]]


@dataclass(slots=True)
class WritePlan:
    inserts: dict[MessageKey, PendingInsert] = field(default_factory=dict)
    marks: dict[MessageKey, None] = field(default_factory=dict)
    removes: dict[MessageKey, None] = field(default_factory=dict)
    purges: dict[str, None] = field(default_factory=dict)
    table_ops: list[TableOp] = field(default_factory=list)
    producer_message_ids: list[str] = field(default_factory=list)
    """In submission order, including those of messages removed within the run."""
    max_seq: int = 0
    operations: int = 0

    def add(self, ops: Iterable[StoreOp]) -> None:
        for op in ops:
            self.operations += 1
            match op:
                case AddMessage():
                    self._add_message(op)
                case MarkDelivered(container=container, seq=seq):
                    pending = self.inserts.get((container, seq))
                    if pending is not None:
                        pending.delivered = True
                    else:
                        self.marks[(container, seq)] = None
                case RemoveMessage(container=container, seq=seq):
                    # Also delete a stored row: an Add may have replaced it in this run.
                    self.inserts.pop((container, seq), None)
                    self.removes[(container, seq)] = None
                case PurgeContainer(container=container):
                    for key in [k for k in self.inserts if k[0] == container]:
                        del self.inserts[key]
                    self.purges[container] = None
                case AddDurableSubscription(record=r):
                    params = (
                        r.client_id,
                        r.subscription_name,
                        r.destination,
                        r.selector,
                        int(r.no_local),
                        r.container,
                    )
                    self.table_ops.append((TableOpKind.ADD_SUBSCRIPTION, params))
                case RemoveDurableSubscription(client_id=client_id, subscription_name=name):
                    self.table_ops.append((TableOpKind.REMOVE_SUBSCRIPTION, (client_id, name)))
                case AddDestination(qualified_name=name):
                    self.table_ops.append((TableOpKind.ADD_DESTINATION, (name,)))
                case RemoveDestination(qualified_name=name):
                    self.table_ops.append((TableOpKind.REMOVE_DESTINATION, (name,)))

    def _add_message(self, op: AddMessage) -> None:
        key = (op.container, op.seq)
        self.inserts[key] = PendingInsert(
            op.container,
            op.seq,
            op.blob,
            op.priority,
            op.expiration,
            op.persistent,
            op.delivered,
        )
        self.max_seq = max(self.max_seq, op.seq)
        if op.persistent and op.producer_message_id is not None:
            self.producer_message_ids.append(op.producer_message_id)

    def __bool__(self) -> bool:
        return self.operations > 0
