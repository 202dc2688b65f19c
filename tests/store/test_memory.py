"""MemoryStore: the conformance suite, plus what only an in-memory store has."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from ferrymq.store import (
    DEFAULT_PRODUCER_ID_WINDOW,
    AddMessage,
    MemoryStorage,
    MemoryStore,
    MessageStore,
    StoreError,
)

from .conformance import StoreConformance, StoreFactory


class TestMemoryStoreConformance(StoreConformance):
    @pytest.fixture
    async def store_factory(self) -> AsyncIterator[StoreFactory]:
        storage = MemoryStorage()
        created: list[MessageStore] = []

        def factory(*, producer_id_window: int = DEFAULT_PRODUCER_ID_WINDOW) -> MessageStore:
            store = MemoryStore(storage, producer_id_window=producer_id_window)
            created.append(store)
            return store

        yield factory
        for store in created:
            await store.stop()


async def test_storage_is_used_by_one_store_at_a_time() -> None:
    storage = MemoryStorage()
    first = MemoryStore(storage)
    await first.start()
    with pytest.raises(StoreError, match="already in use"):
        await MemoryStore(storage).start()
    await first.stop()
    second = MemoryStore(storage)
    await second.start()
    await second.stop()


async def test_a_store_without_storage_starts_empty_every_time() -> None:
    store = MemoryStore()
    await store.start()
    await store.write([AddMessage("queue://A", 1, b"x")])
    await store.stop()
    other = MemoryStore()
    recovery = await other.start()
    assert recovery.containers == {}
    await other.stop()


async def test_write_rejects_what_is_not_an_operation() -> None:
    store = MemoryStore()
    await store.start()
    with pytest.raises(TypeError, match="not a store operation"):
        store.write(["queue://A"])  # type: ignore[list-item]
    await store.stop()
