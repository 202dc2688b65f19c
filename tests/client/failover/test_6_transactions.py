"""Issue 3, "How it is checked" 6: a transaction in flight during a failover raises
TransactionRolledBack, the retry commits, nothing is duplicated (reference §1.5-1.6); a
transaction of sends only is carried over transparently, even when its COMMIT's outcome was
lost (the broker drops the replayed sends it already committed)."""

from __future__ import annotations

import asyncio

import pytest

from ferrymq.broker import Broker
from ferrymq.client import TransactionRolledBack, connect
from ferrymq.client.transaction import TransactionState
from ferrymq.testing.scripted import ScriptedStompServer
from tests.client.conftest import browse
from tests.client.failover.conftest import Brokers, Watcher

FAST = "initialReconnectDelay=10&maxReconnectDelay=100"


async def test_6_a_consuming_transaction_rolls_back_and_its_retry_commits(
    brokers: Brokers,
) -> None:
    a = await brokers.start("a")
    async with connect(a.url) as seeder:
        await seeder.send("/queue/jobs", "job-1", persistent=True)
    connection = await connect(f"failover:({a.url})?{FAST}")
    watcher = Watcher(connection)
    jobs = await connection.subscribe("/queue/jobs", ack="client-individual")
    job = await jobs.get(timeout=10)
    tx = await connection.begin()
    await connection.send("/queue/results", f"done {job.text}", persistent=True, transaction=tx)
    await job.ack(transaction=tx)
    a.kill()
    await brokers.restart(a)
    await watcher.resumptions(1)
    with pytest.raises(TransactionRolledBack) as caught:
        await tx.commit()
    assert str(caught.value) == (
        f"Commit of {tx.id} failed due to rollback only request; "
        "typically due to failover with pending acks"
    )
    assert tx.state is TransactionState.ABORTED
    again = await jobs.get(timeout=10)  # the broker redelivers what the transaction had taken
    assert (again.text, again.redelivered) == ("job-1", True)
    async with connection.transaction() as retry:
        await connection.send(
            "/queue/results", f"done {again.text}", persistent=True, transaction=retry
        )
        await again.ack(transaction=retry)
    await connection.disconnect()
    assert await browse(a.url, "/queue/results") == ["done job-1"]
    assert await browse(a.url, "/queue/jobs") == []


async def test_6_a_transaction_of_sends_only_survives_the_failover(brokers: Brokers) -> None:
    a = await brokers.start("a")
    connection = await connect(f"failover:({a.url})?{FAST}")
    watcher = Watcher(connection)
    async with connection.transaction() as tx:
        for n in range(5):
            await connection.send("/queue/batch", f"m{n}", persistent=True, transaction=tx)
        a.kill()
        await brokers.restart(a)
        await watcher.resumptions(1)
        for n in range(5, 10):
            await connection.send("/queue/batch", f"m{n}", persistent=True, transaction=tx)
    assert tx.state is TransactionState.COMMITTED
    await connection.disconnect()
    assert await browse(a.url, "/queue/batch") == [f"m{n}" for n in range(10)]


async def test_6_a_commit_whose_receipt_was_lost_is_replayed_exactly_once(
    persistent_broker: Broker, proxy: ScriptedStompServer
) -> None:
    direct = persistent_broker.stomp_urls[0]
    observer = await connect(direct)
    seen = await observer.subscribe("/queue/committed")
    connection = await connect(f"failover:({proxy.url},{direct})?randomize=false")
    tx = await connection.begin()
    for n in range(3):
        await connection.send("/queue/committed", f"m{n}", persistent=True, transaction=tx)
    proxy.freeze("down")  # the broker commits; its receipt never arrives
    committing = asyncio.create_task(tx.commit())
    assert [(await seen.get(timeout=10)).text for _ in range(3)] == ["m0", "m1", "m2"]
    assert not committing.done()
    proxy.drop(refuse=True)
    await asyncio.wait_for(committing, 10)  # replayed on the broker, which drops the copies
    assert connection.statistics().transport.replayed_commands == 5  # BEGIN, 3 SENDs, COMMIT
    await connection.send("/queue/committed", "end", persistent=True)
    assert (await seen.get(timeout=10)).text == "end"  # nothing in between: no duplicates
    await connection.disconnect()
    await observer.disconnect()


async def test_6_a_commit_in_doubt_with_acks_is_forced_to_roll_back(
    persistent_broker: Broker, proxy: ScriptedStompServer
) -> None:
    direct = persistent_broker.stomp_urls[0]
    async with connect(direct) as seeder:
        await seeder.send("/queue/doubt", "job-1", persistent=True)
    connection = await connect(f"failover:({proxy.url},{direct})?randomize=false")
    watcher = Watcher(connection)
    jobs = await connection.subscribe("/queue/doubt", ack="client-individual")
    job = await jobs.get(timeout=10)
    tx = await connection.begin()
    await connection.send("/queue/doubt-out", "result", persistent=True, transaction=tx)
    await job.ack(transaction=tx)
    proxy.freeze("up")  # the COMMIT is lost on the way
    committing = asyncio.create_task(tx.commit())
    proxy.drop(refuse=True)
    with pytest.raises(TransactionRolledBack) as caught:
        await asyncio.wait_for(committing, 10)
    assert str(caught.value) == (
        f"Transaction completion in doubt due to failover. Forcing rollback of {tx.id}"
    )
    await watcher.resumptions(1)
    again = await jobs.get(timeout=10)
    assert again.text == "job-1"
    async with connection.transaction() as retry:
        await connection.send("/queue/doubt-out", "result", persistent=True, transaction=retry)
        await again.ack(transaction=retry)
    await connection.disconnect()
    assert await browse(direct, "/queue/doubt-out") == ["result"]
    assert await browse(direct, "/queue/doubt") == []


async def test_6_abort_of_a_rolled_back_transaction_succeeds(brokers: Brokers) -> None:
    a = await brokers.start("a")
    async with connect(a.url) as seeder:
        await seeder.send("/queue/abort", "job-1", persistent=True)
    connection = await connect(f"failover:({a.url})?{FAST}")
    watcher = Watcher(connection)
    jobs = await connection.subscribe("/queue/abort", ack="client-individual")
    job = await jobs.get(timeout=10)
    tx = await connection.begin()
    await job.ack(transaction=tx)
    a.kill()
    await brokers.restart(a)
    await watcher.resumptions(1)
    await tx.abort()
    assert tx.state is TransactionState.ABORTED
    again = await jobs.get(timeout=10)
    await again.ack(receipt=True)  # outside a transaction, acked for good
    await connection.disconnect()
    assert await browse(a.url, "/queue/abort") == []
