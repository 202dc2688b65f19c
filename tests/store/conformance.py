"""The ``MessageStore`` conformance suite, written against the protocol only.

``Recovery.last_seq`` is a floor for the seqs the broker hands out next: at least every seq the
store has seen, possibly more (the SQLite store starts each term above ``epoch << 40``), so the
suite checks that it covers what was used and never goes backwards, not its exact value.

A backend's test module subclasses ``StoreConformance`` and provides a ``store_factory`` fixture:
each call returns a new, unstarted store on the *same* location (directory, database, storage), so
"restart" is ``stop()`` then ``store_factory().start()``.  The fixture stops what it created.
Nothing here may depend on how a backend stores things.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

import pytest

from ferrymq.store import (
    DEFAULT_PRODUCER_ID_WINDOW,
    AddDestination,
    AddDurableSubscription,
    AddMessage,
    ContainerState,
    DurableSubscriptionRecord,
    MarkDelivered,
    MessageStore,
    PurgeContainer,
    Recovery,
    RemoveDestination,
    RemoveDurableSubscription,
    RemoveMessage,
    StoredMessage,
    StoreError,
    StoreOp,
)

QUEUE_A = "queue://A"
QUEUE_B = "queue://B"


class StoreFactory(Protocol):
    def __call__(self, *, producer_id_window: int = DEFAULT_PRODUCER_ID_WINDOW) -> MessageStore: ...


def add(
    seq: int,
    container: str = QUEUE_A,
    *,
    blob: bytes | None = None,
    persistent: bool = True,
    producer_message_id: str | None = None,
    delivered: bool = False,
) -> AddMessage:
    return AddMessage(
        container,
        seq,
        f"message {seq}".encode() if blob is None else blob,
        persistent=persistent,
        producer_message_id=producer_message_id,
        delivered=delivered,
    )


def seqs(messages: list[StoredMessage]) -> list[int]:
    return [m.seq for m in messages]


async def restart(
    store: MessageStore,
    store_factory: StoreFactory,
    *,
    producer_id_window: int = DEFAULT_PRODUCER_ID_WINDOW,
) -> tuple[MessageStore, Recovery]:
    await store.stop()
    again = store_factory(producer_id_window=producer_id_window)
    return again, await again.start()


def subscription(
    client_id: str, name: str, selector: str | None = None
) -> DurableSubscriptionRecord:
    return DurableSubscriptionRecord(
        client_id=client_id,
        subscription_name=name,
        destination="topic://prices.>",
        selector=selector,
        no_local=True,
        container=f"durable://{client_id}:{name}",
    )


class StoreConformance:
    async def test_start_on_empty(self, store_factory: StoreFactory) -> None:
        store = store_factory()
        recovery = await store.start()
        assert replace(recovery, last_seq=0) == Recovery()
        assert recovery.last_seq >= 0
        assert await store.load(QUEUE_A, 0, 10) == []
        assert store.statistics().pending_operations == 0

    async def test_load_orders_by_seq_and_pages(self, store_factory: StoreFactory) -> None:
        store = store_factory()
        await store.start()
        await store.write([add(5), add(1), add(3), add(2, QUEUE_B)])
        await store.write([add(4), add(2)])
        assert seqs(await store.load(QUEUE_A, 0, 100)) == [1, 2, 3, 4, 5]
        assert seqs(await store.load(QUEUE_A, 3, 2)) == [3, 4]
        assert seqs(await store.load(QUEUE_A, 6, 10)) == []
        assert await store.load(QUEUE_A, 0, 0) == []
        assert await store.load("queue://unknown", 0, 10) == []
        assert await store.load(QUEUE_B, 0, 10) == [StoredMessage(QUEUE_B, 2, b"message 2", False)]

    async def test_messages_survive_restart(self, store_factory: StoreFactory) -> None:
        store = store_factory()
        await store.start()
        await store.write([add(1, blob=b"x" * 10), add(2, blob=b"y" * 20), add(3, QUEUE_B)])
        store, recovery = await restart(store, store_factory)
        assert recovery.containers == {
            QUEUE_A: ContainerState(QUEUE_A, count=2, bytes=30, first_seq=1, last_seq=2),
            QUEUE_B: ContainerState(
                QUEUE_B, count=1, bytes=len(b"message 3"), first_seq=3, last_seq=3
            ),
        }
        assert recovery.last_seq >= 3
        assert await store.load(QUEUE_A, 0, 10) == [
            StoredMessage(QUEUE_A, 1, b"x" * 10, False),
            StoredMessage(QUEUE_A, 2, b"y" * 20, False),
        ]

    async def test_remove_message(self, store_factory: StoreFactory) -> None:
        store = store_factory()
        await store.start()
        await store.write([add(1), add(2), add(3), add(4, QUEUE_B)])
        await store.write([RemoveMessage(QUEUE_A, 2), RemoveMessage(QUEUE_B, 4)])
        await store.write([RemoveMessage(QUEUE_A, 99)])  # unknown: nothing to do
        assert seqs(await store.load(QUEUE_A, 0, 10)) == [1, 3]
        store, recovery = await restart(store, store_factory)
        assert seqs(await store.load(QUEUE_A, 0, 10)) == [1, 3]
        assert list(recovery.containers) == [QUEUE_A]  # an emptied container is not reported

    async def test_mark_delivered_survives_restart(self, store_factory: StoreFactory) -> None:
        store = store_factory()
        await store.start()
        await store.write([add(1), add(2)])
        await store.write([MarkDelivered(QUEUE_A, 2), MarkDelivered(QUEUE_A, 99)])
        assert [m.delivered for m in await store.load(QUEUE_A, 0, 10)] == [False, True]
        store, _ = await restart(store, store_factory)
        assert [m.delivered for m in await store.load(QUEUE_A, 0, 10)] == [False, True]

    async def test_add_already_delivered(self, store_factory: StoreFactory) -> None:
        store = store_factory()
        await store.start()
        await store.write([add(1, delivered=True)])
        store, _ = await restart(store, store_factory)
        assert (await store.load(QUEUE_A, 0, 10))[0].delivered

    async def test_purge_container(self, store_factory: StoreFactory) -> None:
        store = store_factory()
        await store.start()
        await store.write([add(1), add(2), add(3, QUEUE_B)])
        await store.write([PurgeContainer(QUEUE_A), add(4)])  # added after the purge: kept
        assert seqs(await store.load(QUEUE_A, 0, 10)) == [4]
        store, recovery = await restart(store, store_factory)
        assert seqs(await store.load(QUEUE_A, 0, 10)) == [4]
        assert seqs(await store.load(QUEUE_B, 0, 10)) == [3]
        assert recovery.containers[QUEUE_A].count == 1

    async def test_add_existing_seq_replaces(self, store_factory: StoreFactory) -> None:
        store = store_factory()
        await store.start()
        await store.write([add(1, blob=b"old")])
        await store.write([add(1, blob=b"new")])
        store, recovery = await restart(store, store_factory)
        assert await store.load(QUEUE_A, 0, 10) == [StoredMessage(QUEUE_A, 1, b"new", False)]
        assert recovery.containers[QUEUE_A].count == 1

    async def test_durable_subscriptions_survive_restart(self, store_factory: StoreFactory) -> None:
        store = store_factory()
        await store.start()
        a, b = subscription("c1", "s1"), subscription("c1", "s2")
        a_changed = subscription("c1", "s1", selector="price > 10")
        await store.write([AddDurableSubscription(a), AddDurableSubscription(b)])
        await store.write(
            [AddDurableSubscription(a_changed), RemoveDurableSubscription("c1", "s2")]
        )
        await store.write([RemoveDurableSubscription("c9", "unknown")])
        store, recovery = await restart(store, store_factory)
        assert recovery.durable_subscriptions == [a_changed]
        await store.write([RemoveDurableSubscription("c1", "s1")])
        store, recovery = await restart(store, store_factory)
        assert recovery.durable_subscriptions == []

    async def test_destinations_survive_restart(self, store_factory: StoreFactory) -> None:
        store = store_factory()
        await store.start()
        await store.write([AddDestination(QUEUE_A), AddDestination("topic://T")])
        await store.write([AddDestination(QUEUE_A), AddDestination(QUEUE_B)])  # A again: once
        await store.write([RemoveDestination("topic://T"), RemoveDestination("queue://never")])
        store, recovery = await restart(store, store_factory)
        assert sorted(recovery.destinations) == [QUEUE_A, QUEUE_B]
        assert recovery.containers == {}  # a destination is not a message container

    async def test_non_persistent_rows_dropped_at_restart(
        self, store_factory: StoreFactory
    ) -> None:
        store = store_factory()
        await store.start()
        await store.write(
            [
                add(1),
                add(2, persistent=False, producer_message_id="spooled"),
                add(3, QUEUE_B, persistent=False),
                add(4, producer_message_id="kept"),
            ]
        )
        assert seqs(await store.load(QUEUE_A, 0, 10)) == [1, 2, 4]  # spooled rows page in
        store, recovery = await restart(store, store_factory)
        assert seqs(await store.load(QUEUE_A, 0, 10)) == [1, 4]
        assert await store.load(QUEUE_B, 0, 10) == []
        assert list(recovery.containers) == [QUEUE_A]
        assert recovery.containers[QUEUE_A].count == 2
        assert recovery.producer_message_ids == ["kept"]

    async def test_last_seq_never_goes_backwards(self, store_factory: StoreFactory) -> None:
        store = store_factory()
        await store.start()
        await store.write([add(10)])
        await store.write([RemoveMessage(QUEUE_A, 10)])
        store, recovery = await restart(store, store_factory)
        assert recovery.last_seq >= 10
        assert recovery.containers == {}
        used = recovery.last_seq
        await store.write([add(used + 20, persistent=False)])
        await store.write([add(used + 15)])
        store, recovery = await restart(store, store_factory)
        assert recovery.last_seq >= used + 20  # the dropped spooled message's seq was used too
        floor = recovery.last_seq
        store, recovery = await restart(store, store_factory)
        assert recovery.last_seq >= floor

    async def test_producer_id_window(self, store_factory: StoreFactory) -> None:
        store = store_factory(producer_id_window=5)
        await store.start()
        for i in range(40):  # enough rows to make a backend prune while running
            await store.write([add(i + 1, producer_message_id=f"p{i}")])
        await store.write([add(41), add(42, producer_message_id="p40")])
        store, recovery = await restart(store, store_factory, producer_id_window=5)
        assert recovery.producer_message_ids == ["p36", "p37", "p38", "p39", "p40"]
        await store.write([add(43, producer_message_id="p41")])
        store, recovery = await restart(store, store_factory, producer_id_window=3)
        assert recovery.producer_message_ids == ["p39", "p40", "p41"]
        store, recovery = await restart(store, store_factory, producer_id_window=3)
        assert recovery.producer_message_ids == ["p39", "p40", "p41"]

    async def test_add_then_remove_in_one_batch_leaves_nothing(
        self, store_factory: StoreFactory
    ) -> None:
        store = store_factory()
        await store.start()
        await store.write(
            [
                add(1, producer_message_id="gone"),
                add(2),
                MarkDelivered(QUEUE_A, 1),
                RemoveMessage(QUEUE_A, 1),
                MarkDelivered(QUEUE_A, 2),
            ]
        )
        assert await store.load(QUEUE_A, 0, 10) == [StoredMessage(QUEUE_A, 2, b"message 2", True)]
        store, recovery = await restart(store, store_factory)
        assert recovery.containers[QUEUE_A].count == 1
        assert recovery.producer_message_ids == ["gone"]  # a duplicate of it is still a duplicate
        assert recovery.last_seq >= 2

    async def test_remove_then_add_again_in_one_batch(self, store_factory: StoreFactory) -> None:
        store = store_factory()
        await store.start()
        await store.write([add(1, blob=b"first")])
        await store.write([RemoveMessage(QUEUE_A, 1), add(1, blob=b"second"), add(2)])
        await store.write([add(3), PurgeContainer(QUEUE_A), add(4), RemoveMessage(QUEUE_A, 4)])
        await store.write([add(5), RemoveMessage(QUEUE_A, 5), add(5, blob=b"back")])
        store, _ = await restart(store, store_factory)
        assert await store.load(QUEUE_A, 0, 10) == [StoredMessage(QUEUE_A, 5, b"back", False)]

    async def test_write_after_stop_fails_and_applies_nothing(
        self, store_factory: StoreFactory
    ) -> None:
        store = store_factory()
        await store.start()
        await store.write([add(1), AddDestination(QUEUE_A)])
        await store.stop()
        with pytest.raises(StoreError):
            await store.write([add(2), RemoveMessage(QUEUE_A, 1), RemoveDestination(QUEUE_A)])
        with pytest.raises(StoreError):
            await store.load(QUEUE_A, 0, 10)
        store = store_factory()
        recovery = await store.start()
        assert seqs(await store.load(QUEUE_A, 0, 10)) == [1]
        assert recovery.destinations == [QUEUE_A]
        assert recovery.last_seq >= 1

    async def test_write_takes_the_batch_at_call_time(self, store_factory: StoreFactory) -> None:
        store = store_factory()
        await store.start()
        batch: list[StoreOp] = [add(1), add(2)]
        written = store.write(batch)
        batch.clear()  # a caller may reuse its list for the next loop turn
        batch.append(add(3))
        await written
        assert seqs(await store.load(QUEUE_A, 0, 10)) == [1, 2]

    async def test_write_before_start_fails(self, store_factory: StoreFactory) -> None:
        store = store_factory()
        with pytest.raises(StoreError):
            await store.write([add(1)])

    async def test_stop_finishes_pending_writes(self, store_factory: StoreFactory) -> None:
        store = store_factory()
        await store.start()
        futures = [store.write([add(seq)]) for seq in range(1, 51)]
        await store.stop()
        assert all(f.done() and f.exception() is None for f in futures)
        store, recovery = await restart(store, store_factory)
        assert recovery.containers[QUEUE_A].count == 50

    async def test_write_futures_resolve_in_submission_order(
        self, store_factory: StoreFactory
    ) -> None:
        store = store_factory()
        await store.start()
        resolved: list[int] = []

        def on_done(i: int) -> Callable[[object], None]:
            return lambda _: resolved.append(i)

        futures = []
        for i in range(100):
            future = store.write([add(i + 1)] if i % 3 else [])  # empty batches keep their place
            future.add_done_callback(on_done(i))
            futures.append(future)
        # gather's own callbacks come after ours on every future, so ours have all run by now
        await asyncio.gather(*futures)
        assert resolved == list(range(100))

    async def test_load_sees_prior_writes(self, store_factory: StoreFactory) -> None:
        store = store_factory()
        await store.start()
        pending = [store.write([add(seq)]) for seq in range(1, 21)]
        pending.append(store.write([RemoveMessage(QUEUE_A, 7), MarkDelivered(QUEUE_A, 8)]))
        loaded = await store.load(QUEUE_A, 0, 100)  # not awaiting the writes first
        assert seqs(loaded) == [s for s in range(1, 21) if s != 7]
        assert [m.seq for m in loaded if m.delivered] == [8]
        await asyncio.gather(*pending)

    async def test_statistics_count_operations(self, store_factory: StoreFactory) -> None:
        store = store_factory()
        await store.start()
        await asyncio.gather(*(store.write([add(2 * i + 1), add(2 * i + 2)]) for i in range(10)))
        stats = store.statistics()
        assert stats.operations == 20
        assert stats.pending_operations == 0
        assert 1 <= stats.commits <= 10
