"""Well-behaved stomp.py clients: one that stays connected while others throw garbage at the
broker, and the helpers that store and read back the messages that must survive it.

Every wait has a deadline: stomp.py's own ``connect(wait=True)`` and ``disconnect(receipt=...)``
would wait for ever on a broker that never answers.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

import stomp
from ferrymq.testing import wait_until_blocking

WAIT_S = 10.0


class Collector:
    """stomp.py listener that keeps what arrived, and waits on it with a deadline."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.connected = False
        self.disconnected = False
        self.receipts: set[str] = set()
        self.messages: list[tuple[dict[str, str], str]] = []
        self.errors: list[dict[str, str]] = []

    def on_connected(self, frame: Any) -> None:
        with self.cond:
            self.connected = True
            self.cond.notify_all()

    def on_disconnected(self) -> None:
        with self.cond:
            self.disconnected = True
            self.cond.notify_all()

    def on_receipt(self, frame: Any) -> None:
        with self.cond:
            self.receipts.add(frame.headers["receipt-id"])
            self.cond.notify_all()

    def on_message(self, frame: Any) -> None:
        with self.cond:
            self.messages.append((dict(frame.headers), frame.body))
            self.cond.notify_all()

    def on_error(self, frame: Any) -> None:
        with self.cond:
            self.errors.append(dict(frame.headers))
            self.cond.notify_all()

    def wait(self, predicate: Callable[[], bool], what: str, timeout_s: float = WAIT_S) -> None:
        """Until ``predicate`` holds; an ERROR frame or a disconnect fails at once."""

        def done() -> bool:
            if predicate():
                return True
            assert not self.errors, f"ERROR while waiting for {what}: {self.errors}"
            assert not self.disconnected, f"disconnected while waiting for {what}"
            return False

        wait_until_blocking(done, timeout_s, what, changed=self.cond)


def connect(
    port: int, collector: Collector, login: str | None = None, passcode: str | None = None
) -> Any:
    conn = stomp.Connection12([("127.0.0.1", port)])
    conn.set_listener("collector", collector)
    conn.connect(login, passcode, wait=False, with_connect_command=True)
    collector.wait(lambda: collector.connected, "CONNECTED")
    return conn


def disconnect(conn: Any, collector: Collector) -> None:
    conn.send_frame("DISCONNECT", {"receipt": "bye"})
    collector.wait(lambda: "bye" in collector.receipts, "the DISCONNECT receipt")
    with contextlib.suppress(Exception):
        conn.transport.disconnect_socket()


class Canary:
    """Subscribed to its own queue; ``round_trip`` sends one message and waits to receive it."""

    def __init__(
        self,
        port: int,
        destination: str = "/queue/fuzz.canary",
        *,
        login: str | None = None,
        passcode: str | None = None,
    ) -> None:
        self.port = port
        self.login = login
        self.passcode = passcode
        self.destination = destination
        self.listener = Collector()
        self.conn: Any = None
        self.trips = 0

    def start(self) -> Canary:
        listener = self.listener
        self.conn = connect(self.port, listener, self.login, self.passcode)
        self.conn.subscribe(self.destination, id="canary", ack="auto", receipt="canary-sub")
        listener.wait(lambda: "canary-sub" in listener.receipts, "SUBSCRIBE receipt")
        return self

    def round_trip(self) -> None:
        """Fails if the canary was disconnected, got an ERROR, or its message did not come back."""
        self.trips += 1
        body = f"canary {self.trips}"
        self.conn.send(self.destination, body=body, receipt=f"trip-{self.trips}")
        listener = self.listener
        listener.wait(lambda: any(b == body for _, b in listener.messages), f"round trip {body}")

    def stop(self) -> None:
        disconnect(self.conn, self.listener)
