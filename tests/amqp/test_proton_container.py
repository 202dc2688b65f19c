"""python-qpid-proton's Container and MessagingHandler API against FerryMQ's AMQP listener:
send and receive, local transactions through the coordinator (declare, transactional state on
transfers and on dispositions, discharge to commit or roll back), and heart-beats."""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any

from proton import Connection, Message, Transport
from proton.handlers import MessagingHandler, TransactionHandler
from proton.reactor import AtLeastOnce
from proton.utils import BlockingConnection

from tests.amqp.proton_support import amqp_broker, blocking, close_link, run_container, url


class SendThenReceive(MessagingHandler):
    """Sends ``count`` durable messages, waits for every accept, then takes them back."""

    def __init__(self, address: str, count: int) -> None:
        super().__init__(prefetch=10, auto_accept=True)
        self.address, self.count = address, count
        self.accepted = 0
        self.received: list[Any] = []

    def on_start(self, event: Any) -> None:
        self.connection = event.container.connect(self.address, reconnect=False)
        event.container.create_sender(self.connection, "queue://container", options=AtLeastOnce())

    def on_sendable(self, event: Any) -> None:
        sender = event.sender
        while sender.credit and self.sent < self.count:
            sender.send(Message(body=f"c{self.sent}", durable=True, id=f"id-{self.sent}"))
            self.sent += 1

    sent = 0

    def on_accepted(self, event: Any) -> None:
        self.accepted += 1
        if self.accepted == self.count:
            event.sender.close()
            event.container.create_receiver(self.connection, "queue://container")

    def on_message(self, event: Any) -> None:
        self.received.append((event.message.id, event.message.body))
        if len(self.received) == self.count:
            self.connection.close()


def test_the_container_api_sends_and_receives(tmp_path: Path) -> None:
    with amqp_broker(tmp_path) as served:
        handler = SendThenReceive(url(served), 50)
        run_container(handler)
        with blocking(url(served)) as check:
            left = check.create_receiver("queue://container", credit=1)
            assert left.link.queued == 0
    assert handler.received == [(f"id-{n}", f"c{n}") for n in range(50)]


class Transactional(MessagingHandler, TransactionHandler):
    """In one transaction: send two messages and accept one received message; then commit or
    roll back (``commit``)."""

    def __init__(self, address: str, *, commit: bool) -> None:
        super().__init__(prefetch=0, auto_accept=False)
        self.address, self.commit = address, commit
        self.outcome: str | None = None
        self.consumed: Any = None

    def on_start(self, event: Any) -> None:
        container = event.container
        self.connection = container.connect(self.address, reconnect=False)
        self.sender = container.create_sender(self.connection, "queue://tx.out")
        self.receiver = container.create_receiver(self.connection, "queue://tx.in")
        self.receiver.flow(1)
        self.container = container

    def on_message(self, event: Any) -> None:
        self.consumed = event.message.body
        self.delivery = event.delivery
        self.container.declare_transaction(self.connection, handler=self)

    def on_transaction_declared(self, event: Any) -> None:
        transaction = event.transaction
        transaction.send(self.sender, Message(body="tx-1", durable=True))
        transaction.send(self.sender, Message(body="tx-2", durable=True))
        transaction.accept(self.delivery)  # the disposition carries the transactional state
        if self.commit:
            transaction.commit()
        else:
            transaction.abort()

    def on_transaction_committed(self, event: Any) -> None:
        self.outcome = "committed"
        self.connection.close()

    def on_transaction_aborted(self, event: Any) -> None:
        self.outcome = "aborted"
        self.connection.close()

    def on_transaction_declare_failed(self, event: Any) -> None:
        self.outcome = "declare failed"
        self.connection.close()


def _drain(connection: BlockingConnection, address: str) -> list[object]:
    receiver = connection.create_receiver(address, credit=10)
    got: list[object] = []
    for _ in range(10):
        try:
            got.append(receiver.receive(timeout=1).body)
        except Exception:
            break
        receiver.accept()
    close_link(receiver)
    return got


def test_a_committed_transaction_sends_and_consumes(tmp_path: Path) -> None:
    with amqp_broker(tmp_path) as served:
        with blocking(url(served)) as setup:
            setup.create_sender("queue://tx.in").send(Message(body="input", durable=True))
        handler = Transactional(url(served), commit=True)
        run_container(handler)
        with blocking(url(served)) as check:
            out, left = _drain(check, "queue://tx.out"), _drain(check, "queue://tx.in")
    assert (handler.outcome, handler.consumed) == ("committed", "input")
    assert out == ["tx-1", "tx-2"]
    assert left == []


def test_a_rolled_back_transaction_sends_nothing_and_gives_the_message_back(
    tmp_path: Path,
) -> None:
    with amqp_broker(tmp_path) as served:
        with blocking(url(served)) as setup:
            setup.create_sender("queue://tx.in").send(Message(body="input", durable=True))
        handler = Transactional(url(served), commit=False)
        run_container(handler)
        with blocking(url(served)) as check:
            out, left = _drain(check, "queue://tx.out"), _drain(check, "queue://tx.in")
    assert (handler.outcome, handler.consumed) == ("aborted", "input")
    assert out == []
    assert left == ["input"]


def _silent_client(port: int) -> socket.socket:
    """An AMQP client (proton's engine over a plain socket) that opens its connection and then
    sends nothing at all, heart-beats included."""
    transport = Transport()
    connection = Connection()
    connection.container = "silent"
    transport.bind(connection)
    connection.open()
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(transport.peek(transport.pending()) or b"")
    return sock


def test_the_broker_closes_a_client_that_stops_sending_and_keeps_one_that_beats(
    tmp_path: Path,
) -> None:
    with amqp_broker(tmp_path, "wireFormat.idleTimeout=1000") as served:
        started = time.monotonic()
        silent = _silent_client(served.amqp_port)
        with blocking(url(served)) as beating:
            closed_after = None
            silent.settimeout(0.2)
            while time.monotonic() - started < 10:
                beating.container.process()  # proton sends its heart-beats while it runs
                try:
                    if silent.recv(65536) == b"":
                        closed_after = time.monotonic() - started
                        break
                except TimeoutError:
                    continue
            # The beating client was idle (no messages) just as long, and is still served.
            sender = beating.create_sender("queue://alive")
            sender.send(Message(body="still here"))
            received = beating.create_receiver("queue://alive").receive(timeout=10)
        silent.close()
    assert closed_after is not None, "the silent client was never closed"
    assert 0.9 < closed_after < 6  # the broker's idle timeout is 1 s
    assert received.body == "still here"
