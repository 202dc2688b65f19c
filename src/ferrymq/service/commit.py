"""The commit pipeline: the broker's store writes, in order, and what confirmations wait on.

The service makes one store write per pass (``write``), and the store merges writes that arrive
while it commits (group commit), so one fsync serves every message of a busy moment.  A
confirmation that depends on what the core decided in this pass (a receipt for a persistent
send, an ack's removal) waits on ``barrier``: a future the pass's write completes, made before
that write exists, so every receipt of one read shares the single write the read ends with.  With
pure master/slave a write is complete only once the slave has it too.  The first failed write
stops the broker serving (``on_failure``); later writes fail at once, without reaching a store
that can no longer be trusted.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Sequence
from typing import Protocol

from ferrymq.store.base import StoreError, StoreOp

log = logging.getLogger(__name__)


class Writer(Protocol):
    """The store as the pipeline uses it (``MessageStore.write``)."""

    def write(self, ops: list[StoreOp]) -> asyncio.Future[None]: ...


class Replica(Protocol):
    """The attached slave of pure master/slave (``service.replication.ReplicaLink``)."""

    @property
    def closed(self) -> bool: ...

    def replicate(self, ops: Sequence[StoreOp]) -> asyncio.Future[None]: ...


def observed(future: asyncio.Future[None]) -> None:
    """Mark a failure as seen: whoever waited on it is told through its own callbacks, and a
    connection that closed meanwhile leaves nobody to read it."""
    if not future.cancelled():
        future.exception()


def copy_outcome(source: asyncio.Future[None], target: asyncio.Future[None]) -> None:
    if target.done():
        return
    if source.cancelled():
        target.cancel()
    elif (exc := source.exception()) is not None:
        target.set_exception(exc)
    else:
        target.set_result(None)


def both_done(first: asyncio.Future[None], second: asyncio.Future[None]) -> asyncio.Future[None]:
    """Done when both are: failing with the first one's failure (the local store's)."""
    result: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def settle(_: asyncio.Future[None]) -> None:
        if result.done() or not (first.done() and second.done()):
            if first.done() and not result.done() and not first.cancelled():
                exc = first.exception()
                if exc is not None:
                    result.set_exception(exc)
            return
        if first.cancelled():
            result.cancel()
        elif (exc := first.exception()) is not None:
            result.set_exception(exc)
        else:
            result.set_result(None)

    first.add_done_callback(settle)
    second.add_done_callback(settle)
    return result


class SyncMirrors(Protocol):
    """The core's mirror tap, as a sync mirror's confirmations use it (``core.mirror``)."""

    on_sync_settled: Callable[[int], None] | None

    def take_sync(self) -> int: ...


class CommitPipeline:
    """One broker's store writes and the futures its confirmations wait on."""

    def __init__(
        self,
        store: Writer,
        on_failure: Callable[[BaseException], None],
        mirrors: SyncMirrors | None = None,
    ) -> None:
        """``mirrors``: with a `<mirror sync="true">`, a confirmation also waits until the
        target has applied the events decided before it (Artemis's sync mirror)."""
        self._store = store
        self._on_failure = on_failure
        self._mirrors = mirrors
        self._sync_waiters: deque[tuple[int, asyncio.Future[None]]] = deque()
        if mirrors is not None:
            mirrors.on_sync_settled = self._sync_settled
        self.replica: Replica | None = None
        """The slave every write must also reach (pure master/slave), while one is attached."""
        self.last_commit: asyncio.Future[None] | None = None
        """The latest write: done once it and (store order) everything before it is durable."""
        self._next: asyncio.Future[None] | None = None
        self.failed: BaseException | None = None
        """Why the store failed, once it has: nothing is written after that."""

    def barrier(self, pending_writes: bool) -> asyncio.Future[None] | None:
        """A future done once everything decided so far is durable (None: it already is), and,
        with a sync mirror, once its target has applied every sync event queued so far.

        ``pending_writes``: the core holds store operations the next ``write`` will carry.
        """
        durable = self._durable_barrier(pending_writes)
        newest = self._mirrors.take_sync() if self._mirrors is not None else 0
        if not newest:
            return durable
        applied: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._sync_waiters.append((newest, applied))
        return applied if durable is None else both_done(durable, applied)

    def _sync_settled(self, low_water: int) -> None:
        """Every sync event below ``low_water`` has been acknowledged by its forwarder, which
        does so only once the target settled it, after its durable write."""
        waiters = self._sync_waiters
        while waiters and waiters[0][0] < low_water:
            _, applied = waiters.popleft()
            if not applied.done():
                applied.set_result(None)

    def _durable_barrier(self, pending_writes: bool) -> asyncio.Future[None] | None:
        if pending_writes:
            if self._next is None:
                self._next = asyncio.get_running_loop().create_future()
            return self._next
        last = self.last_commit
        return last if last is not None and not last.done() else None

    def write(self, ops: list[StoreOp]) -> None:
        """Submit one pass's operations; the barrier handed out meanwhile follows this write."""
        barrier, self._next = self._next, None
        if self.failed is not None:
            if barrier is not None:
                barrier.set_exception(StoreError(f"the store failed: {self.failed}"))
            return
        future = self._store.write(ops)
        future.add_done_callback(self._done)
        replica = self.replica
        if replica is not None:
            # Pure master/slave: done when the slave has the batch too (seed 002).
            future = both_done(future, replica.replicate(ops))
        if barrier is not None:
            barrier.add_done_callback(observed)
            future.add_done_callback(lambda done: copy_outcome(done, barrier))
        future.add_done_callback(observed)
        self.last_commit = future

    def _done(self, future: asyncio.Future[None]) -> None:
        if future.cancelled():
            return
        exc = future.exception()
        if exc is not None and self.failed is None:
            self.failed = exc
            log.critical("store write failed, the broker stops serving: %s", exc)
            self._on_failure(exc)

    async def settled(self) -> None:
        """Wait for the latest write (stopping: the store closes only after it)."""
        last = self.last_commit
        if last is not None and not last.done():
            await asyncio.wait([last])
