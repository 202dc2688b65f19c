"""A stomp.py producer of numbered persistent messages that re-sends what was never receipted."""

from __future__ import annotations

import contextlib
import time
import uuid
from typing import Any

from stomp.exception import StompException

from .peers import PRODUCER_MESSAGE_ID, Peer

WINDOW = 256
"""Sends in flight without a receipt; keeps the producer from racing far ahead of the store."""


class Producer(Peer):
    """Sends ``seq`` 0..total-1 to one destination, each persistent and with a receipt.

    A receipt means "durable" (DESIGN.md "Durability contract").  A send without a receipt when
    the connection drops may or may not be stored, so the producer re-sends it after it
    reconnects, under the same ``ferrymq.producer-message-id``: the broker's duplicate detection
    stores it once.
    """

    def __init__(
        self,
        port: int,
        destination: str,
        *,
        name: str = "producer",
        heartbeats: tuple[int, int] = (0, 0),
    ) -> None:
        super().__init__(name, port, heartbeats=heartbeats)
        self.destination = destination
        self.run_id = uuid.uuid4().hex[:12]
        self.sent: set[int] = set()
        self.unconfirmed: dict[int, None] = {}
        """Seqs sent (on any connection) without a receipt yet, in send order."""
        self.receipted: set[int] = set()
        self.sentinels: set[str] = set()
        self.send_frames = 0
        self.resends = 0
        self.next_seq = 0

    def receipt(self, receipt_id: str) -> None:
        with self.cond:
            kind, _, value = receipt_id.partition("-")
            if kind == "seq":
                seq = int(value)
                self.receipted.add(seq)
                self.unconfirmed.pop(seq, None)
            elif kind == "sentinel":
                self.sentinels.add(value)
            self.cond.notify_all()

    def receipted_count(self) -> int:
        with self.cond:
            return len(self.receipted)

    def opened(self, conn: Any, deadline: float) -> None:
        with self.cond:
            again = list(self.unconfirmed)
        for seq in again:
            self._send(conn, seq)
            self.resends += 1

    def _send(self, conn: Any, seq: int) -> None:
        with self.cond:
            self.sent.add(seq)
            self.unconfirmed[seq] = None
            self.send_frames += 1
        conn.send(
            self.destination,
            body=f"message {seq}",
            headers={
                "persistent": "true",
                "seq": str(seq),
                PRODUCER_MESSAGE_ID: f"{self.run_id}-{seq}",
            },
            receipt=f"seq-{seq}",
        )

    def run(self, total: int, deadline: float) -> None:
        """Send on until every seq below ``total`` is receipted, reconnecting when needed."""

        def may_send() -> bool:
            if not self.connected:
                return True
            if self.next_seq < total:
                return len(self.unconfirmed) < WINDOW
            return not self.unconfirmed

        while True:
            with self.cond:
                if self.next_seq >= total and not self.unconfirmed:
                    return
            if not self.is_connected():
                self.open(deadline)
                continue
            self.wait_for(may_send, deadline, f"receipts ({len(self.receipted)} so far)")
            if not self.is_connected() or self.next_seq >= total:
                continue
            # On failure it stays unconfirmed and is re-sent after the reconnect.
            with contextlib.suppress(StompException, OSError):
                self._send(self.conn, self.next_seq)
            self.next_seq += 1

    def send_sentinel(self, name: str, deadline: float) -> None:
        """A persistent marker after everything else: when it arrives, the backlog is drained."""
        while name not in self.sentinels:
            if time.monotonic() > deadline:
                raise AssertionError(f"no receipt for sentinel {name} before the deadline")
            if not self.is_connected():
                self.open(deadline)
            try:
                self.conn.send(
                    self.destination,
                    body=f"sentinel {name}",
                    headers={
                        "persistent": "true",
                        "sentinel": name,
                        PRODUCER_MESSAGE_ID: f"{self.run_id}-sentinel-{name}",
                    },
                    receipt=f"sentinel-{name}",
                )
            except (StompException, OSError):
                self.wait_disconnected(deadline)
                continue
            self.wait_for(
                lambda: name in self.sentinels or not self.connected,
                deadline,
                f"the receipt for sentinel {name}",
            )

    def summary(self) -> str:
        with self.cond:
            return (
                f"sent={len(self.sent)} send_frames={self.send_frames} resends={self.resends} "
                f"receipted={len(self.receipted)} connections={self.connections}"
            )

    def wait_receipted(self, count: int, deadline: float) -> None:
        self.wait_for(lambda: len(self.receipted) >= count, deadline, f"{count} receipts")
