"""AMQP 1.0 clients for the fault tests: python-qpid-proton's Container, run on a thread.

``ProducerRun`` sends numbered durable messages at-least-once and records which the broker
accepted; after a disconnect it can resend what was never accepted (a client's own
at-least-once across failover). ``drain_queue`` takes everything a queue holds, with each
message's id and delivery-count. Every run is bounded in count and time.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from proton import Message
from proton.handlers import MessagingHandler
from proton.reactor import Container
from proton.utils import BlockingConnection

RUN_LIMIT_S = 60.0


class ProducerRun(MessagingHandler):
    """Sends ``count`` durable messages to ``address`` over ``urls`` (failover when several)."""

    def __init__(self, urls: list[str], address: str, count: int, *, resend: bool) -> None:
        super().__init__()
        self.urls = urls
        self.address = address
        self.count = count
        self.resend = resend
        self.accepted: set[str] = set()
        self.resent: set[str] = set()
        self.disconnects = 0
        self._next = 0
        self._unsettled: dict[object, str] = {}
        self._retry: list[str] = []
        self._container: Container | None = None
        self.done = threading.Event()

    def on_start(self, event: object) -> None:
        container = event.container  # type: ignore[attr-defined]
        self._container = container
        connection = container.connect(urls=self.urls, reconnect=None if self.resend else False)
        container.create_sender(connection, self.address)

    def on_sendable(self, event: object) -> None:
        sender = event.sender  # type: ignore[attr-defined]
        while sender.credit and (self._retry or self._next < self.count):
            if self._retry:
                message_id = self._retry.pop()
                self.resent.add(message_id)
            else:
                message_id = f"m{self._next}"
                self._next += 1
            delivery = sender.send(Message(id=message_id, body=message_id, durable=True))
            self._unsettled[delivery.tag] = message_id

    def on_accepted(self, event: object) -> None:
        tag = event.delivery.tag  # type: ignore[attr-defined]
        message_id = self._unsettled.pop(tag, None)
        if message_id is not None:
            self.accepted.add(message_id)
        if len(self.accepted) >= self.count:
            event.connection.close()  # type: ignore[attr-defined]
            self.done.set()

    def on_disconnected(self, event: object) -> None:
        self.disconnects += 1
        if self.resend:
            self._retry.extend(self._unsettled.values())
            self._unsettled.clear()
        elif self._container is not None:
            self._container.stop()

    def run_in_thread(self) -> tuple[Container, threading.Thread]:
        container = Container(self)
        thread = threading.Thread(target=container.run, daemon=True)
        thread.start()
        return container, thread


@dataclass
class Drained:
    ids: list[str] = field(default_factory=list)
    delivery_counts: dict[str, list[int]] = field(default_factory=dict)


def drain_queue(url: str, address: str, *, idle_s: float = 2.0, limit: int = 100_000) -> Drained:
    """Receive and accept until nothing comes for ``idle_s``."""
    drained = Drained()
    connection = BlockingConnection(url, timeout=10)
    try:
        receiver = connection.create_receiver(address, credit=500)
        for _ in range(limit):
            try:
                message = receiver.receive(timeout=idle_s)
            except Exception:  # proton's Timeout: the queue is empty
                break
            message_id = str(message.id)
            drained.ids.append(message_id)
            drained.delivery_counts.setdefault(message_id, []).append(message.delivery_count)
            receiver.accept()
    finally:
        connection.close()
    return drained
