"""``GroupCommitWriter`` on its own, over a database kept in a dict: what it hands the database
(which writes share a group, where a load falls in it) and how it settles the futures.  Both real
stores run the same engine; their own suites show it against SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

import pytest

from ferrymq.store import (
    AddMessage,
    LockLostError,
    Recovery,
    RemoveMessage,
    StoreBusyError,
    StoredMessage,
    StoreError,
)
from ferrymq.store.coalesce import WritePlan
from ferrymq.store.writer import REFUSAL, GroupCommitWriter, Step

QUEUE = "queue://A"


def add(seq: int) -> AddMessage:
    return AddMessage(QUEUE, seq, f"m{seq}".encode())


@dataclass
class DictDatabase:
    """A ``writer.Database`` whose rows live in a dict; it records what each group was."""

    rows: dict[int, bytes] = field(default_factory=dict)
    groups: list[list[str]] = field(default_factory=list)
    """Each group's steps: ``"write <seqs inserted>"`` or ``"load"``."""
    gate: threading.Event | None = None
    """When set to an unset event, the next group waits for it (the writer thread is busy)."""
    entered: threading.Event = field(default_factory=threading.Event)
    fail_with: Exception | None = None
    explained: Exception | None = None
    events: list[str] = field(default_factory=list)

    def run_group(self, steps: Sequence[Step]) -> list[list[StoredMessage]]:
        failure = self.fail_with  # as the group began: a held group is not failed meanwhile
        self.entered.set()
        gate, self.gate = self.gate, None
        if gate is not None:
            gate.wait(10)
        if failure is not None:
            self.events.append("run_group failed")
            raise failure
        pending = dict(self.rows)  # one transaction: applied only if the whole group succeeds
        loaded: list[list[StoredMessage]] = []
        record: list[str] = []
        for step in steps:
            if isinstance(step, WritePlan):
                record.append(f"write {sorted(seq for _, seq in step.inserts)}")
                for _, seq in step.removes:
                    pending.pop(seq, None)
                pending.update({p.seq: p.blob for p in step.inserts.values()})
            else:
                record.append("load")
                container, from_seq, limit = step
                seqs = sorted(s for s in pending if s >= from_seq)[:limit]
                loaded.append([StoredMessage(container, s, pending[s], False) for s in seqs])
        self.rows = pending
        self.groups.append(record)
        return loaded

    def rollback(self) -> None:
        self.events.append("rollback")

    def explain(self, error: Exception) -> Exception:
        self.events.append("explain")
        return self.explained if self.explained is not None else error

    def close(self) -> None:
        self.events.append("close")


@pytest.fixture
def database() -> DictDatabase:
    return DictDatabase()


@pytest.fixture
async def writer(database: DictDatabase) -> AsyncIterator[GroupCommitWriter]:
    writer = GroupCommitWriter("dict://test")
    assert writer.claim()
    await writer.start(lambda: (database, Recovery()))
    yield writer
    await writer.stop()


async def hold_the_thread(writer: GroupCommitWriter, database: DictDatabase) -> threading.Event:
    """Occupy the writer thread with a group of its own until the returned event is set."""
    gate = database.gate = threading.Event()
    database.entered.clear()
    writer.write([add(1)])
    assert await asyncio.to_thread(database.entered.wait, 10)
    return gate


async def test_writes_that_arrive_during_a_commit_share_the_next_one(
    writer: GroupCommitWriter, database: DictDatabase
) -> None:
    gate = await hold_the_thread(writer, database)
    queued = [writer.write([add(seq)]) for seq in range(2, 7)]
    queued.append(writer.write([RemoveMessage(QUEUE, 4)]))  # coalesced with its add
    gate.set()
    await asyncio.gather(*queued)
    assert database.groups == [["write [1]"], ["write [2, 3, 5, 6]"]]
    stats = writer.statistics()
    assert (stats.commits, stats.operations, stats.pending_operations) == (2, 7, 0)
    assert stats.total_commit_ms >= stats.last_commit_ms > 0.0


async def test_a_load_sees_the_writes_before_it_and_none_after(
    writer: GroupCommitWriter, database: DictDatabase
) -> None:
    gate = await hold_the_thread(writer, database)
    before = writer.write([add(2)])
    loading = asyncio.ensure_future(writer.load(QUEUE, 0, 10))
    await asyncio.sleep(0)  # the load is queued behind the write
    after = writer.write([add(3)])
    gate.set()
    loaded = await loading
    await asyncio.gather(before, after)
    assert [m.seq for m in loaded] == [1, 2]
    assert database.groups[1] == ["write [2]", "load", "write [3]"]


async def test_loads_alone_do_not_commit(writer: GroupCommitWriter, database: DictDatabase) -> None:
    await writer.write([add(1)])
    await asyncio.gather(*(writer.load(QUEUE, 0, 10) for _ in range(3)))
    assert writer.statistics().commits == 1
    assert await writer.load(QUEUE, 0, 0) == []


async def test_a_failed_group_fails_every_write_in_it_and_breaks_the_writer(
    writer: GroupCommitWriter, database: DictDatabase
) -> None:
    gate = await hold_the_thread(writer, database)
    database.fail_with = OSError("disk on fire")
    group = [writer.write([add(seq)]) for seq in range(2, 5)]
    gate.set()
    results = await asyncio.gather(*group, return_exceptions=True)
    message = f"store database dict://test failed (OSError: disk on fire); {REFUSAL}"
    assert [(type(r), str(r)) for r in results] == [(StoreError, message)] * 3
    assert database.events[-3:] == ["run_group failed", "rollback", "explain"]
    with pytest.raises(StoreError, match="disk on fire"):
        await writer.write([add(9)])
    with pytest.raises(StoreError, match="disk on fire"):
        await writer.load(QUEUE, 0, 10)
    stats = writer.statistics()
    assert (stats.commits, stats.operations, stats.pending_operations) == (1, 1, 0)


@pytest.mark.parametrize(
    ("lost", "message"),
    [
        (
            "broker A no longer holds lock file x",
            f"broker A no longer holds lock file x; {REFUSAL}",
        ),
        (f"lease gone; {REFUSAL}", f"lease gone; {REFUSAL}"),  # said once, not twice
    ],
)
async def test_a_lost_lock_keeps_its_type(
    writer: GroupCommitWriter, database: DictDatabase, lost: str, message: str
) -> None:
    database.fail_with = LockLostError(lost)
    with pytest.raises(LockLostError) as raised:
        await writer.write([add(1)])
    assert str(raised.value) == message
    with pytest.raises(LockLostError) as again:
        await writer.write([add(2)])
    assert str(again.value) == message


async def test_the_database_may_explain_a_failure_as_a_lost_lock(
    writer: GroupCommitWriter, database: DictDatabase
) -> None:
    database.fail_with = ConnectionError("server closed the connection")
    database.explained = LockLostError(f"the lease is held by B; {REFUSAL}")
    with pytest.raises(LockLostError, match="held by B"):
        await writer.write([add(1)])


async def test_stop_lets_queued_writes_finish_then_closes(database: DictDatabase) -> None:
    exits: list[str] = []
    writer = GroupCommitWriter("dict://test")
    assert writer.claim()
    await writer.start(lambda: (database, Recovery()), on_exit=lambda: exits.append("exit"))
    gate = await hold_the_thread(writer, database)
    queued = [writer.write([add(seq)]) for seq in range(2, 5)]
    stopping = asyncio.ensure_future(writer.stop())
    await asyncio.sleep(0.01)
    gate.set()
    await stopping
    assert all(f.done() and f.exception() is None for f in queued)
    assert sorted(database.rows) == [1, 2, 3, 4]
    assert database.events == ["close"]
    assert exits == ["exit"]
    with pytest.raises(StoreError, match=r"store dict://test is not running \(stopped\)"):
        await writer.write([add(5)])
    assert not writer.claim()


async def test_a_cancelled_write_is_still_written(
    writer: GroupCommitWriter, database: DictDatabase
) -> None:
    gate = await hold_the_thread(writer, database)
    cancelled = writer.write([add(2)])
    kept = writer.write([add(3)])
    cancelled.cancel()
    gate.set()
    await kept
    assert sorted(database.rows) == [1, 2, 3]


@pytest.mark.parametrize(
    ("raised", "expected", "message"),
    [
        (StoreBusyError("held by another process"), StoreBusyError, "held by another process"),
        (ValueError("bad schema"), StoreError, "cannot open store database dict://x: bad schema"),
    ],
)
async def test_a_failed_open_fails_start_and_still_runs_on_exit(
    raised: Exception, expected: type[StoreError], message: str
) -> None:
    exits: list[str] = []

    def opener() -> tuple[DictDatabase, Recovery]:
        raise raised

    writer = GroupCommitWriter("dict://x")
    assert writer.claim()
    with pytest.raises(StoreError) as failed:
        await writer.start(opener, on_exit=lambda: exits.append("exit"))
    assert (type(failed.value), str(failed.value)) == (expected, message)
    assert exits == ["exit"]
    with pytest.raises(StoreError, match=r"not running \(stopped\)"):
        await writer.write([add(1)])


async def test_nothing_but_store_operations(writer: GroupCommitWriter) -> None:
    with pytest.raises(TypeError, match="not a store operation"):
        writer.write(["DELETE FROM messages"])  # type: ignore[list-item]
