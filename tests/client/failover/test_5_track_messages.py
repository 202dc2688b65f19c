"""Issue 3, "How it is checked" 5: trackMessages re-sends what the application sent without
a receipt and the broker did not confirm, after a failover, with no duplicates at the consumer.

A proxy in front of the broker loses frames on purpose: "up" loses the sends themselves (they
must be re-sent), "down" loses only the broker's receipts (the re-sent copies must be dropped
by the broker's duplicate detection).
"""

from __future__ import annotations

from collections import Counter

import pytest

from ferrymq.broker import Broker
from ferrymq.client import Connection, Subscription, connect
from ferrymq.testing.scripted import Direction, ScriptedStompServer
from tests.client.failover.conftest import Watcher

BEFORE, DURING = 100, 50


async def drain_until(subscription: Subscription, marker: str) -> Counter[str]:
    counts: Counter[str] = Counter()
    while True:
        message = await subscription.get(timeout=10)
        if message.text == marker:
            return counts
        counts[message.text] += 1


async def send_batch(producer: Connection, prefix: str, count: int) -> None:
    for n in range(count):
        await producer.send("/queue/tracked", f"{prefix}{n}", receipt=False)  # non-persistent


@pytest.mark.parametrize("lost", ["up", "down"])
async def test_5_track_messages_resends_unreceipted_sends_without_duplicates(
    persistent_broker: Broker, proxy: ScriptedStompServer, lost: Direction
) -> None:
    direct = persistent_broker.stomp_urls[0]
    consumer = await connect(direct)
    subscription = await consumer.subscribe("/queue/tracked")
    producer = await connect(f"failover:({proxy.url},{direct})?randomize=false&trackMessages=true")
    watcher = Watcher(producer)
    await send_batch(producer, "before-", BEFORE)
    await producer.send("/queue/tracked", "barrier", receipt=True)  # all before it confirmed
    proxy.freeze(lost)
    await send_batch(producer, "during-", DURING)
    if lost == "down":
        # The broker has them (the consumer sees them); only the receipts are lost.
        seen = await drain_until(subscription, f"during-{DURING - 1}")
        assert len(seen) == BEFORE + DURING
    proxy.drop(refuse=True)
    await watcher.resumptions(1)
    assert producer.remote_url == direct
    assert producer.statistics().transport.replayed_commands >= DURING
    await producer.send("/queue/tracked", "end", receipt=True)
    counts = await drain_until(subscription, "end")
    if lost == "down":
        counts.update(seen)
        counts["during-" + str(DURING - 1)] += 1
    counts.pop("barrier", None)
    expected = {f"before-{n}" for n in range(BEFORE)} | {f"during-{n}" for n in range(DURING)}
    assert set(counts) == expected
    assert [body for body, n in counts.items() if n != 1] == []
    await producer.disconnect()
    await consumer.disconnect()


async def test_5_without_track_messages_unreceipted_sends_are_lost(
    persistent_broker: Broker, proxy: ScriptedStompServer
) -> None:
    """The control: what trackMessages is for (reference §1.5, "not replayed")."""
    direct = persistent_broker.stomp_urls[0]
    consumer = await connect(direct)
    subscription = await consumer.subscribe("/queue/tracked")
    producer = await connect(f"failover:({proxy.url},{direct})?randomize=false")
    watcher = Watcher(producer)
    await send_batch(producer, "before-", BEFORE)
    await producer.send("/queue/tracked", "barrier", receipt=True)
    proxy.freeze("up")
    await send_batch(producer, "during-", DURING)
    proxy.drop(refuse=True)
    await watcher.resumptions(1)
    await producer.send("/queue/tracked", "end", receipt=True)
    counts = await drain_until(subscription, "end")
    assert set(counts) == {f"before-{n}" for n in range(BEFORE)} | {"barrier"}
    await producer.disconnect()
    await consumer.disconnect()
