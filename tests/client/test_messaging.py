"""Sending and consuming against a real broker: receipts, ack modes, NACK, selectors,
durable subscriptions and browsers."""

from __future__ import annotations

from pathlib import Path

import pytest

from ferrymq.broker import Broker
from ferrymq.client import BrokerErrorFrame, Connection, SubscriptionClosedError, connect
from ferrymq.testing import broker_config
from tests.client.conftest import browse


async def test_send_with_receipt_then_receive(conn: Connection) -> None:
    sub = await conn.subscribe("/queue/greetings")
    producer_message_id = await conn.send(
        "/queue/greetings", "hello", headers={"color": "red"}, receipt=True, priority=7
    )
    message = await sub.get(timeout=5)
    assert message.text == "hello"
    assert message.body == b"hello"
    assert message.destination == "/queue/greetings"
    assert message.subscription == sub.id
    assert message.headers["color"] == "red"
    assert message.headers["priority"] == "7"
    assert message.headers["ferrymq.producer-message-id"] == producer_message_id
    assert producer_message_id == f"{conn.producer_id}:1"
    assert not message.redelivered
    assert not message.persistent
    assert message.ack_id is None  # auto mode: nothing to settle


async def test_producer_message_ids_are_sequential_and_unique_per_connection(
    url: str, conn: Connection
) -> None:
    ids = [await conn.send("/queue/ids", str(n)) for n in range(3)]
    assert ids == [f"{conn.producer_id}:{n}" for n in (1, 2, 3)]
    async with connect(url) as other:
        assert other.producer_id != conn.producer_id


async def test_a_binary_body_is_kept_as_bytes(conn: Connection) -> None:
    sub = await conn.subscribe("/queue/binary")
    body = bytes(range(256)) + b"\x00 after a NUL"
    await conn.send("/queue/binary", body, receipt=True)
    message = await sub.get(timeout=5)
    assert message.body == body
    with pytest.raises(UnicodeDecodeError):
        _ = message.text


async def test_a_persistent_send_waits_for_its_receipt(conn: Connection) -> None:
    # The broker refuses the destination. A send that waits for its receipt gets the ERROR
    # (it names the receipt); the connection stays usable only if the broker keeps it open.
    with pytest.raises(BrokerErrorFrame, match="Illegal destination name") as caught:
        await conn.send("/nowhere/x", "lost", persistent=True)
    assert caught.value.receipt_id is not None


async def test_a_receipted_persistent_message_survives_a_broker_restart(tmp_path: Path) -> None:
    broker = Broker(broker_config(tmp_path, persistent=True))
    await broker.start()
    try:
        async with connect(broker.stomp_urls[0]) as conn:
            await conn.send("/queue/durable", "kept", persistent=True)
    finally:
        await broker.stop()
    broker = Broker(broker_config(tmp_path, persistent=True))
    await broker.start()
    try:
        async with connect(broker.stomp_urls[0]) as conn:
            sub = await conn.subscribe("/queue/durable")
            message = await sub.get(timeout=5)
            assert message.text == "kept"
            assert message.persistent
    finally:
        await broker.stop()


async def test_async_iteration_and_get_timeout(conn: Connection) -> None:
    sub = await conn.subscribe("/queue/iterate")
    for n in range(5):
        await conn.send("/queue/iterate", f"m{n}")
    seen = []
    async for message in sub:
        seen.append(message.text)
        if len(seen) == 5:
            break
    assert seen == [f"m{n}" for n in range(5)]
    with pytest.raises(TimeoutError):
        await sub.get(timeout=0.05)


async def test_unsubscribe_ends_iteration(conn: Connection) -> None:
    sub = await conn.subscribe("/queue/ending")
    await sub.unsubscribe()
    assert sub.closed
    assert [message async for message in sub] == []
    with pytest.raises(SubscriptionClosedError):
        await sub.get()
    await sub.unsubscribe()  # idempotent


async def test_auto_ack_consumes(url: str, conn: Connection) -> None:
    sub = await conn.subscribe("/queue/auto")
    await conn.send("/queue/auto", "one", receipt=True)
    message = await sub.get(timeout=5)
    await message.ack()  # a no-op, as in JMS
    await sub.unsubscribe()
    assert await browse(url, "/queue/auto") == []


async def fill(conn: Connection, queue: str, count: int) -> None:
    for n in range(1, count + 1):
        await conn.send(queue, f"m{n}", persistent=True)


async def test_client_ack_is_cumulative(url: str) -> None:
    async with connect(url) as conn:
        await fill(conn, "/queue/client", 3)
        sub = await conn.subscribe("/queue/client", ack="client")
        first, second = await sub.get(timeout=5), await sub.get(timeout=5)
        assert first.ack_id is not None
        await second.ack(receipt=True)  # covers the first as well
    assert await browse(url, "/queue/client") == ["m3"]


async def test_client_individual_ack_settles_one_message(url: str) -> None:
    async with connect(url) as conn:
        await fill(conn, "/queue/individual", 3)
        sub = await conn.subscribe("/queue/individual", ack="client-individual")
        messages = [await sub.get(timeout=5) for _ in range(3)]
        await messages[0].ack()
        await messages[2].ack(receipt=True)
    async with connect(url) as conn:
        sub = await conn.subscribe("/queue/individual", ack="client-individual")
        again = await sub.get(timeout=5)
        assert again.text == "m2"
        assert again.redelivered
        await again.ack(receipt=True)
    assert await browse(url, "/queue/individual") == []


async def test_nack_sends_a_persistent_message_to_the_dead_letter_queue(url: str) -> None:
    async with connect(url) as conn:
        await conn.send("/queue/poison", "bad", persistent=True)
        sub = await conn.subscribe("/queue/poison", ack="client-individual")
        message = await sub.get(timeout=5)
        await message.nack(receipt=True)
        dlq = await conn.subscribe("/queue/ActiveMQ.DLQ", ack="client-individual")
        dead = await dlq.get(timeout=5)
        assert dead.text == "bad"
        assert dead.headers["original-destination"] == "/queue/poison"
        assert dead.persistent
        await dead.ack(receipt=True)
    assert await browse(url, "/queue/poison") == []


async def test_nack_of_an_auto_acknowledged_message_is_refused(conn: Connection) -> None:
    from ferrymq.client import UsageError

    sub = await conn.subscribe("/queue/auto-nack")
    await conn.send("/queue/auto-nack", "x")
    message = await sub.get(timeout=5)
    with pytest.raises(UsageError, match="auto"):
        await message.nack()


async def test_a_selector_filters_on_headers(conn: Connection) -> None:
    sub = await conn.subscribe("/queue/colors", selector="color = 'red' AND size > 2")
    for color, size in [("red", "1"), ("blue", "5"), ("red", "3"), ("red", "10")]:
        await conn.send("/queue/colors", f"{color}-{size}", headers={"color": color, "size": size})
    assert [(await sub.get(timeout=5)).text for _ in range(2)] == ["red-3", "red-10"]


async def test_a_durable_subscription_keeps_messages_while_offline(url: str) -> None:
    async with connect(url, client_id="durable-client") as conn:
        sub = await conn.subscribe("/topic/news", durable_name="reader")
        assert sub.durable_name == "reader"
    async with connect(url) as producer:
        for n in range(3):
            await producer.send("/topic/news", f"offline {n}", persistent=True)
    async with connect(url, client_id="durable-client") as conn:
        sub = await conn.subscribe("/topic/news", durable_name="reader")
        assert [(await sub.get(timeout=5)).text for _ in range(3)] == [
            f"offline {n}" for n in range(3)
        ]
        await sub.unsubscribe(durable=True)
    async with connect(url) as producer:
        await producer.send("/topic/news", "while destroyed", persistent=True)
    async with connect(url, client_id="durable-client") as conn:
        # A new subscription of the same name starts empty: the old one kept nothing.
        sub = await conn.subscribe("/topic/news", durable_name="reader")
        await conn.send("/topic/news", "marker", persistent=True)
        assert (await sub.get(timeout=5)).text == "marker"
        await sub.unsubscribe(durable=True)


async def test_a_browser_lists_without_consuming(url: str, conn: Connection) -> None:
    for n in range(3):
        await conn.send("/queue/browsed", f"b{n}", receipt=True)
    sub = await conn.subscribe("/queue/browsed", browser=True)
    assert [message.text async for message in sub] == ["b0", "b1", "b2"]
    assert sub.closed
    consumer = await conn.subscribe("/queue/browsed")
    assert [(await consumer.get(timeout=5)).text for _ in range(3)] == ["b0", "b1", "b2"]


async def test_subscribe_as_context_manager_unsubscribes(conn: Connection) -> None:
    async with await conn.subscribe("/queue/scoped") as sub:
        await conn.send("/queue/scoped", "inside")
        assert (await sub.get(timeout=5)).text == "inside"
    assert sub.closed
    assert conn.statistics().subscriptions == 0


async def test_a_resent_producer_message_id_is_dropped_by_the_broker(conn: Connection) -> None:
    # What issue 3's failover relies on: a send repeated with the same producer message id
    # is receipted but stored once.
    sub = await conn.subscribe("/queue/dedup")
    first = await conn.send("/queue/dedup", "original", receipt=True)
    again = await conn.send(
        "/queue/dedup",
        "re-sent copy",
        headers={"ferrymq.producer-message-id": first},
        receipt=True,
    )
    assert again == first
    await conn.send("/queue/dedup", "next", receipt=True)
    assert [(await sub.get(timeout=5)).text for _ in range(2)] == ["original", "next"]
