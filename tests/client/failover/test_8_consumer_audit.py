"""Consumption across a failover (reference §1.6-1.7): what the application acknowledged is
not handed to it again, what it had not yet taken comes back once, and acknowledgements of
messages from before the failover are not sent (the broker released those messages)."""

from __future__ import annotations

import pytest

from ferrymq.broker import Broker
from ferrymq.client import SubscriptionClosedError, connect
from ferrymq.testing.scripted import ScriptedStompServer
from tests.client.conftest import browse
from tests.client.failover.conftest import Watcher


@pytest.mark.parametrize("ack_mode", ["client-individual", "client"])
async def test_8_acknowledged_messages_are_not_handed_over_twice(
    persistent_broker: Broker, proxy: ScriptedStompServer, ack_mode: str
) -> None:
    direct = persistent_broker.stomp_urls[0]
    async with connect(direct) as seeder:
        for n in range(5):
            await seeder.send("/queue/audit", f"m{n}", persistent=True)
    connection = await connect(
        f"failover:({proxy.url},{direct})?randomize=false&initialReconnectDelay=300"
    )
    watcher = Watcher(connection)
    subscription = await connection.subscribe("/queue/audit", ack=ack_mode, prefetch=10)
    m0 = await subscription.get(timeout=5)
    await m0.ack(receipt=True)  # settled on the broker
    m1 = await subscription.get(timeout=5)
    proxy.freeze("up")
    await m1.ack()  # lost on the way: the broker still counts m1 as delivered
    m2 = await subscription.get(timeout=5)  # taken, not yet acknowledged; m3, m4 still queued
    proxy.drop(refuse=True)
    await watcher.interruptions(1)
    await m2.ack()  # stale: not sent, but the application did acknowledge it
    await watcher.resumptions(1)
    rest = [await subscription.get(timeout=5) for _ in range(2)]
    assert [(m.text, m.redelivered) for m in rest] == [("m3", True), ("m4", True)]
    assert all(m.generation == 1 for m in rest)
    assert m0.generation == 0
    for message in rest:
        await message.ack(receipt=True)
    stats = connection.statistics()
    assert stats.duplicates_dropped == 2  # m1 and m2, acknowledged to the broker by the client
    assert stats.interruptions == 1
    with pytest.raises(TimeoutError):
        await subscription.get(timeout=0.2)
    await connection.disconnect()
    assert await browse(direct, "/queue/audit") == []


async def test_8_auto_acknowledged_messages_already_received_are_kept(
    persistent_broker: Broker, proxy: ScriptedStompServer
) -> None:
    """In auto mode the broker counted them consumed when it wrote them: dropping them from
    the local queue would lose them."""
    direct = persistent_broker.stomp_urls[0]
    connection = await connect(f"failover:({proxy.url},{direct})?randomize=false")
    watcher = Watcher(connection)
    subscription = await connection.subscribe("/queue/auto")
    for n in range(3):
        await connection.send("/queue/auto", f"m{n}", receipt=True)
    await connection.send("/queue/auto-barrier", "x", receipt=True)
    proxy.drop(refuse=True)
    await watcher.resumptions(1)
    assert [(await subscription.get(timeout=5)).text for _ in range(3)] == ["m0", "m1", "m2"]
    await connection.disconnect()


async def test_8_a_browse_interrupted_by_a_failover_ends_with_an_error(
    persistent_broker: Broker, proxy: ScriptedStompServer
) -> None:
    direct = persistent_broker.stomp_urls[0]
    async with connect(direct) as seeder:
        for n in range(3):
            await seeder.send("/queue/browsed", f"m{n}", persistent=True)
    connection = await connect(f"failover:({proxy.url},{direct})?randomize=false")
    watcher = Watcher(connection)
    proxy.freeze("down")  # the browse starts; nothing of it comes back
    browser = await connection.subscribe("/queue/browsed", browser=True, receipt=False)
    proxy.drop(refuse=True)
    await watcher.resumptions(1)
    with pytest.raises(SubscriptionClosedError, match="interrupted by a failover"):
        async for _ in browser:
            pass
    again = await connection.subscribe("/queue/browsed", browser=True)
    assert [m.text async for m in again] == ["m0", "m1", "m2"]
    await connection.disconnect()


async def test_8_client_id_and_durable_subscription_are_restored(
    persistent_broker: Broker, proxy: ScriptedStompServer
) -> None:
    direct = persistent_broker.stomp_urls[0]
    connection = await connect(
        f"failover:({proxy.url})?initialReconnectDelay=10&maxReconnectDelay=50",
        client_id="durable-client",
    )
    watcher = Watcher(connection)
    news = await connection.subscribe(
        "/topic/news", durable_name="reader", ack="client-individual", selector="kind = 'x'"
    )
    async with connect(direct) as publisher:
        await publisher.send("/topic/news", "before", persistent=True, headers={"kind": "x"})
        first = await news.get(timeout=5)
        await first.ack(receipt=True)
        proxy.drop(refuse=True)  # refuses new connections until started again
        await watcher.interruptions(1)
        # While the client is away, the durable subscription keeps what matches its selector.
        await publisher.send("/topic/news", "skipped", persistent=True, headers={"kind": "y"})
        await publisher.send("/topic/news", "while away", persistent=True, headers={"kind": "x"})
    proxy.follow([])
    await watcher.resumptions(1)
    message = await news.get(timeout=5)
    assert (message.text, message.subscription) == ("while away", news.id)
    await message.ack(receipt=True)
    await connection.disconnect()
