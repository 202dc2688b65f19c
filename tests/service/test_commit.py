"""The commit pipeline, alone: each store write is a plain future the test completes.

What receipts rely on: a barrier handed out before a pass's write follows that write (success
and failure alike), the first failed write is reported once and stops all later writes, and with
a slave attached a write is done only when both copies are.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from ferrymq.service.commit import CommitPipeline
from ferrymq.store.base import StoreError, StoreOp


class Writes:
    """A store whose every write is a future the test settles."""

    def __init__(self) -> None:
        self.submitted: list[tuple[list[StoreOp], asyncio.Future[None]]] = []

    def write(self, ops: list[StoreOp]) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.submitted.append((ops, future))
        return future


class Slave:
    def __init__(self) -> None:
        self.closed = False
        self.batches: list[asyncio.Future[None]] = []

    def replicate(self, ops: Sequence[StoreOp]) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.batches.append(future)
        return future


@pytest.fixture
def writes() -> Writes:
    return Writes()


async def settle() -> None:
    for _ in range(3):
        await asyncio.sleep(0)


OPS: list[StoreOp] = []


async def test_no_barrier_when_nothing_is_pending_or_in_flight(writes: Writes) -> None:
    pipeline = CommitPipeline(writes, lambda exc: None)
    assert pipeline.barrier(pending_writes=False) is None


async def test_the_barrier_follows_the_next_write(writes: Writes) -> None:
    pipeline = CommitPipeline(writes, lambda exc: None)
    barrier = pipeline.barrier(pending_writes=True)
    assert barrier is not None
    assert pipeline.barrier(pending_writes=True) is barrier  # one write per pass
    pipeline.write(OPS)
    await settle()
    assert not barrier.done()
    writes.submitted[0][1].set_result(None)
    await settle()
    assert barrier.done()
    assert barrier.exception() is None


async def test_without_pending_writes_the_barrier_is_the_write_in_flight(writes: Writes) -> None:
    pipeline = CommitPipeline(writes, lambda exc: None)
    pipeline.write(OPS)
    assert pipeline.barrier(pending_writes=False) is pipeline.last_commit
    writes.submitted[0][1].set_result(None)
    await settle()
    assert pipeline.barrier(pending_writes=False) is None


async def test_a_failed_write_fails_its_barrier_and_is_reported_once(writes: Writes) -> None:
    failures: list[BaseException] = []
    pipeline = CommitPipeline(writes, failures.append)
    barrier = pipeline.barrier(pending_writes=True)
    assert barrier is not None
    pipeline.write(OPS)
    writes.submitted[0][1].set_exception(StoreError("lock lost"))
    await settle()
    assert isinstance(barrier.exception(), StoreError)
    assert [str(f) for f in failures] == ["lock lost"]
    # Nothing reaches the store after that; a later barrier fails at once.
    later = pipeline.barrier(pending_writes=True)
    assert later is not None
    pipeline.write(OPS)
    await settle()
    assert len(writes.submitted) == 1
    assert isinstance(later.exception(), StoreError)
    assert len(failures) == 1


async def test_with_a_slave_a_write_is_done_when_both_copies_are(writes: Writes) -> None:
    pipeline = CommitPipeline(writes, lambda exc: None)
    slave = Slave()
    pipeline.replica = slave
    barrier = pipeline.barrier(pending_writes=True)
    assert barrier is not None
    pipeline.write(OPS)
    writes.submitted[0][1].set_result(None)
    await settle()
    assert not barrier.done()
    slave.batches[0].set_result(None)
    await settle()
    assert barrier.done()
    assert barrier.exception() is None


async def test_with_a_slave_a_local_failure_does_not_wait_for_the_slave(writes: Writes) -> None:
    pipeline = CommitPipeline(writes, lambda exc: None)
    slave = Slave()
    pipeline.replica = slave
    barrier = pipeline.barrier(pending_writes=True)
    assert barrier is not None
    pipeline.write(OPS)
    writes.submitted[0][1].set_exception(StoreError("disk full"))
    await settle()
    assert isinstance(barrier.exception(), StoreError)


async def test_settled_waits_for_the_last_write(writes: Writes) -> None:
    pipeline = CommitPipeline(writes, lambda exc: None)
    pipeline.write(OPS)
    waiter = asyncio.ensure_future(pipeline.settled())
    await settle()
    assert not waiter.done()
    writes.submitted[0][1].set_result(None)
    await asyncio.wait_for(waiter, 1)
