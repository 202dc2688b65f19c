"""BEGIN/COMMIT/ABORT: sends and acks that take effect together, or not at all."""

from __future__ import annotations

import pytest

from ferrymq.client import Connection, TransactionState, UsageError, connect
from tests.client.conftest import browse


async def test_transacted_sends_appear_at_commit(url: str, conn: Connection) -> None:
    async with conn.transaction() as tx:
        assert tx.state.value == "active"
        await conn.send("/queue/tx-commit", "one", transaction=tx)
        await conn.send("/queue/tx-commit", "two", transaction=tx.id, receipt=True)
        assert await browse(url, "/queue/tx-commit") == []
    assert tx.state is TransactionState.COMMITTED
    assert await browse(url, "/queue/tx-commit") == ["one", "two"]


async def test_transacted_sends_are_dropped_at_abort(url: str, conn: Connection) -> None:
    tx = await conn.begin()
    await conn.send("/queue/tx-abort", "dropped", transaction=tx, persistent=True)
    await tx.abort()
    assert tx.state is TransactionState.ABORTED
    with pytest.raises(UsageError, match="aborted"):
        await tx.commit()
    await conn.send("/queue/tx-abort", "kept", receipt=True)
    assert await browse(url, "/queue/tx-abort") == ["kept"]


async def test_an_exception_in_the_block_aborts(url: str, conn: Connection) -> None:
    tx = conn.transaction()

    async def change_of_mind() -> None:
        async with tx:
            await conn.send("/queue/tx-raise", "dropped", transaction=tx)
            raise RuntimeError("changed my mind")

    with pytest.raises(RuntimeError, match="changed my mind"):
        await change_of_mind()
    assert tx.state is TransactionState.ABORTED
    await conn.send("/queue/tx-raise", "after", receipt=True)
    assert await browse(url, "/queue/tx-raise") == ["after"]


async def test_transacted_acks_settle_at_commit(url: str) -> None:
    async with connect(url) as conn:
        for n in range(2):
            await conn.send("/queue/tx-ack", f"m{n}", persistent=True)
        sub = await conn.subscribe("/queue/tx-ack", ack="client-individual")
        messages = [await sub.get(timeout=5) for _ in range(2)]
        async with conn.transaction() as tx:
            for message in messages:
                await message.ack(transaction=tx)
    assert await browse(url, "/queue/tx-ack") == []


async def test_aborted_acks_leave_the_messages_unacknowledged(url: str) -> None:
    async with connect(url) as conn:
        await conn.send("/queue/tx-unack", "again", persistent=True)
        sub = await conn.subscribe("/queue/tx-unack", ack="client-individual")
        message = await sub.get(timeout=5)
        async with conn.transaction() as tx:
            await message.ack(transaction=tx)
            await tx.abort()
        # ActiveMQ: ABORT does not redeliver; the message is pending again and needs an ack.
        # Closing without one returns it to the queue.
    assert await browse(url, "/queue/tx-unack") == ["again"]
    async with connect(url) as conn:
        sub = await conn.subscribe("/queue/tx-unack", ack="client-individual")
        message = await sub.get(timeout=5)
        assert message.redelivered
        async with conn.transaction() as tx:
            await message.ack(transaction=tx)
    assert await browse(url, "/queue/tx-unack") == []
