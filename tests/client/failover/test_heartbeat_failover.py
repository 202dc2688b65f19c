"""A broker that stops answering (SIGSTOP) without closing its sockets: only the STOMP
heart-beat notices, and the client moves on."""

from __future__ import annotations

from ferrymq.client import connect
from tests.client.failover.conftest import Brokers, Watcher


async def test_a_paused_broker_is_left_when_its_heart_beats_stop(brokers: Brokers) -> None:
    a = await brokers.start("a")
    b = await brokers.start("b")
    connection = await connect(
        f"failover:({a.url},{b.url})?randomize=false&initialReconnectDelay=10",
        heart_beat=(100, 100),
    )
    watcher = Watcher(connection)
    subscription = await connection.subscribe("/queue/paused", ack="client-individual")
    a.pause()
    try:
        await watcher.resumptions(1)
        assert connection.remote_url == b.url
        await connection.send("/queue/paused", "on b", persistent=True)
        message = await subscription.get(timeout=5)
        assert message.text == "on b"
        await message.ack()
    finally:
        a.resume()
    await connection.disconnect()
