"""SqliteStore's group commit and coalescing against MemoryStore, which applies ops one by one.

Random batches over a few keys are submitted without waiting (so the writer thread groups and
coalesces them as it likes) or one at a time; both stores must then hold the same thing, before and
after a restart.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ferrymq.store import (
    AddDestination,
    AddDurableSubscription,
    AddMessage,
    DurableSubscriptionRecord,
    MarkDelivered,
    MemoryStorage,
    MemoryStore,
    MessageStore,
    PurgeContainer,
    Recovery,
    RemoveDestination,
    RemoveDurableSubscription,
    RemoveMessage,
    SqliteStore,
    StoredMessage,
    StoreOp,
)

CONTAINERS = ("queue://a", "queue://b")
WINDOW = 4

containers = st.sampled_from(CONTAINERS)
seqs = st.integers(min_value=1, max_value=3)  # few keys, so ops on one message meet
names = st.sampled_from(("s1", "s2"))

adds = st.builds(
    AddMessage,
    container=containers,
    seq=seqs,
    blob=st.binary(max_size=8),
    persistent=st.booleans(),
    producer_message_id=st.none() | st.sampled_from(("p1", "p2", "p3")),
    delivered=st.booleans(),
)
message_ops = st.one_of(
    adds,
    st.builds(RemoveMessage, containers, seqs),
    st.builds(MarkDelivered, containers, seqs),
    st.builds(PurgeContainer, containers),
)
store_ops = st.one_of(
    message_ops,
    message_ops,
    message_ops,
    st.builds(
        AddDurableSubscription,
        st.builds(
            DurableSubscriptionRecord,
            client_id=st.just("c"),
            subscription_name=names,
            destination=st.just("topic://t"),
            selector=st.none() | st.just("a = 1"),
            no_local=st.booleans(),
            container=st.just("durable://c"),
        ),
    ),
    st.builds(RemoveDurableSubscription, st.just("c"), names),
    st.builds(AddDestination, containers),
    st.builds(RemoveDestination, containers),
)
# (batch, wait for it before submitting the next one)
waits = st.sampled_from((False, False, False, True))
scenarios = st.lists(st.tuples(st.lists(store_ops, max_size=10), waits), max_size=12)


async def contents(store: MessageStore) -> dict[str, list[StoredMessage]]:
    return {c: await store.load(c, 0, 100) for c in CONTAINERS}


def normalized(recovery: Recovery) -> tuple[object, ...]:
    """Recovery with the lists whose order the protocol leaves open sorted, without
    ``last_seq`` (a floor: SQLite's is raised to its epoch's range, compared on its own)."""
    return (
        recovery.containers,
        sorted(recovery.durable_subscriptions, key=lambda r: r.subscription_name),
        sorted(recovery.destinations),
        recovery.producer_message_ids,
    )


async def run(scenario: list[tuple[list[StoreOp], bool]], directory: Path) -> None:
    sqlite = SqliteStore(directory, synchronous="OFF", producer_id_window=WINDOW)
    storage = MemoryStorage()
    memory = MemoryStore(storage, producer_id_window=WINDOW)
    await sqlite.start()
    await memory.start()
    pending = []
    for batch, wait in scenario:
        memory.write(batch)
        pending.append(sqlite.write(batch))
        if wait:
            await pending[-1]
    assert await contents(sqlite) == await contents(memory)
    await asyncio.gather(*pending)
    await sqlite.stop()
    await memory.stop()

    sqlite = SqliteStore(directory, synchronous="OFF", producer_id_window=WINDOW)
    memory = MemoryStore(storage, producer_id_window=WINDOW)
    recovered, expected = await sqlite.start(), await memory.start()
    assert normalized(recovered) == normalized(expected)
    assert recovered.last_seq >= expected.last_seq
    assert await contents(sqlite) == await contents(memory)
    await sqlite.stop()
    await memory.stop()


@settings(max_examples=150, deadline=None)
@given(scenarios)
def test_sqlite_matches_one_by_one_application(
    scenario: list[tuple[list[StoreOp], bool]],
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(run(scenario, Path(directory)))
