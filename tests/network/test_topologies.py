"""The network topologies of seed 001 chapter 6 (Figures 6.1-6.4) and 9.3, each with real
brokers: every message is consumed exactly once, none twice, none left behind.

Brokers start in the order they are added and every connector points at brokers added before
it, so no bridge waits out a reconnect delay. Queue consumers keep the default prefetch (1000):
a broker alternates strictly between its equal-priority subscriptions, which makes the shares
below exact rather than approximate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pytest

from ferrymq.client import Connection, Message, Subscription, connect
from ferrymq.testing.network import BrokerNetwork, receive_all
from tests.network.conftest import counts, paths


def bodies(received: Mapping[str, Sequence[Message]]) -> list[bytes]:
    return sorted(m.body for messages in received.values() for m in messages)


def depths(net: BrokerNetwork, queue: str) -> dict[str, int]:
    return {name: net.queue_depth(name, queue) for name in net.brokers}


async def connections(net: BrokerNetwork, names: Iterable[str]) -> dict[str, Connection]:
    return {name: await connect(net.url(name)) for name in names}


async def close_all(opened: Mapping[str, Connection]) -> None:
    for connection in opened.values():
        await connection.close()


async def produce(
    opened: Mapping[str, Connection], producers: Iterable[str], destination: str, count: int
) -> list[bytes]:
    sent = []
    for name in producers:
        for i in range(count):
            body = f"{name}-{i}".encode()
            await opened[name].send(destination, body)
            sent.append(body)
    return sorted(sent)


async def consumed_once(
    net: BrokerNetwork,
    opened: Mapping[str, Connection],
    producers: Iterable[str],
    count: int,
    queue: Mapping[str, Subscription],
    shares: dict[str, int],
) -> dict[str, list[Message]]:
    """``count`` messages to ORDERS from each producer: each is consumed exactly once, by the
    queue consumers in these ``shares``, and none is left on any broker. Returns what each got."""
    sent = await produce(opened, producers, "/queue/ORDERS", count)
    received = await receive_all(queue, expected=sum(shares.values()))
    assert counts(received) == shares
    assert bodies(received) == sent
    assert set(depths(net, "ORDERS").values()) == {0}
    return received


async def each_gets_every_copy(
    opened: Mapping[str, Connection],
    producers: Iterable[str],
    count: int,
    topic: Mapping[str, Subscription],
    expected: dict[str, int],
) -> None:
    """``count`` messages to PRICES from each producer: every topic consumer gets ``expected``
    of them, each message once."""
    sent = await produce(opened, producers, "/topic/PRICES", count)
    received = await receive_all(topic, expected=sum(expected.values()))
    assert counts(received) == expected
    for messages in received.values():
        assert sorted(m.body for m in messages) == sent


async def test_concentrator(tmp_path: Path) -> None:
    """seed 001 Figure 6.1 / Figure 9.3: producers on the first layer A, B, C, each of which
    connects to both brokers of the second layer X and Y, where the consumers are. 10 messages
    from each producer: every first-layer broker alternates between its two routes, so X and Y
    get 15 each; a topic consumer on each of X and Y gets all 30, once."""
    net = BrokerNetwork(tmp_path)
    for name in ("X", "Y"):
        net.add(name)
    for name in ("A", "B", "C"):
        net.add(name, '<networkConnector uri="static:({X},{Y})"/>')
    async with net:
        await net.wait_for_bridges()
        opened = await connections(net, net.brokers)
        queue = {n: await opened[n].subscribe("/queue/ORDERS") for n in ("X", "Y")}
        topic = {f"{n}:topic": await opened[n].subscribe("/topic/PRICES") for n in ("X", "Y")}
        for name in ("A", "B", "C"):
            await net.wait_for_demand(name, "queue://ORDERS", count=2)
            await net.wait_for_demand(name, "topic://PRICES", count=2)

        await consumed_once(net, opened, ("A", "B", "C"), 10, queue, {"X": 15, "Y": 15})
        await each_gets_every_copy(
            opened, ("A", "B", "C"), 10, topic, {"X:topic": 30, "Y:topic": 30}
        )
        await close_all(opened)


SPOKES = ("S1", "S2", "S3", "S4")


async def test_hub_and_spoke(tmp_path: Path) -> None:
    """seed 001 Figure 6.2: every spoke opens a duplex connector to the hub H, and a message
    crosses two hops (spoke, hub, spoke), hence networkTTL="2". Producers on S1 and S2 send 10
    queue messages each; the hub alternates between the routes to the consumers on S3 and S4
    (10 each). A topic consumer on each of S3 and S4 gets every message once."""
    net = BrokerNetwork(tmp_path)
    net.add("H")
    for name in SPOKES:
        net.add(name, '<networkConnector uri="static:({H})" duplex="true" networkTTL="2"/>')
    async with net:
        await net.wait_for_bridges()
        assert net.bridges("H") == []  # the hub configures nothing
        opened = await connections(net, net.brokers)
        queue = {n: await opened[n].subscribe("/queue/ORDERS") for n in ("S3", "S4")}
        topic = {f"{n}:topic": await opened[n].subscribe("/topic/PRICES") for n in ("S3", "S4")}
        await net.wait_for_demand("H", "queue://ORDERS", count=2)
        await net.wait_for_demand("H", "topic://PRICES", count=2)
        for name in ("S1", "S2"):
            await net.wait_for_demand(name, "queue://ORDERS", count=2)
            await net.wait_for_demand(name, "topic://PRICES")

        received = await consumed_once(net, opened, ("S1", "S2"), 10, queue, {"S3": 10, "S4": 10})
        assert paths(m for ms in received.values() for m in ms) == {"S1,H", "S2,H"}
        await each_gets_every_copy(
            opened, ("S1", "S2"), 10, topic, {"S3:topic": 20, "S4:topic": 20}
        )
        await close_all(opened)


TREE = {"A": "R", "B": "R", "A1": "A", "A2": "A", "B1": "B", "B2": "B"}
"""seed 001 Figure 6.3, three levels: child -> parent, every child connecting to its parent."""


async def test_tree(tmp_path: Path) -> None:
    """seed 001 Figure 6.3: each broker opens a duplex connector to its parent. From leaf A1 to
    leaf B1 a message crosses four hops (A1, A, R, B, B1), so networkTTL="4"; A1's sibling A2 is
    two hops away. A alternates between A2 and the route up to R: 10 queue messages give 5 to
    each leaf; a topic consumer on each leaf gets all 10, once."""
    net = BrokerNetwork(tmp_path)
    net.add("R")
    for child, parent in TREE.items():
        net.add(
            child, f'<networkConnector uri="static:({{{parent}}})" duplex="true" networkTTL="4"/>'
        )
    async with net:
        await net.wait_for_bridges()
        opened = await connections(net, ("A1", "A2", "B1"))
        queue = {n: await opened[n].subscribe("/queue/ORDERS") for n in ("A2", "B1")}
        topic = {f"{n}:topic": await opened[n].subscribe("/topic/PRICES") for n in ("A2", "B1")}
        await net.wait_for_demand("A1", "queue://ORDERS", count=2)
        await net.wait_for_demand("A1", "topic://PRICES")
        await net.wait_for_demand("A", "queue://ORDERS", count=2)

        received = await consumed_once(net, opened, ("A1",), 10, queue, {"A2": 5, "B1": 5})
        assert paths(received["A2"]) == {"A1,A"}
        assert paths(received["B1"]) == {"A1,A,R,B"}
        await each_gets_every_copy(opened, ("A1",), 10, topic, {"A2:topic": 10, "B1:topic": 10})
        await close_all(opened)


MESH = ("A", "B", "C", "D")


def mesh(path: Path, ttl: str) -> BrokerNetwork:
    """A full mesh (K4): one duplex connector per pair, opened by the later broker."""
    net = BrokerNetwork(path)
    for i, name in enumerate(MESH):
        peers = ",".join(f"{{{peer}}}" for peer in MESH[:i])
        net.add(
            name, f'<networkConnector uri="static:({peers})" duplex="true" {ttl}/>' if i else ""
        )
    return net


MESH_TTLS = [
    pytest.param('networkTTL="1"', id="networkTTL=1"),
    pytest.param('consumerTTL="1" messageTTL="3"', id="consumerTTL=1"),
]


@pytest.mark.parametrize("ttl", MESH_TTLS)
async def test_mesh(tmp_path: Path, ttl: str) -> None:
    """seed 001 Figure 6.4, fully connected as chapter 6's complete graph requires, with
    networkTTL=1, or consumerTTL=1 and a larger messageTTL (reference §9 item 9, AMQ-4607): every
    broker learns each consumer by its direct route only. A producer on A sends 12 queue messages
    to consumers on A, B, C and D: each message is consumed exactly once and nothing is left on
    any broker."""
    async with mesh(tmp_path, ttl) as net:
        await net.wait_for_bridges()
        opened = await connections(net, MESH)
        queue = {n: await opened[n].subscribe("/queue/ORDERS") for n in MESH}
        for name in MESH:
            # Three direct routes per broker; a route through a third broker is refused.
            await net.wait_for_demand(name, "queue://ORDERS", count=3)
            assert len(net.demand(name, "queue://ORDERS")) == 3

        sent = await produce(opened, ("A",), "/queue/ORDERS", 12)
        received = await receive_all(queue, expected=12)
        assert bodies(received) == sent
        if ttl == 'networkTTL="1"':
            # A alternates over its consumer and three routes, which go no further. (With
            # messageTTL="3" B may pass some of its three on to C or D: only the total is fixed.)
            assert counts(received) == {"A": 3, "B": 3, "C": 3, "D": 3}
        assert set(depths(net, "ORDERS").values()) == {0}
        await close_all(opened)


@pytest.mark.parametrize("ttl", MESH_TTLS)
async def test_mesh_topic_without_duplicates(tmp_path: Path, ttl: str) -> None:
    """seed 001 chapter 6 "Complete graph": a topic message published on A or C reaches the
    consumer on every broker of the mesh exactly once. With messageTTL="3" the brokers do pass
    copies on (B forwards A's message to C and D), and the receiving broker's duplicate detection
    drops them: the forwarded copies keep the producer's message id."""
    async with mesh(tmp_path, ttl) as net:
        await net.wait_for_bridges()
        opened = await connections(net, MESH)
        topic = {n: await opened[n].subscribe("/topic/PRICES") for n in MESH}
        for name in MESH:
            await net.wait_for_demand(name, "topic://PRICES", count=3)

        await each_gets_every_copy(opened, ("A", "C"), 5, topic, dict.fromkeys(MESH, 10))
        await close_all(opened)
