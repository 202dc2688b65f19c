"""The ordered outbox, alone: plain futures stand for store commits, a list for the socket.

The durability promise rests on this: a confirmation that waits on a commit holds back every
frame queued after it, nothing leaves before its commit, and a failed commit lets nothing behind
it out.
"""

from __future__ import annotations

import asyncio

import pytest

from ferrymq.core.effects import Delivery
from ferrymq.service.outbox import Outbox


class Socket:
    """The outbox's owner: records what was written and what it was told."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []
        self.autos: list[Delivery | None] = []
        self.failed = 0
        self.drained = 0
        self.settled = 0

    def write_frame(self, data: bytes, auto: Delivery | None) -> None:
        self.frames.append(data)
        self.autos.append(auto)

    def store_failed(self) -> None:
        self.failed += 1

    def outbox_drained(self) -> None:
        self.drained += 1

    def commit_settled(self) -> None:
        self.settled += 1


@pytest.fixture
def socket() -> Socket:
    return Socket()


async def settle() -> None:
    """Let the done-callbacks of completed futures run."""
    for _ in range(3):
        await asyncio.sleep(0)


async def test_a_frame_with_nothing_to_wait_for_leaves_at_once(socket: Socket) -> None:
    outbox = Outbox(socket)
    outbox.put(b"A", None)
    assert socket.frames == [b"A"]
    assert len(outbox) == 0


async def test_a_frame_waits_for_its_commit_and_holds_back_what_follows(socket: Socket) -> None:
    commit: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    outbox = Outbox(socket)
    outbox.put(b"RECEIPT", commit)
    outbox.put(b"MESSAGE", None)
    await settle()
    assert socket.frames == []
    assert len(outbox) == 2
    commit.set_result(None)
    await settle()
    assert socket.frames == [b"RECEIPT", b"MESSAGE"]
    assert (socket.drained, socket.settled) == (1, 1)


async def test_frames_leave_in_order_across_several_commits(socket: Socket) -> None:
    loop = asyncio.get_running_loop()
    first: asyncio.Future[None] = loop.create_future()
    second: asyncio.Future[None] = loop.create_future()
    outbox = Outbox(socket)
    outbox.put(b"1", first)
    outbox.put(b"2", None)
    outbox.put(b"3", second)
    outbox.put(b"4", None)
    second.set_result(None)  # the later commit completes first: order still holds
    await settle()
    assert socket.frames == []
    first.set_result(None)
    await settle()
    assert socket.frames == [b"1", b"2", b"3", b"4"]


async def test_a_commit_already_done_does_not_wait(socket: Socket) -> None:
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    done.set_result(None)
    Outbox(socket).put(b"A", done)
    assert socket.frames == [b"A"]


async def test_a_failed_commit_lets_nothing_out_and_reports_it(socket: Socket) -> None:
    loop = asyncio.get_running_loop()
    commit: asyncio.Future[None] = loop.create_future()
    outbox = Outbox(socket)
    outbox.put(b"RECEIPT", commit)
    outbox.put(b"MESSAGE", None)
    commit.set_exception(OSError("disk gone"))
    await settle()
    assert socket.frames == []
    assert socket.failed == 1


async def test_a_frame_queued_on_an_already_failed_commit_is_not_written(socket: Socket) -> None:
    failed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    failed.set_exception(OSError("lock lost"))
    failed.exception()
    outbox = Outbox(socket)
    outbox.put(b"RECEIPT", failed)
    await settle()
    assert socket.frames == []
    assert socket.failed == 1


async def test_a_cancelled_commit_counts_as_failed(socket: Socket) -> None:
    commit: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    outbox = Outbox(socket)
    outbox.put(b"RECEIPT", commit)
    commit.cancel()
    await settle()
    assert socket.frames == []
    assert socket.failed == 1


async def test_dropping_messages_keeps_the_other_frames(socket: Socket) -> None:
    commit: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    outbox = Outbox(socket)
    outbox.put(b"MESSAGE-1", commit, message=True)
    outbox.put(b"RECEIPT", None)
    outbox.put(b"MESSAGE-2", None, message=True)
    outbox.drop_messages()
    commit.set_result(None)
    await settle()
    assert socket.frames == [b"RECEIPT"]


async def test_a_cleared_outbox_writes_nothing_more(socket: Socket) -> None:
    commit: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    outbox = Outbox(socket)
    outbox.put(b"RECEIPT", commit)
    outbox.clear()
    commit.set_result(None)
    outbox.put(b"LATE", None)
    await settle()
    assert socket.frames == []
    assert socket.settled == 0


async def test_the_auto_ack_delivery_travels_with_its_frame(socket: Socket) -> None:
    commit: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    outbox = Outbox(socket)
    marker = object()
    outbox.put(b"MESSAGE", commit, marker, message=True)  # type: ignore[arg-type]
    commit.set_result(None)
    await settle()
    assert socket.autos == [marker]
