"""The master's end of pure master/slave replication (seed 002, "Pure Master/Slave").

A slave connects to one of the master's STOMP listeners with ``ferrymq.replication:true`` on
its CONNECT.  From then on the master sends it, as MESSAGE frames on the reserved subscription
``ferrymq.replication``, every batch of store operations its own store applies (body: the
``store.oplog`` encoding; header ``ferrymq.batch``), and the slave answers each with an ACK once
the batch is durable in its own store.  A write's future (which receipts, commits and
persistent deliveries wait on) completes only when both stores have it: "the master will
respond to a client only after a message exchange has been successfully passed to the slave".

When a slave attaches, it first gets a snapshot: a reset (it empties its store), then every
destination, durable subscription, stored message and the duplicate-detection window, then the
batches written meanwhile, which were held back until the snapshot was out (replaying a batch
the snapshot already reflects leaves the same rows).  Only one slave may be attached.  If it is
lost, the master goes on alone (or stops, with ``shutdownOnSlaveFailure``); a re-attaching
slave gets a full snapshot again.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import deque
from collections.abc import Callable, Sequence

from ferrymq.store.base import StoreOp
from ferrymq.store.oplog import encode_ops

log = logging.getLogger(__name__)


class ReplicaLink:
    """One attached slave: numbered batches out, acknowledgements back."""

    def __init__(self, name: str, send_batch: Callable[[int, bytes, bool], None]) -> None:
        self.name = name
        self._send_batch = send_batch
        self._numbers = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[None]] = {}
        self._held: deque[tuple[int, bytes]] | None = deque()
        """Batches written while the snapshot is being sent, sent after it; None once live."""
        self.closed = False
        self.batches_acknowledged = 0

    @property
    def live(self) -> bool:
        return self._held is None

    def replicate(self, ops: Sequence[StoreOp]) -> asyncio.Future[None]:
        """Send a batch the master's store is writing; done when the slave has it durably."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self.closed:
            future.set_result(None)  # the master goes on alone
            return future
        number = next(self._numbers)
        self._waiting[number] = future
        data = encode_ops(ops)
        if self._held is not None:
            self._held.append((number, data))
        else:
            self._send_batch(number, data, False)
        return future

    def send_snapshot(self, batches: Sequence[Sequence[StoreOp]]) -> asyncio.Future[None]:
        """The snapshot, first batch resetting the slave's store; done when all are durable."""
        futures: list[asyncio.Future[None]] = []
        for index, ops in enumerate(batches):
            number = next(self._numbers)
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiting[number] = future
            futures.append(future)
            self._send_batch(number, encode_ops(ops), index == 0)
        return _all_done(futures)

    def go_live(self) -> None:
        """The snapshot is out: send what was held back, in order, and stop holding."""
        held, self._held = self._held, None
        for number, data in held or ():
            self._send_batch(number, data, False)

    def acknowledged(self, number: int) -> None:
        future = self._waiting.pop(number, None)
        if future is not None and not future.done():
            future.set_result(None)
            self.batches_acknowledged += 1

    def close(self) -> None:
        """The slave is gone: nothing waits for it any more."""
        self.closed = True
        waiting, self._waiting = self._waiting, {}
        for future in waiting.values():
            if not future.done():
                future.set_result(None)


def _all_done(futures: list[asyncio.Future[None]]) -> asyncio.Future[None]:
    result: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    remaining = len(futures)
    if not remaining:
        result.set_result(None)
        return result

    def one_done(_: asyncio.Future[None]) -> None:
        nonlocal remaining
        remaining -= 1
        if remaining == 0 and not result.done():
            result.set_result(None)

    for future in futures:
        future.add_done_callback(one_done)
    return result
