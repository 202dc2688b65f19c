"""A new connection that drops while the failover transport restores the subscriptions on it.

Scripted (``ScriptedStompServer`` in front of a real broker): connection 1 serves and dies;
connection 2 answers CONNECTED and is closed as the client re-subscribes; connection 3 serves.
Before the fix the restore's waiters were cancelled, the cancellation came out of ``restore``
as if the supervisor itself had been cancelled, and the connection waited for ever (issue 13,
item 2). Each path into ``restore`` is taken: a reconnect, the promotion of a ``backup``
standby, and a planned move to a ``priorityBackup`` broker; and whatever ends the supervisor
otherwise, the connection fails instead of hanging.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Iterator

import pytest

from ferrymq.broker import Broker
from ferrymq.client import Connection, ConnectionClosed, Subscription, connect
from ferrymq.client.failover.reconnect import Reconnector
from ferrymq.testing import wait_until
from ferrymq.testing.scripted import CloseOn, Forward, Refuse, ScriptedStompServer

QUEUE = "/queue/RESTORE"
FAST = "initialReconnectDelay=10&maxReconnectDelay=100"
WAIT_S = 15.0


@pytest.fixture
def broker_port(persistent_broker: Broker) -> int:
    return persistent_broker.stomp_ports[0]


@pytest.fixture
def dies_then_drops_restore(broker_port: int) -> Iterator[ScriptedStompServer]:
    """Connection 1 serves, 2 closes on the re-SUBSCRIBE, then every connection serves."""
    with ScriptedStompServer(broker_port, [Forward(), CloseOn("SUBSCRIBE")]) as server:
        yield server


async def send(port: int, first: int, count: int) -> None:
    async with await connect(f"tcp://127.0.0.1:{port}") as producer:
        for n in range(first, first + count):
            await producer.send(QUEUE, f"m{n}", persistent=True)


async def take(subscription: Subscription, count: int) -> list[str]:
    """``count`` messages, each acknowledged with a receipt once taken."""
    bodies: list[str] = []
    async with asyncio.timeout(WAIT_S):
        for _ in range(count):
            message = await subscription.get()
            bodies.append(message.text)
            await message.ack(receipt=True)
    return bodies


@pytest.fixture
async def consumer(dies_then_drops_restore: ScriptedStompServer) -> AsyncIterator[Connection]:
    connection = await connect(f"failover:({dies_then_drops_restore.url})?{FAST}")
    yield connection
    await connection.close()


async def test_a_reconnect_whose_restore_is_cut_tries_again(
    broker_port: int, dies_then_drops_restore: ScriptedStompServer, consumer: Connection
) -> None:
    server = dies_then_drops_restore
    await send(broker_port, 0, 3)
    subscription = await consumer.subscribe(QUEUE, ack="client-individual")
    before = await take(subscription, 3)
    server.drop()
    await asyncio.to_thread(server.wait_closed_on, 1)
    await send(broker_port, 3, 7)
    after = await take(subscription, 7)
    assert before + after == [f"m{n}" for n in range(10)]
    assert server.accepted == 3
    assert consumer.statistics().transport.failovers == 1


async def test_a_promoted_backup_whose_restore_is_cut_fails_over_again(
    broker_port: int,
) -> None:
    """``backup=true``: the standby is taken at once; it drops during the restore; the next
    pass connects to it again (the primary is gone for good)."""
    with (
        ScriptedStompServer(broker_port, [Forward()], then=Refuse()) as primary,
        ScriptedStompServer(broker_port, [CloseOn("SUBSCRIBE")]) as backup,
    ):
        url = f"failover:({primary.url},{backup.url})?randomize=false&backup=true&{FAST}"
        async with await connect(url) as connection:
            await send(broker_port, 0, 2)
            subscription = await connection.subscribe(QUEUE, ack="client-individual")
            before = await take(subscription, 2)
            await asyncio.to_thread(backup.wait_accepted, 1)
            await wait_until(
                lambda: connection.statistics().transport.standbys == 1, 10.0, "a standby"
            )
            primary.drop()
            await asyncio.to_thread(backup.wait_closed_on, 1)
            await send(broker_port, 2, 3)
            after = await take(subscription, 3)
            assert connection.remote_url == backup.url
    assert before + after == [f"m{n}" for n in range(5)]
    assert backup.accepted >= 2


async def test_a_planned_move_whose_restore_is_cut_reconnects(broker_port: int) -> None:
    """``priorityBackup=true``: the priority broker is down at the start; once the client
    has a subscription it comes back, the move to it drops during the restore, and the
    client reconnects, to it in the end."""
    with (
        ScriptedStompServer(broker_port, [], then=Refuse()) as priority,
        ScriptedStompServer(broker_port, []) as other,
    ):
        url = f"failover:({priority.url},{other.url})?randomize=false&priorityBackup=true&{FAST}"
        async with await connect(url) as connection:
            assert connection.remote_url == other.url
            await send(broker_port, 0, 2)
            subscription = await connection.subscribe(QUEUE, ack="client-individual")
            before = await take(subscription, 2)
            priority.follow([CloseOn("SUBSCRIBE")])
            await asyncio.to_thread(priority.wait_closed_on, 1)
            await send(broker_port, 2, 3)
            after = await take(subscription, 3)
            await wait_until(
                lambda: connection.remote_url == priority.url, 10.0, "the priority URL"
            )
    assert before + after == [f"m{n}" for n in range(5)]


async def test_a_supervisor_that_ends_unexpectedly_fails_the_connection(
    dies_then_drops_restore: ScriptedStompServer,
    consumer: Connection,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The class of bug, whatever its cause: a reconnect step that raises what no handler
    expects (here a stray ``CancelledError``) must not leave the application waiting."""

    async def broken(self: Reconnector) -> None:
        raise asyncio.CancelledError

    monkeypatch.setattr(Reconnector, "recover", broken)
    subscription = await consumer.subscribe(QUEUE)
    dies_then_drops_restore.drop()
    async with asyncio.timeout(WAIT_S):
        with pytest.raises(ConnectionClosed, match="the reconnect loop ended unexpectedly"):
            await subscription.get()
    with pytest.raises(ConnectionClosed, match="the reconnect loop ended unexpectedly"):
        await consumer.send(QUEUE, "after")


async def test_ferrymq_consume_keeps_consuming_across_a_cut_restore(
    broker_port: int, dies_then_drops_restore: ScriptedStompServer
) -> None:
    """The field report: ``ferrymq consume`` over ``failover:`` made two connections, then
    nothing. It must take all ten messages, each once, and exit 0."""
    server = dies_then_drops_restore
    await send(broker_port, 0, 3)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "ferrymq.cli.main",
        "consume",
        f"failover:({server.url})?{FAST}",
        QUEUE,
        "--count",
        "10",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        lines: list[str] = []
        async with asyncio.timeout(WAIT_S):
            while len(lines) < 3:
                lines.append((await process.stdout.readline()).decode().rstrip("\n"))
        server.drop()
        await asyncio.to_thread(server.wait_closed_on, 1)
        await send(broker_port, 3, 7)
        async with asyncio.timeout(WAIT_S):
            rest, err = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    lines += rest.decode().splitlines()
    assert process.returncode == 0, err.decode()
    assert lines == [f"m{n}" for n in range(10)]


async def test_an_interrupted_callback_that_raises_cancelled_does_not_stop_the_failover(
    broker_port: int, dies_then_drops_restore: ScriptedStompServer, consumer: Connection
) -> None:
    """An ``on_interrupted`` callback's stray ``CancelledError`` (a cancelled future's
    result) is logged like any callback error; the reconnect it ran inside still happens."""

    def callback() -> None:
        raise asyncio.CancelledError

    consumer.on_interrupted(callback)
    subscription = await consumer.subscribe(QUEUE, ack="client-individual")
    dies_then_drops_restore.drop()
    await send(broker_port, 0, 2)
    assert await take(subscription, 2) == ["m0", "m1"]


async def test_a_consumer_cancelled_while_no_broker_is_up_ends_and_is_not_restored(
    broker_port: int,
) -> None:
    """``async with subscription`` left by a cancelled task while the failover connection has
    no broker: the UNSUBSCRIBE is settled at once (not held until a broker comes back), and
    the subscription is not restored on the next broker, where an ``ack:auto`` subscription
    nobody reads would swallow messages."""
    with ScriptedStompServer(broker_port, [Forward()], then=Refuse()) as server:
        async with await connect(f"failover:({server.url})?{FAST}") as connection:
            subscribed = asyncio.Event()

            async def consume() -> None:
                async with await connection.subscribe(QUEUE) as subscription:
                    subscribed.set()
                    await subscription.get()

            task = asyncio.create_task(consume())
            # Its receipt came: the cancel below lands in ``async with``, not in ``subscribe``
            # (``statistics().subscriptions`` counts it as soon as the SUBSCRIBE is written).
            async with asyncio.timeout(10.0):
                await subscribed.wait()
            server.drop()
            await wait_until(
                lambda: connection.statistics().interruptions == 1, 10.0, "the interruption"
            )
            task.cancel()
            done, _ = await asyncio.wait([task], timeout=WAIT_S)
            assert done == {task}
            assert task.cancelled()
            server.follow([])  # the broker is back
            await wait_until(
                lambda: connection.statistics().transport.failovers == 1, 10.0, "a failover"
            )
            await send(broker_port, 0, 5)
            async with await connect(f"tcp://127.0.0.1:{broker_port}") as other:
                subscription = await other.subscribe(QUEUE, ack="client-individual")
                assert await take(subscription, 5) == [f"m{n}" for n in range(5)]


async def test_a_subscribe_cancelled_before_its_receipt_is_taken_back(broker_port: int) -> None:
    """The same, one step earlier: the task is cancelled inside ``subscribe()``, its SUBSCRIBE
    written but its receipt not come (the broker's answers are held back), and the connection
    fails over. The subscription is withdrawn, not restored on the next broker to swallow
    messages nobody reads."""
    with ScriptedStompServer(broker_port, [Forward()], then=Refuse()) as server:
        async with await connect(f"failover:({server.url})?{FAST}") as connection:
            server.freeze("down")  # the RECEIPT never comes back
            task = asyncio.create_task(connection.subscribe(QUEUE))
            await wait_until(
                lambda: connection.statistics().subscriptions == 1, 10.0, "the SUBSCRIBE written"
            )
            server.drop()
            await wait_until(
                lambda: connection.statistics().interruptions == 1, 10.0, "the interruption"
            )
            task.cancel()
            done, _ = await asyncio.wait([task], timeout=WAIT_S)
            assert done == {task}
            assert task.cancelled()
            server.follow([])  # the broker is back
            await wait_until(
                lambda: connection.statistics().transport.failovers == 1, 10.0, "a failover"
            )
            await send(broker_port, 0, 5)
            async with await connect(f"tcp://127.0.0.1:{broker_port}") as other:
                subscription = await other.subscribe(QUEUE, ack="client-individual")
                assert await take(subscription, 5) == [f"m{n}" for n in range(5)]
