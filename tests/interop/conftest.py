"""stomp.py (a real third-party client) against a live broker running on its own loop thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import stomp
from ferrymq.core.destination import Destination
from ferrymq.testing import BrokerThread, broker_config, wait_until_blocking

WAIT_S = 5.0


class Collector(stomp.ConnectionListener):  # type: ignore[misc]
    """Records what stomp.py hands its listener, and lets a test wait for it."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.messages: list[Any] = []
        self.receipts: list[str] = []
        self.errors: list[Any] = []
        self.disconnected = False

    def on_message(self, frame: Any) -> None:
        with self.cond:
            self.messages.append(frame)
            self.cond.notify_all()

    def on_receipt(self, frame: Any) -> None:
        with self.cond:
            self.receipts.append(frame.headers["receipt-id"])
            self.cond.notify_all()

    def on_error(self, frame: Any) -> None:
        with self.cond:
            self.errors.append(frame)
            self.cond.notify_all()

    def on_disconnected(self) -> None:
        with self.cond:
            self.disconnected = True
            self.cond.notify_all()

    def wait_for(self, predicate: Callable[[], bool], what: str, timeout: float = WAIT_S) -> None:
        """Until ``predicate`` (read under the listener's lock) holds, woken by each frame."""
        wait_until_blocking(predicate, timeout, what, changed=self.cond, detail=self._errors)

    def wait_messages(self, count: int, timeout: float = WAIT_S) -> list[Any]:
        wait_until_blocking(
            lambda: len(self.messages) >= count,
            timeout,
            f"{count} messages",
            changed=self.cond,
            detail=lambda: f"got {len(self.messages)}: {[m.body for m in self.messages]}",
        )
        return list(self.messages)

    def wait_receipt(self, receipt_id: str, timeout: float = WAIT_S) -> None:
        self.wait_for(lambda: receipt_id in self.receipts, f"RECEIPT {receipt_id}", timeout)

    def _errors(self) -> str:
        return f"errors: {[e.headers for e in self.errors]}"

    def quiet_for(self, seconds: float) -> list[Any]:
        """Messages that arrived within ``seconds`` (used to check that nothing more came)."""
        before = len(self.messages)
        time.sleep(seconds)
        return self.messages[before:]


class Clients:
    """Opens stomp.py connections to the test broker and closes them after the test."""

    def __init__(self, broker: BrokerThread) -> None:
        self.broker = broker
        self.open: list[Any] = []

    def connect(
        self,
        version: str = "1.2",
        *,
        client_id: str | None = None,
        heartbeats: tuple[int, int] = (0, 0),
        auto_decode: bool = True,
    ) -> tuple[Any, Collector]:
        factory = {"1.0": stomp.Connection10, "1.1": stomp.Connection11, "1.2": stomp.Connection12}
        kwargs: dict[str, Any] = {"auto_decode": auto_decode}
        if version != "1.0":
            kwargs["heartbeats"] = heartbeats
        conn = factory[version]([("127.0.0.1", self.broker.port)], **kwargs)
        listener = Collector()
        conn.set_listener("collector", listener)
        headers = {"client-id": client_id} if client_id else {}
        conn.connect(wait=True, headers=headers)
        self.open.append(conn)
        return conn, listener

    def depth(self, queue: str) -> int:
        def read() -> int:
            assert self.broker.broker is not None
            container = self.broker.broker.service.region.queues.get(Destination.queue(queue))
            return 0 if container is None else container.depth

        return self.broker.call(read)

    def close_all(self) -> None:
        for conn in self.open:
            if conn.is_connected():
                conn.disconnect()


@pytest.fixture
def broker_thread(tmp_path: Path) -> Iterator[BrokerThread]:
    with BrokerThread(broker_config(tmp_path / "data")) as thread:
        yield thread


@pytest.fixture
def clients(broker_thread: BrokerThread) -> Iterator[Clients]:
    opened = Clients(broker_thread)
    try:
        yield opened
    finally:
        opened.close_all()
