"""Optimizing routes in a mesh: seed 001 chapter 7, Figures 7.1 and 7.2.

Every broker runs in this process. Each link of a figure is a pair of plain connectors, one on
each broker, so every demand subscription a broker holds belongs to one of its own bridges (and
to its own ``RouteRegistry``, which is what suppressDuplicateQueueSubscriptions consults).
"""

from __future__ import annotations

from pathlib import Path

from ferrymq.client import Message, Subscription, connect
from ferrymq.core.consumer import AckMode, Consumer, NetworkFilter
from ferrymq.testing.network import BrokerNetwork
from tests.core.harness import Harness, q
from tests.network.conftest import QUIET_S, WAIT_S, paths, settle

QUEUE = "/queue/TEST.FOO"
DEMAND = "queue://TEST.FOO"

SHORTEST = 'networkTTL="3" decreaseNetworkConsumerPriority="true"'
FIGURE_7_1 = {
    "A": "BF",
    "B": "AEC",
    "C": "BD",
    "D": "CE",
    "E": "FBD",
    "F": "AE",
}
"""The mesh of Figure 7.1: its routes from B to E are BAFE, BE and BCDE."""


def mesh(path: Path, links: dict[str, str], attrs: str) -> BrokerNetwork:
    """A broker per key, each with a connector ``linkTo<X>`` to every neighbour X."""
    net = BrokerNetwork(path)
    for name, neighbours in links.items():
        net.add(
            name,
            "".join(
                f'<networkConnector name="linkTo{peer}" uri="static:({{{peer}}})" {attrs}/>'
                for peer in neighbours
            ),
        )
    return net


def route(demand: dict[str, object]) -> tuple[int, tuple[str, ...]]:
    """(priority, broker path) of one demand subscription in a bridge's statistics."""
    priority, path = demand["priority"], demand["brokerPath"]
    assert isinstance(priority, int)
    assert isinstance(path, list)
    return priority, tuple(str(broker) for broker in path)


def routes(net: BrokerNetwork, name: str) -> list[tuple[int, tuple[str, ...]]]:
    """Broker ``name``'s demand subscriptions for TEST.FOO: (priority, path), best first."""
    found = [route(d) for d in net.demand(name, DEMAND)]
    return sorted(found, key=lambda r: (-r[0], r[1]))


async def receive(sub: Subscription, count: int) -> list[Message]:
    """``count`` messages, each acknowledged, then a quiet period with nothing more."""
    received = []
    for _ in range(count):
        message = await sub.get(timeout=WAIT_S)
        received.append(message)
        await message.ack()
    try:
        extra = await sub.get(timeout=QUIET_S)
    except TimeoutError:
        extra = None
    assert extra is None, f"one message too many: {extra!r}"
    return received


# -- §7.2 choosing the shortest route ----------------------------------------------------------


async def test_shortest_route_in_a_mesh(tmp_path: Path) -> None:
    """seed 001 Figure 7.1: with decreaseNetworkConsumerPriority and networkTTL 3 on every
    connector, B holds one subscription per route to C1 on E: PBEC1 at -5, PBAFEC1 and PBCDEC1
    (three hops) at -7. 200 messages fit the direct route's prefetch (1000), so all of them
    take PBEC1 and reach C1 with the broker path "B"."""
    net = mesh(tmp_path, FIGURE_7_1, SHORTEST)
    async with net:
        await net.wait_for_bridges()
        c1 = await connect(net.url("E"))
        sub = await c1.subscribe(QUEUE, ack="client-individual")
        expected = [(-5, ("E",)), (-7, ("E", "D", "C")), (-7, ("E", "F", "A"))]
        await settle(lambda: routes(net, "B") == expected, f"B's routes {expected}")

        bodies = await net.produce("B", QUEUE, 200)
        received = await receive(sub, 200)

        assert sorted(m.text for m in received) == bodies
        assert paths(received) == {"B"}
        forwarded = {route(d)[1]: d["forwarded"] for d in net.demand("B", DEMAND)}
        assert forwarded == {("E",): 200, ("E", "D", "C"): 0, ("E", "F", "A"): 0}
        await c1.disconnect()


def demand_subscription(
    harness: Harness, bridge: str, priority: int, *, prefetch: int = 1000
) -> Consumer:
    """A bridge's demand subscription for TEST.FOO on B, built as the service builds one."""
    harness.connect(bridge)
    consumer = Consumer(
        bridge,
        "demand-1",
        q("TEST.FOO"),
        ack_mode=AckMode.CLIENT_INDIVIDUAL,
        prefetch=prefetch,
        priority=priority,
        network=True,
        network_filter=NetworkFilter(bridge.removeprefix("to-"), message_ttl=3),
    )
    harness.region.subscribe(consumer)
    harness.collect()
    return consumer


def test_the_next_route_takes_over_only_while_the_best_is_full() -> None:
    """seed 001 §7.2 "Route priority and broker load", Figure 7.1 at broker B: the broker
    sends to the highest-priority subscription (connector BE, -5) until its prefetch is full,
    then to the next; the two -7 routes (PBAFEC1, PBCDEC1) share on an alternating basis."""
    harness = Harness()
    harness.connect("producer")
    direct = demand_subscription(harness, "to-E", -5, prefetch=4)
    via_a = demand_subscription(harness, "to-A", -7)
    via_c = demand_subscription(harness, "to-C", -7)
    for i in range(10):
        harness.send("producer", q("TEST.FOO"), f"{i}".encode())

    taken = harness.taken(direct)
    assert [d.entry.message.body for d in taken] == [b"0", b"1", b"2", b"3"]
    assert harness.bodies(via_a) == [b"4", b"6", b"8"]
    assert harness.bodies(via_c) == [b"5", b"7", b"9"]

    # Two acks on BE free two places: the shortest route is preferred again at once.
    for delivery in taken[:2]:
        harness.ack(delivery)
    for i in range(10, 14):
        harness.send("producer", q("TEST.FOO"), f"{i}".encode())
    assert harness.bodies(direct) == [b"10", b"11"]
    assert harness.bodies(via_a) == [b"12"]  # and the alternation goes on where it was
    assert harness.bodies(via_c) == [b"13"]


# -- §7.3 suppressing duplicate routes ---------------------------------------------------------

TRIANGLE = {"A": "BC", "B": "AC", "C": "AB"}
"""Figure 7.2: A, B and C fully connected."""
TTL_2 = 'networkTTL="2" decreaseNetworkConsumerPriority="true"'
SUPPRESS = TTL_2 + ' suppressDuplicateQueueSubscriptions="true"'


async def test_duplicate_subscriptions_without_suppression(tmp_path: Path) -> None:
    """seed 001 Figure 7.2: with networkTTL 2, A hears of C1 on B twice and holds two
    subscriptions for it: the short route PABC1 (-5) and the long route PACBC1 (-6)."""
    net = mesh(tmp_path, TRIANGLE, TTL_2)
    async with net:
        await net.wait_for_bridges()
        c1 = await connect(net.url("B"))
        await c1.subscribe(QUEUE, ack="client-individual")
        expected = [(-5, ("B",)), (-6, ("B", "C"))]
        await settle(lambda: routes(net, "A") == expected, f"A's routes {expected}")
        assert routes(net, "C") == [(-5, ("B",)), (-6, ("B", "A"))]
        assert net["A"].network.routes.suppressed == 0
        await c1.disconnect()


async def test_suppressed_duplicates_make_routing_deterministic(tmp_path: Path) -> None:
    """seed 001 Figure 7.2 with suppressDuplicateQueueSubscriptions: A keeps only the short
    route PABC1 (the long one is heard and suppressed), every message reaches C1 with the broker
    path "A", none waits on C; once C1 leaves no route remains, so nothing is sent to a dead
    end: new messages wait on A."""
    net = mesh(tmp_path, TRIANGLE, SUPPRESS)
    async with net:
        await net.wait_for_bridges()
        c1 = await connect(net.url("B"))
        sub = await c1.subscribe(QUEUE, ack="client-individual")

        def one_route_each() -> bool:
            return all(
                routes(net, name) == [(-5, ("B",))] and net[name].network.routes.suppressed == 1
                for name in "AC"
            )

        await settle(one_route_each, "one open and one suppressed route on A and on C")

        bodies = await net.produce("A", QUEUE, 100)
        received = await receive(sub, 100)
        assert sorted(m.text for m in received) == bodies
        assert paths(received) == {"A"}
        assert [net.queue_depth(name, "TEST.FOO") for name in "ABC"] == [0, 0, 0]

        await sub.unsubscribe()

        def no_route() -> bool:
            return all(
                routes(net, name) == [] and net[name].network.routes.suppressed == 0
                for name in "AC"
            )

        await settle(no_route, "no route left on A or C")
        await net.produce("A", QUEUE, 10)
        await settle(
            lambda: [net.queue_depth(name, "TEST.FOO") for name in "ABC"] == [10, 0, 0],
            "10 messages waiting on A",
        )
        await c1.disconnect()


async def test_a_suppressed_route_reopens_when_the_short_one_goes(tmp_path: Path) -> None:
    """seed 001 Figure 7.2 with suppression: when A's connector to B stops, the short route
    PABC1 is gone while C1 is still reachable through C, and the suppressed long route PACBC1
    opens at once (ActiveMQ would wait for a new advisory), so messages still reach C1."""
    net = mesh(tmp_path, TRIANGLE, SUPPRESS)
    async with net:
        await net.wait_for_bridges()
        c1 = await connect(net.url("B"))
        sub = await c1.subscribe(QUEUE, ack="client-individual")
        await settle(
            lambda: routes(net, "A") == [(-5, ("B",))] and net["A"].network.routes.suppressed == 1,
            "A's short route open, its long route suppressed",
        )

        (to_b,) = [c for c in net["A"].network.connectors if c.name == "linkToB"]
        await to_b.stop()
        await settle(
            lambda: (
                routes(net, "A") == [(-6, ("B", "C"))] and net["A"].network.routes.suppressed == 0
            ),
            "A's long route open",
        )

        bodies = await net.produce("A", QUEUE, 20)
        received = await receive(sub, 20)
        assert sorted(m.text for m in received) == bodies
        assert paths(received) == {"A,C"}
        await c1.disconnect()
