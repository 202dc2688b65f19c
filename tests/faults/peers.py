"""stomp.py producers and consumers that outlive their broker: they reconnect after a kill.

The broker under test is a real ``ferrymq broker`` process; the clients are stomp.py (a real
third-party client), driven the way a careful application drives it.  stomp.py does not re-open a
dead connection, re-subscribe or re-send, so each peer does that itself: a new
``stomp.Connection12`` per attempt, a bounded wait for CONNECTED, and a hook that restores what
the connection carried (the subscription; the sends still waiting for a receipt).

Every wait is bounded by a deadline and wakes on a condition, never on a fixed sleep.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stomp.exception import StompException

import stomp
from ferrymq.testing import wait_until_blocking

CONNECT_TIMEOUT_S = 2.0
"""How long one attempt waits for CONNECTED (a paused broker accepts TCP but never answers)."""
RETRY_INTERVAL_S = 0.05
PRODUCER_MESSAGE_ID = "ferrymq.producer-message-id"
"""FerryMQ's duplicate detection key: a re-sent message with the same id is stored once."""


class Link:
    """The stomp.py listener of one connection attempt; tells its peer which attempt spoke."""

    def __init__(self, peer: Peer, generation: int) -> None:
        self.peer = peer
        self.generation = generation

    def on_connected(self, frame: Any) -> None:
        self.peer.link_connected(self.generation)

    def on_disconnected(self) -> None:
        self.peer.link_lost(self.generation)

    def on_heartbeat_timeout(self) -> None:
        self.peer.heartbeat_timed_out(self.generation)

    def on_message(self, frame: Any) -> None:
        self.peer.message(self.generation, dict(frame.headers), frame.body)

    def on_receipt(self, frame: Any) -> None:
        receipt_id = frame.headers["receipt-id"]
        if receipt_id.startswith("bye-"):
            self.peer.bye(receipt_id)
        else:
            self.peer.receipt(receipt_id)

    def on_error(self, frame: Any) -> None:
        self.peer.error(dict(frame.headers), frame.body)


class Peer:
    """One logical client: the current stomp.py connection and what it saw."""

    def __init__(
        self,
        name: str,
        port: int,
        *,
        client_id: str | None = None,
        heartbeats: tuple[int, int] = (0, 0),
    ) -> None:
        self.name = name
        self.port = port
        self.client_id = client_id
        self.heartbeats = heartbeats
        self.cond = threading.Condition()
        self.conn: Any = None
        self.generation = 0
        self.connected = False
        self.connections = 0
        """CONNECTED frames received over the peer's life (1 + reconnections)."""
        self.heartbeat_timeouts = 0
        self.errors: list[tuple[dict[str, str], str]] = []
        self.byes: set[str] = set()

    # -- stomp.py callbacks (receiver and heart-beat threads) --------------------------------

    def link_connected(self, generation: int) -> None:
        with self.cond:
            if generation == self.generation:
                self.connected = True
                self.connections += 1
            self.cond.notify_all()

    def link_lost(self, generation: int) -> None:
        with self.cond:
            if generation == self.generation:
                self.connected = False
            self.cond.notify_all()

    def heartbeat_timed_out(self, generation: int) -> None:
        with self.cond:
            self.heartbeat_timeouts += 1
            if generation == self.generation:
                self.connected = False
            self.cond.notify_all()

    def message(self, generation: int, headers: dict[str, str], body: str) -> None:
        """A peer that never subscribed got a MESSAGE: recorded as a fault (see ``errors``)."""
        self.error({"unexpected": "MESSAGE", **headers}, body)

    def receipt(self, receipt_id: str) -> None:
        with self.cond:
            self.cond.notify_all()

    def bye(self, receipt_id: str) -> None:
        with self.cond:
            self.byes.add(receipt_id)
            self.cond.notify_all()

    def error(self, headers: dict[str, str], body: str) -> None:
        with self.cond:
            self.errors.append((headers, body))
            self.cond.notify_all()

    # -- connection management (the test's threads) -----------------------------------------

    def wait_for(self, predicate: Callable[[], bool], deadline: float, what: str) -> None:
        """Wait until ``predicate()`` (checked under the lock) holds, or fail at ``deadline``
        (``time.monotonic()``)."""
        timeout_s = max(0.0, deadline - time.monotonic())
        wait_until_blocking(predicate, timeout_s, f"{self.name}: {what}", changed=self.cond)

    def open(self, deadline: float) -> None:
        """Connect (again), retrying until ``deadline``; then restore the session (``opened``)."""
        while True:
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name}: could not reconnect before the deadline")
            with self.cond:
                self.generation += 1
                generation = self.generation
                self.connected = False
            conn = stomp.Connection12(
                [("127.0.0.1", self.port)],
                heartbeats=self.heartbeats,
                reconnect_attempts_max=1,
                reconnect_sleep_initial=RETRY_INTERVAL_S,
            )
            conn.set_listener("peer", Link(self, generation))
            headers = {} if self.client_id is None else {"client-id": self.client_id}
            try:
                conn.connect(wait=False, headers=headers, with_connect_command=True)
            except (StompException, OSError):
                self._discard(conn)
                self._pause(deadline)
                continue
            attempt_deadline = min(deadline, time.monotonic() + CONNECT_TIMEOUT_S)
            with self.cond:
                while not self.connected and time.monotonic() < attempt_deadline:
                    self.cond.wait(0.05)
                up = self.connected and generation == self.generation
            if not up:
                self._discard(conn)
                continue
            self.conn = conn
            try:
                self.opened(conn, deadline)
            except (StompException, OSError):
                self._discard(conn)  # died again while restoring: next attempt
                continue
            return

    def opened(self, conn: Any, deadline: float) -> None:
        """Restore what this peer's connection carries (subscription, pending sends)."""

    def is_connected(self) -> bool:
        with self.cond:
            return self.connected

    def wait_disconnected(self, deadline: float) -> None:
        self.wait_for(lambda: not self.connected, deadline, "the connection to drop")

    def close(self, timeout_s: float = 5.0) -> None:
        """DISCONNECT and wait for its receipt; frames still in flight are no longer ours."""
        with self.cond:
            conn, connected = self.conn, self.connected
            self.generation += 1
            self.connected = False
        if conn is None:
            return
        if connected:
            receipt = f"bye-{uuid.uuid4().hex[:8]}"
            try:
                conn.send_frame("DISCONNECT", {"receipt": receipt})
            except (StompException, OSError):
                pass  # died first: nothing to wait for
            else:
                self.wait_for(
                    lambda: receipt in self.byes,
                    time.monotonic() + timeout_s,
                    "the RECEIPT for DISCONNECT",
                )
        self._discard(conn)

    def _discard(self, conn: Any) -> None:
        with contextlib.suppress(Exception):
            conn.transport.disconnect_socket()

    def _pause(self, deadline: float) -> None:
        with self.cond:
            self.cond.wait(max(0.0, min(RETRY_INTERVAL_S, deadline - time.monotonic())))


@dataclass(frozen=True, slots=True)
class Delivery:
    """One MESSAGE frame as the consumer saw it."""

    ordinal: int
    seq: int | None
    """The producer's ``seq`` header; None for a message this test never produced."""
    message_id: str
    redelivered: bool
    sentinel: str | None
    body: str
    generation: int
