"""``<sender>`` and ``<receiver>`` against a third-party AMQP 1.0 endpoint: RabbitMQ 3.10 with
its rabbitmq_amqp1_0 plugin (a private node, ``tests.amqp.rabbitmq``). RabbitMQ takes a plain
address as a queue of that name. Messages are counted on both sides: each arrives once, and
the side it left keeps none (everything was settled, and acknowledged only then)."""

from __future__ import annotations

import asyncio
import secrets
from collections import Counter
from pathlib import Path
from typing import Any

from proton import Message, ProtonException
from proton.utils import BlockingConnection

from ferrymq.client import connect
from ferrymq.config.broker_connections import ReceiverConfig, SenderConfig
from ferrymq.core.destination import Destination
from ferrymq.testing import running_broker, wait_until
from tests.amqp.rabbitmq import RabbitNode, rabbitmq_node
from tests.connections.senders_support import (
    count_numbered,
    local_config,
    send_numbered,
    stomp_url,
    wait_for_links,
)

__all__ = ["rabbitmq_node"]  # the session fixture, used by name

COUNT = 200
TIMEOUT_S = 10.0


def _rabbit_url(node: RabbitNode) -> str:
    return f"amqp://guest:guest@127.0.0.1:{node.amqp_port}"


def _produce(node: RabbitNode, address: str, count: int) -> None:
    connection = BlockingConnection(_rabbit_url(node), timeout=TIMEOUT_S)
    try:
        sender = connection.create_sender(address)
        for n in range(count):
            sender.send(Message(id=f"rabbit-{n}", body=f"m{n}", durable=True, properties={"n": n}))
    finally:
        connection.close()


def _consume(node: RabbitNode, address: str, expected: int) -> Counter[int]:
    seen: Counter[int] = Counter()
    connection = BlockingConnection(_rabbit_url(node), timeout=TIMEOUT_S)
    try:
        receiver = connection.create_receiver(address, credit=50)
        while True:
            timeout = 1.0 if sum(seen.values()) >= expected else TIMEOUT_S
            try:
                message = receiver.receive(timeout=timeout)
            except ProtonException:  # proton's Timeout
                break
            properties: dict[str, Any] = message.properties or {}
            seen[int(properties["n"])] += 1
            receiver.accept()
    finally:
        connection.close()
    return seen


def _ready_messages(node: RabbitNode, queue: str) -> int:
    for line in node.ctl("list_queues", "name", "messages").splitlines():
        name, _, count = line.partition("\t")
        if name == queue:
            return int(count)
    raise AssertionError(f"RabbitMQ has no queue {queue}")


async def test_sender_to_rabbitmq_and_receiver_from_it(
    tmp_path: Path, rabbitmq_node: RabbitNode
) -> None:
    tag = secrets.token_hex(3)
    outbound, inbound = f"to-rabbit-{tag}", f"from-rabbit-{tag}"
    # RabbitMQ declares a queue for a plain address: the receiver's source exists from here.
    await asyncio.to_thread(_produce, rabbitmq_node, inbound, COUNT)
    config = local_config(
        tmp_path,
        f"tcp://127.0.0.1:{rabbitmq_node.amqp_port}",
        SenderConfig(queue_name=outbound),
        ReceiverConfig(queue_name=inbound),
        queues=[(outbound, outbound), (inbound, inbound)],
        user="guest",
    )
    async with running_broker(config) as broker:
        client = await connect(stomp_url(broker))
        try:
            await wait_for_links(broker, 2)
            await send_numbered(client, f"/queue/{outbound}", range(COUNT))
            pulled = await count_numbered(client, f"/queue/{inbound}", COUNT)
            pushed = await asyncio.to_thread(_consume, rabbitmq_node, outbound, COUNT)
            queue = broker.service.region.queues[Destination.queue(outbound)]
            await wait_until(lambda: queue.depth == 0, 10, "FerryMQ acknowledged every send")
        finally:
            await client.close()
    assert pulled.lost_and_duplicated(range(COUNT)) == (set(), set())
    assert sorted(pushed) == list(range(COUNT))
    assert set(pushed.values()) == {1}
    assert _ready_messages(rabbitmq_node, inbound) == 0  # every one settled on RabbitMQ
    # RabbitMQ's message id came along.
    assert pulled.headers[5]["message-id"] == "rabbit-5"
