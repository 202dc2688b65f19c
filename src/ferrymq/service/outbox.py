"""The ordered outbox of one connection: frames leave in order, and none before its commit.

Every protocol needs it the same way.  A confirmation that depends on the store (a receipt for a
persistent send, a persistent message the store must first mark as delivered) waits at the head
of the outbox until the store write it depends on is durable, and everything queued behind it
waits too, so a client never sees frame B before frame A.  What goes out is opaque bytes: the
protocol adapter rendered them.  Nothing here blocks or owns a task: waiting is a done-callback
on the commit's future.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Protocol

from ferrymq.core.effects import Delivery

_Item = tuple["asyncio.Future[None] | None", bytes, "Delivery | None", bool]
"""(commit to wait for, frame, auto-ack delivery, is a message)"""


class OutboxOwner(Protocol):
    """The connection an outbox writes for."""

    def write_frame(self, data: bytes, auto: Delivery | None) -> None:
        """Put ``data`` on the socket now; ``auto`` is acknowledged once written."""

    def store_failed(self) -> None:
        """A frame waited on a write that failed: nothing behind it may leave."""

    def outbox_drained(self) -> None:
        """A commit let everything out (a connection ending may now close its socket)."""

    def commit_settled(self) -> None:
        """A commit the head of the outbox waited on completed (the service runs a pass)."""


class Outbox:
    """Frames of one connection, each optionally waiting on a store commit."""

    __slots__ = ("_armed", "_items", "_owner", "closed")

    def __init__(self, owner: OutboxOwner) -> None:
        self._owner = owner
        self._items: deque[_Item] = deque()
        self._armed: asyncio.Future[None] | None = None
        self.closed = False
        """Nothing more is written (the socket is gone or going)."""

    def __len__(self) -> int:
        return len(self._items)

    def put(
        self,
        data: bytes,
        wait: asyncio.Future[None] | None,
        auto: Delivery | None = None,
        *,
        message: bool = False,
    ) -> None:
        """Queue ``data`` behind everything queued before; it leaves once ``wait`` is done.

        A frame with nothing to wait for and nothing ahead of it is written at once.  A failed
        ``wait`` is kept: reaching it closes the connection instead of writing.
        """
        if self.closed:
            return
        if wait is not None and wait.done():
            wait = None if not wait.cancelled() and wait.exception() is None else wait
        if not self._items and wait is None:
            self._owner.write_frame(data, auto)
            return
        self._items.append((wait, data, auto, message))
        self._arm()

    def drop_messages(self) -> None:
        """Messages not yet written will not be (their deliveries were released)."""
        self._items = deque(item for item in self._items if not item[3])

    def clear(self) -> None:
        """The socket is gone: forget everything, write nothing more."""
        self.closed = True
        self._items.clear()

    def _arm(self) -> None:
        if not self._items:
            return
        head_wait = self._items[0][0]
        if head_wait is not None and self._armed is not head_wait:
            # A wait that is already done (a failed commit) gets its callback on the next loop
            # turn, so the connection learns of the failure without anyone else's commit.
            self._armed = head_wait
            head_wait.add_done_callback(self._on_commit)

    def _on_commit(self, future: asyncio.Future[None]) -> None:
        self._armed = None
        if self.closed:
            return
        self._drain()
        self._owner.commit_settled()

    def _drain(self) -> None:
        items = self._items
        owner = self._owner
        while items:
            wait, data, auto, _ = items[0]
            if wait is not None:
                if not wait.done():
                    self._arm()
                    return
                if wait.cancelled() or wait.exception() is not None:
                    owner.store_failed()
                    return
            items.popleft()
            owner.write_frame(data, auto)
        owner.outbox_drained()
