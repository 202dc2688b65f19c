"""The in-memory reference ``MessageStore``: the semantics every backend must match, without I/O.

It serves ``persistent="false"`` brokers and tests.  Its data lives in a ``MemoryStorage`` (the
"location"), which outlives a store instance, so a test can restart a store on the same storage the
way it reopens a SQLite directory.  Every batch is applied at once, in call order; its future is
already resolved when ``write`` returns.
"""

from __future__ import annotations

import asyncio
import bisect
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import get_args

from ferrymq.store.base import (
    DEFAULT_PRODUCER_ID_WINDOW,
    AddDestination,
    AddDurableSubscription,
    AddMessage,
    ContainerState,
    DurableSubscriptionRecord,
    MarkDelivered,
    PurgeContainer,
    Recovery,
    RemoveDestination,
    RemoveDurableSubscription,
    RemoveMessage,
    StoredMessage,
    StoreError,
    StoreOp,
    StoreStatistics,
)

_STORE_OPS: tuple[type, ...] = get_args(StoreOp)


@dataclass(slots=True)
class _Row:
    blob: bytes
    persistent: bool
    delivered: bool


@dataclass(slots=True)
class _Container:
    rows: dict[int, _Row] = field(default_factory=dict)
    seqs: list[int] = field(default_factory=list)
    """Sorted keys of ``rows``; seqs mostly arrive in order, so inserting is usually an append."""

    def put(self, seq: int, row: _Row) -> None:
        if seq not in self.rows:
            if not self.seqs or seq > self.seqs[-1]:
                self.seqs.append(seq)
            else:
                bisect.insort(self.seqs, seq)
        self.rows[seq] = row

    def remove(self, seq: int) -> None:
        if self.rows.pop(seq, None) is not None:
            del self.seqs[bisect.bisect_left(self.seqs, seq)]


@dataclass(slots=True)
class MemoryStorage:
    """What a ``MemoryStore`` holds; pass the same object to a new store to "restart" on it."""

    containers: dict[str, _Container] = field(default_factory=dict)
    subscriptions: dict[tuple[str, str], DurableSubscriptionRecord] = field(default_factory=dict)
    destinations: dict[str, None] = field(default_factory=dict)
    producer_message_ids: deque[str] = field(default_factory=deque)
    last_seq: int = 0
    in_use: bool = False


class MemoryStore:
    def __init__(
        self,
        storage: MemoryStorage | None = None,
        *,
        producer_id_window: int = DEFAULT_PRODUCER_ID_WINDOW,
    ) -> None:
        if producer_id_window < 0:
            raise ValueError(f"producer_id_window must be >= 0, not {producer_id_window}")
        self._storage = MemoryStorage() if storage is None else storage
        self._window = producer_id_window
        self._running = False
        self._commits = 0
        self._operations = 0

    async def start(self) -> Recovery:
        storage = self._storage
        if storage.in_use:
            raise StoreError("memory store is already in use by another broker")
        storage.in_use = True
        self._running = True
        for name, container in list(storage.containers.items()):
            for seq in [s for s, row in container.rows.items() if not row.persistent]:
                container.remove(seq)
            if not container.rows:
                del storage.containers[name]
        self._trim_producer_ids()
        states = {
            name: ContainerState(
                container=name,
                count=len(c.rows),
                bytes=sum(len(row.blob) for row in c.rows.values()),
                first_seq=c.seqs[0],
                last_seq=c.seqs[-1],
            )
            for name, c in storage.containers.items()
        }
        return Recovery(
            containers=states,
            durable_subscriptions=list(storage.subscriptions.values()),
            destinations=list(storage.destinations),
            producer_message_ids=list(storage.producer_message_ids),
            last_seq=storage.last_seq,
        )

    async def stop(self) -> None:
        if self._running:
            self._running = False
            self._storage.in_use = False

    def write(self, ops: Sequence[StoreOp]) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        for op in ops:
            if not isinstance(op, _STORE_OPS):
                raise TypeError(f"not a store operation: {op!r}")
        if not self._running:
            future.set_exception(StoreError("memory store is not running"))
            return future
        for op in ops:
            self._apply(op)
        self._trim_producer_ids()
        self._commits += 1
        self._operations += len(ops)
        future.set_result(None)
        return future

    async def load(self, container: str, from_seq: int, limit: int) -> list[StoredMessage]:
        if not self._running:
            raise StoreError("memory store is not running")
        c = self._storage.containers.get(container)
        if c is None or limit <= 0:
            return []
        start = bisect.bisect_left(c.seqs, from_seq)
        result = []
        for seq in c.seqs[start : start + limit]:
            row = c.rows[seq]
            result.append(StoredMessage(container, seq, row.blob, row.delivered))
        return result

    def statistics(self) -> StoreStatistics:
        return StoreStatistics(
            commits=self._commits,
            operations=self._operations,
            last_commit_ms=0.0,
            total_commit_ms=0.0,
            pending_operations=0,
        )

    def _apply(self, op: StoreOp) -> None:
        storage = self._storage
        match op:
            case AddMessage():
                row = _Row(op.blob, op.persistent, op.delivered)
                storage.containers.setdefault(op.container, _Container()).put(op.seq, row)
                storage.last_seq = max(storage.last_seq, op.seq)
                if op.persistent and op.producer_message_id is not None:
                    storage.producer_message_ids.append(op.producer_message_id)
            case RemoveMessage():
                c = storage.containers.get(op.container)
                if c is not None:
                    c.remove(op.seq)
                    if not c.rows:
                        del storage.containers[op.container]
            case MarkDelivered():
                c = storage.containers.get(op.container)
                found = None if c is None else c.rows.get(op.seq)
                if found is not None:
                    found.delivered = True
            case PurgeContainer():
                storage.containers.pop(op.container, None)
            case AddDurableSubscription():
                key = (op.record.client_id, op.record.subscription_name)
                storage.subscriptions[key] = op.record
            case RemoveDurableSubscription():
                storage.subscriptions.pop((op.client_id, op.subscription_name), None)
            case AddDestination():
                storage.destinations[op.qualified_name] = None
            case RemoveDestination():
                storage.destinations.pop(op.qualified_name, None)

    def _trim_producer_ids(self) -> None:
        ids = self._storage.producer_message_ids
        while len(ids) > self._window:
            ids.popleft()
