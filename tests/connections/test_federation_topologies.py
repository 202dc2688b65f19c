"""Address federation across more than two brokers: a chain, a ring with max-hops, a full
mesh with max-hops 1. Every consumer receives every message once, counted by id."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ferrymq.broker import Broker
from ferrymq.client import Subscription
from tests.connections.federation_support import (
    Federation,
    client,
    drain,
    federated,
    federation_subscriptions,
    has_subscriptions,
    receive,
    until,
)


def policy(max_hops: int) -> str:
    return (
        f'<local-address-policy name="p" max-hops="{max_hops}"><include address-match="news.#"/>'
        "</local-address-policy>"
    )


async def test_chain_of_three_brokers(tmp_path: Path) -> None:
    """A <- B <- C: A's consumer is demand on B (through A's receiver there), which B's
    federation takes to C; a message produced on C reaches A once, after two hops."""
    topology = {
        "C": (),
        "B": (Federation("C", policy(0)),),
        "A": (Federation("B", policy(0)),),
    }
    async with federated(tmp_path, topology) as brokers:
        a, c = await client(brokers["A"]), await client(brokers["C"])
        consumer = await a.subscribe("/topic/news.eu")
        await until(lambda: len(federation_subscriptions(brokers["C"], "news.eu")) == 1, "on C")
        for n in range(20):
            await c.send("/topic/news.eu", "x", headers={"n": str(n)}, persistent=True)
        got = await receive(consumer, 20)
        assert sorted(got, key=int) == [str(n) for n in range(20)]
        assert await drain(consumer) == []
        await consumer.unsubscribe()
        await until(lambda: federation_subscriptions(brokers["C"], "news.eu") == [], "chain gone")
        await a.close()
        await c.close()


async def _everyone_gets_everything_once(
    brokers: dict[str, Broker], names: list[str], neighbours: int
) -> None:
    clients = {n: await client(brokers[n]) for n in names}
    consumers: dict[str, Subscription] = {
        n: await clients[n].subscribe("/topic/news.eu") for n in names
    }
    # Every broker has its own consumer and the federation subscriptions of its neighbours.
    for n in names:
        await until(
            has_subscriptions(brokers[n], "news.eu", neighbours, federation=True),
            f"federation subscription on {n}",
        )
    per_broker = 10
    for n in names:
        for i in range(per_broker):
            await clients[n].send("/topic/news.eu", "x", headers={"n": f"{n}{i}"})
    expected = sorted(f"{n}{i}" for n in names for i in range(per_broker))
    for n in names:
        got = await receive(consumers[n], len(expected))
        got += await drain(consumers[n], 1.0)
        duplicates = [k for k, count in Counter(got).items() if count > 1]
        assert duplicates == [], f"{n} received twice: {duplicates}"
        assert sorted(got) == expected, f"{n} missed {set(expected) - set(got)}"
    for connection in clients.values():
        await connection.close()


async def test_ring_of_three_with_max_hops(tmp_path: Path) -> None:
    """A <- B <- C <- A, max-hops 2: a message goes round to the two other brokers and stops
    before it comes back (its path names its origin, and it made two hops)."""
    topology = {
        "A": (Federation("B", policy(2)),),
        "B": (Federation("C", policy(2)),),
        "C": (Federation("A", policy(2)),),
    }
    async with federated(tmp_path, topology) as brokers:
        await _everyone_gets_everything_once(brokers, ["A", "B", "C"], 1)


async def test_full_mesh_with_max_hops_one(tmp_path: Path) -> None:
    """Each broker federates from both others; max-hops 1 keeps a message to the one hop from
    its origin, so nobody also gets it the long way round."""
    topology = {
        name: tuple(Federation(other, policy(1)) for other in "ABC" if other != name)
        for name in "ABC"
    }
    async with federated(tmp_path, topology) as brokers:
        await _everyone_gets_everything_once(brokers, ["A", "B", "C"], 2)
