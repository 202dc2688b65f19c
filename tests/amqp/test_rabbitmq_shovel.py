"""RabbitMQ's shovel as a third-party AMQP 1.0 client: a dynamic shovel with an ``amqp10``
source takes messages from a FerryMQ queue into a RabbitMQ queue, and one with an ``amqp10``
destination carries them from there into another FerryMQ queue. Counted one by one at the far end:
none lost, none duplicated, and each one settled on FerryMQ (the source queue is empty)."""

from __future__ import annotations

import re
import secrets
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from proton import Message, Timeout

from ferrymq.testing import BrokerThread
from tests.amqp.proton_support import amqp_broker, blocking, url
from tests.amqp.rabbitmq import RabbitNode, rabbitmq_node

__all__ = ["rabbitmq_node"]  # the session fixture, used by name

COUNT = 200
DEADLINE_S = 60.0


@pytest.fixture
def served(tmp_path: Path) -> Iterator[BrokerThread]:
    with amqp_broker(tmp_path) as thread:
        yield thread


def _text(body: object) -> str:
    """The message's "body N" (after the 0-9-1 hop it arrives as binary holding the AMQP
    1.0 body section RabbitMQ 3.10 kept encoded)."""
    if not isinstance(body, bytes | memoryview):
        return str(body)
    found = re.search(rb"body \d+", bytes(body))
    return found.group().decode() if found else repr(bytes(body))


def _take(served: BrokerThread, address: str, count: int) -> list[Message]:
    got: list[Message] = []
    deadline = time.monotonic() + DEADLINE_S
    with blocking(url(served)) as connection:
        receiver = connection.create_receiver(address, credit=50)
        while len(got) < count and time.monotonic() < deadline:
            try:
                got.append(receiver.receive(timeout=1))
            except Timeout:
                continue
            receiver.accept()
        try:  # a duplicate would come after the count
            got.append(receiver.receive(timeout=1))
            receiver.accept()
        except Timeout:
            pass
    return got


def test_shovels_carry_every_message_out_of_ferrymq_and_back_exactly_once(
    served: BrokerThread, rabbitmq_node: RabbitNode
) -> None:
    tag = secrets.token_hex(3)
    ferry = f"amqp://127.0.0.1:{served.amqp_port}"
    rabbit_queue = f"from-ferry-{tag}"
    with blocking(url(served)) as producer:
        sender = producer.create_sender(f"queue://out-{tag}")
        for n in range(COUNT):
            sender.send(Message(id=f"msg-{n}", body=f"body {n}", durable=True, properties={"n": n}))
    out_name, back_name = f"out-{tag}", f"back-{tag}"
    rabbitmq_node.set_shovel(
        out_name,
        {
            "src-protocol": "amqp10",
            "src-uri": ferry,
            "src-address": f"queue://out-{tag}",
            "dest-protocol": "amqp091",
            "dest-uri": "amqp://",
            "dest-queue": rabbit_queue,
            "ack-mode": "on-confirm",
        },
    )
    rabbitmq_node.set_shovel(
        back_name,
        {
            "src-protocol": "amqp091",
            "src-uri": "amqp://",
            "src-queue": rabbit_queue,
            "dest-protocol": "amqp10",
            "dest-uri": ferry,
            "dest-address": f"queue://back-{tag}",
            "ack-mode": "on-confirm",
        },
    )
    try:
        arrived = _take(served, f"queue://back-{tag}", COUNT)
    finally:
        rabbitmq_node.clear_shovel(out_name)
        rabbitmq_node.clear_shovel(back_name)
    # RabbitMQ's AMQP 0-9-1 hop keeps neither the message-id nor the amqp-value body type:
    # the body's text names each one.
    seen = Counter(_text(message.body) for message in arrived)
    assert len(arrived) == COUNT, f"{len(arrived)} of {COUNT} arrived"
    assert sorted(seen) == sorted(f"body {n}" for n in range(COUNT))
    assert max(seen.values()) == 1, "duplicates"
    # Every one was settled on FerryMQ's side too.
    with blocking(url(served)) as check, pytest.raises(Timeout):
        check.create_receiver(f"queue://out-{tag}").receive(timeout=1)
