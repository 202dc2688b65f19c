"""Issue 3, "How it is checked" 4: priorityBackup returns the client to the priority broker
when it comes back (seed 000 §2.1.3); backup=true fails over without a reconnect delay."""

from __future__ import annotations

import pytest

from ferrymq.client import Connection, Subscription, connect
from ferrymq.client.failover import FailoverTransport
from ferrymq.testing import wait_until
from tests.client.failover.conftest import Brokers, Watcher

PROBE = "initialReconnectDelay=50&maxReconnectDelay=200"


async def round_trip(connection: Connection, subscription: Subscription, body: str) -> None:
    await connection.send(subscription.destination, body, persistent=True)
    message = await subscription.get(timeout=10)
    assert message.text == body
    await message.ack()


async def test_4_priority_backup_returns_to_the_priority_broker(brokers: Brokers) -> None:
    a = await brokers.start("a")
    b = await brokers.start("b")
    url = f"failover:({a.url},{b.url})?randomize=false&priorityBackup=true&{PROBE}"
    connection = await connect(url)
    watcher = Watcher(connection)
    assert connection.remote_url == a.url
    subscription = await connection.subscribe("/queue/prio", ack="client-individual")
    await round_trip(connection, subscription, "on a")
    a.kill()
    await watcher.resumptions(1)
    assert connection.remote_url == b.url
    await round_trip(connection, subscription, "on b")
    await brokers.restart(a)
    await watcher.resumptions(2)  # nobody asked: the client moved back by itself
    assert watcher.resumed_urls == [b.url, a.url]
    assert len(watcher.interrupted_at) == 2
    await round_trip(connection, subscription, "back on a")  # the subscription came along
    stats = connection.statistics().transport
    assert stats.failovers == 2
    assert stats.remote_url == a.url
    await connection.disconnect()


async def test_4_priority_uris_name_the_brokers_to_prefer(brokers: Brokers) -> None:
    a = await brokers.start("a")
    b = await brokers.start("b")
    url = (
        f"failover:({a.url},{b.url})?randomize=false&priorityBackup=true"
        f"&priorityURIs={b.url}&{PROBE}"
    )
    connection = await connect(url)
    watcher = Watcher(connection)
    assert connection.remote_url == a.url  # the list's order first...
    await watcher.resumptions(1)
    assert connection.remote_url == b.url  # ...then the priority broker, as soon as it is up
    async with connection.transaction() as tx:
        await connection.send("/queue/prio-list", "in a transaction", transaction=tx)
    await connection.disconnect()


@pytest.mark.parametrize("client_id", [None, "backup-client"])
async def test_4_backup_fails_over_without_the_reconnect_delay(
    brokers: Brokers, client_id: str | None
) -> None:
    """With a client-id the standby is a TCP socket that sends CONNECT when promoted (the
    broker accepts a client-id once); without one it is a full STOMP session."""
    a = await brokers.start("a")
    b = await brokers.start("b")
    delay_ms = 5000
    url = (
        f"failover:({a.url},{b.url})?randomize=false&backup=true"
        f"&initialReconnectDelay={delay_ms}&maxReconnectDelay={delay_ms}"
    )
    connection = await connect(url, client_id=client_id)
    watcher = Watcher(connection)
    subscription = await connection.subscribe("/queue/backup", ack="client-individual")
    await wait_until(lambda: connection.statistics().transport.standbys == 1, 10.0, "1 standby")
    a.kill()
    await watcher.resumptions(1)
    # Without the standby the first attempt would come after initialReconnectDelay (5 s).
    assert watcher.resumed_at[0] - watcher.interrupted_at[0] < delay_ms / 1000
    assert connection.remote_url == b.url
    attempts = connection.statistics().transport.connect_attempts
    after = [x for x in attempts if x.started_at >= watcher.interrupted_at[0]]
    assert [(x.url, x.error) for x in after] == [(b.url, None)]
    await round_trip(connection, subscription, "through the standby")
    await connection.disconnect()


async def test_4_backup_pool_is_refilled_after_a_failover(brokers: Brokers) -> None:
    a = await brokers.start("a")
    b = await brokers.start("b")
    c = await brokers.start("c")
    url = f"failover:({a.url},{b.url},{c.url})?randomize=false&backup=true&backupPoolSize=2"
    connection = await connect(url)
    watcher = Watcher(connection)
    await wait_until(lambda: connection.statistics().transport.standbys == 2, 10.0, "2 standbys")
    a.kill()
    await watcher.resumptions(1)
    assert connection.remote_url in (b.url, c.url)
    # One standby left (the other broker); the killed one is not there to take its place.
    await wait_until(lambda: connection.statistics().transport.standbys == 1, 10.0, "1 standby")
    await brokers.restart(a)
    await wait_until(lambda: connection.statistics().transport.standbys == 2, 10.0, "2 standbys")
    await connection.disconnect()


async def test_4_a_socket_only_standby_is_renewed_before_the_broker_drops_it(
    brokers: Brokers,
) -> None:
    """The broker closes a connection that sent no CONNECT after 30 s; the standby of a
    connection with a client-id is replaced every ``refresh_s`` (20 s; shortened here)."""
    a = await brokers.start("a")
    b = await brokers.start("b")
    url = f"failover:({a.url},{b.url})?randomize=false&backup=true"
    connection = await connect(url, client_id="renewing")
    transport = connection._transport
    assert isinstance(transport, FailoverTransport)
    transport.standbys.refresh_s = 0.2
    await wait_until(lambda: len(transport.standbys) == 1, 10.0, "1 standby")
    (first,) = transport.standbys.candidates()
    assert first.connected is None  # a TCP socket, no STOMP session yet
    await wait_until(
        lambda: transport.standbys.candidates() not in ([], [first]),
        10.0,
        "the standby's STOMP session",
    )
    watcher = Watcher(connection)
    a.kill()
    await watcher.resumptions(1)
    assert connection.remote_url == b.url
    await connection.disconnect()
