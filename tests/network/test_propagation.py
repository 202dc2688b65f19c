"""How messages travel a network of brokers: seed 001 chapters 2 and 3, with their counts.

Every broker runs in this process (nothing is killed here) and is configured with the seeds' own
``<networkConnector>`` fragments. Messages are counted by body and by message id, so a loss or a
duplicate fails a test as surely as a wrong count. Brokers are started targets first, so each
bridge finds its peer at once instead of after the static agent's back-off.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ferrymq.client import Connection, Message, Subscription, connect
from ferrymq.core.destination import Destination
from ferrymq.testing import wait_until
from ferrymq.testing.network import BrokerNetwork
from tests.network.conftest import QUIET_S, WAIT_S, paths, quiet, settle

QUEUE = "/queue/TEST.FOO"
QUEUE_NAME = "TEST.FOO"
DEMAND = "queue://TEST.FOO"

STATIC_FOO = """<staticallyIncludedDestinations>
  <queue physicalName="TEST.FOO"/>
</staticallyIncludedDestinations>"""


def connector(target: str, attrs: str = 'networkTTL="3"', body: str = "") -> str:
    """A ``<networkConnector>`` to broker ``target`` (``BrokerNetwork`` fills in its URL)."""
    return (
        f'<networkConnector name="linkTo{target}" uri="static:({{{target}}})" {attrs}>'
        f"{body}</networkConnector>"
    )


def duplex_static(target: str) -> str:
    """A duplex connector to ``target`` propagating TEST.FOO statically in both directions."""
    return connector(target, 'networkTTL="3" duplex="true"', STATIC_FOO)


async def browse_ids(net: BrokerNetwork, broker: str) -> dict[str, str | None]:
    """Body -> message id of what TEST.FOO holds on ``broker``, without consuming it."""
    conn = await connect(net.url(broker))
    try:
        sub = await conn.subscribe(QUEUE, browser=True)
        return {m.text: m.message_id async for m in sub}
    finally:
        await conn.disconnect()


async def take(sub: Subscription, count: int) -> list[Message]:
    """``count`` messages from ``sub``, each acknowledged once the broker has settled it."""
    received = []
    for _ in range(count):
        message = await sub.get(timeout=WAIT_S)
        await message.ack(receipt=True)
        received.append(message)
    return received


async def drain(net: BrokerNetwork, broker: str, count: int) -> list[Message]:
    """Consume the ``count`` messages TEST.FOO holds on ``broker`` (callers have checked the
    depth is exactly ``count`` and stable); afterwards the queue there is empty."""
    conn = await connect(net.url(broker))
    try:
        received = await take(await conn.subscribe(QUEUE, ack="client-individual"), count)
    finally:
        await conn.disconnect()
    assert net.queue_depth(broker, QUEUE_NAME) == 0
    return received


async def nothing_more(sub: Subscription) -> None:
    """No further message reaches ``sub`` during a quiet period."""
    try:
        extra = await sub.get(timeout=QUIET_S)
    except TimeoutError:
        return
    pytest.fail(f"one message too many: {extra!r}")


def depths(net: BrokerNetwork, names: tuple[str, ...]) -> dict[str, int]:
    return {name: net.queue_depth(name, QUEUE_NAME) for name in names}


async def wait_depths(net: BrokerNetwork, expected: dict[str, int]) -> None:
    """Until the brokers hold exactly ``expected`` messages on TEST.FOO, and keep holding them."""
    names = tuple(expected)
    await settle(lambda: depths(net, names) == expected, f"TEST.FOO depths {expected}")


async def wait_routes(net: BrokerNetwork, expected: dict[str, int]) -> None:
    """Until each broker has exactly ``expected`` demand subscriptions for TEST.FOO, and keeps
    them (sending earlier would let a round robin see only some of the routes)."""
    names = tuple(expected)

    def routes() -> bool:
        return {name: len(net.demand(name, DEMAND)) for name in names} == expected

    await settle(routes, f"demand subscriptions {expected}")


def network_consumers(net: BrokerNetwork, broker: str) -> int:
    """Demand subscriptions consuming TEST.FOO on ``broker``, as its queue sees them."""
    queue = net[broker].service.region.queues.get(Destination.queue(QUEUE_NAME))
    return sum(1 for consumer in queue.consumers if consumer.network) if queue else 0


def assert_once(received: list[Message], bodies: list[str]) -> None:
    """Each body exactly once (no loss, no duplicate), every message id distinct."""
    assert sorted(m.text for m in received) == sorted(bodies)
    assert len({m.message_id for m in received}) == len(received)


# -- chapter 3: dynamic and static propagation -------------------------------------------------


async def test_dynamic_propagation_waits_for_a_consumer(tmp_path: Path) -> None:
    """seed 001 Figure 3.1: simple connectors A->B->C->E (and C->D); with no consumer anywhere
    the messages accumulate on A and go no further; a consumer C on E then receives all of
    them along the path ABCE, with the ids A gave them."""
    net = BrokerNetwork(tmp_path)
    net.add("E")
    net.add("D")
    net.add("C", connector("D") + connector("E"))
    net.add("B", connector("C"))
    net.add("A", connector("B"))
    async with net:
        await net.wait_for_bridges()
        bodies = await net.produce("A", QUEUE, 20)
        await wait_depths(net, {"A": 20, "B": 0, "C": 0, "D": 0, "E": 0})
        ids_on_a = await browse_ids(net, "A")
        assert sorted(ids_on_a) == sorted(bodies)

        conn = await connect(net.url("E"))
        sub = await conn.subscribe(QUEUE, ack="client-individual")
        received = await take(sub, 20)
        await nothing_more(sub)
        await conn.disconnect()

        assert_once(received, bodies)
        assert {m.text: m.message_id for m in received} == ids_on_a
        assert paths(received) == {"A,B,C"}
        await wait_depths(net, {"A": 0, "B": 0, "C": 0, "D": 0, "E": 0})


async def test_static_propagation(tmp_path: Path) -> None:
    """seed 001 Figure 3.2: TEST.FOO propagates statically on (A,B), (B,C), (C,D) and (C,E);
    10 messages sent to A with no consumer anywhere end as 5 on D and 5 on E."""
    net = BrokerNetwork(tmp_path)
    net.add("E")
    net.add("D")
    net.add("C", connector("D", body=STATIC_FOO) + connector("E", body=STATIC_FOO))
    net.add("B", connector("C", body=STATIC_FOO))
    net.add("A", connector("B", body=STATIC_FOO))
    async with net:
        await net.wait_for_bridges()
        await wait_routes(net, {"C": 2})
        for name in ("A", "B"):
            await net.wait_for_demand(name, DEMAND)
        bodies = await net.produce("A", QUEUE, 10)

        await wait_depths(net, {"A": 0, "B": 0, "C": 0, "D": 5, "E": 5})
        on_e = await drain(net, "E", 5)
        # The NOTE after Figure 3.2: a consumer on E does not get the 5 stuck on D.
        assert net.queue_depth("D", QUEUE_NAME) == 5
        on_d = await drain(net, "D", 5)
        assert_once(on_d + on_e, bodies)
        assert paths(on_d + on_e) == {"A,B,C"}


def figure_3_3(path: Path) -> BrokerNetwork:
    """Duplex connectors {B,C}, {C,D}, {C,E}, each defined by the broker named first (as the
    simple connectors of Figure 3.2); D and E configure nothing."""
    net = BrokerNetwork(path)
    net.add("E")
    net.add("D")
    net.add("C", duplex_static("D") + duplex_static("E"))
    net.add("B", duplex_static("C"))
    return net


async def test_duplex_static_propagation_from_b(tmp_path: Path) -> None:
    """seed 001 Figure 3.3 (a): duplex connectors {B,C}, {C,D}, {C,E}, all propagating TEST.FOO
    statically; 10 messages sent to B end as 5 on D and 5 on E."""
    async with figure_3_3(tmp_path) as net:
        await net.wait_for_bridges()
        # C has its static routes to B, D and E, nothing more (every other route it hears of
        # comes through C); each of the others has its static route to C and one for each of
        # C's routes to the two other brokers.
        await wait_routes(net, dict.fromkeys("BCDE", 3))
        bodies = await net.produce("B", QUEUE, 10)

        await wait_depths(net, {"B": 0, "C": 0, "D": 5, "E": 5})
        received = await drain(net, "D", 5) + await drain(net, "E", 5)
        assert_once(received, bodies)
        assert paths(received) == {"B,C"}


async def test_duplex_static_propagation_from_c(tmp_path: Path) -> None:
    """seed 001 Figure 3.3 (b): in the same network 9 messages sent to C go alternately to B, D
    and E: 3 on each."""
    async with figure_3_3(tmp_path) as net:
        await net.wait_for_bridges()
        await wait_routes(net, dict.fromkeys("BCDE", 3))
        bodies = await net.produce("C", QUEUE, 9)

        await wait_depths(net, {"B": 3, "C": 0, "D": 3, "E": 3})
        received = [m for name in "BDE" for m in await drain(net, name, 3)]
        assert_once(received, bodies)
        assert paths(received) == {"C"}


async def test_self_avoiding_paths(tmp_path: Path) -> None:
    """seed 001 Figure 3.4: A, B and C linked by statically configured duplex connectors form
    the loop ABCA; of 100 messages sent to A, the 50 sent to B move on to C and stay there, the
    50 sent to C move on to B and stay there: none returns to a broker it has visited, even
    when a consumer there asks for it."""
    net = BrokerNetwork(tmp_path)
    net.add("A", duplex_static("B"))
    net.add("B", duplex_static("C"))
    net.add("C", duplex_static("A"))
    async with net:
        await net.wait_for_bridges()
        # A static route to each neighbour, and one for each neighbour's static route to the
        # third broker (a network consumer within networkTTL): two routes per neighbour.
        await wait_routes(net, dict.fromkeys("ABC", 4))
        bodies = await net.produce("A", QUEUE, 100)

        await wait_depths(net, {"A": 0, "B": 50, "C": 50})
        # A consumer on B creates demand on C, yet C's messages came through B: they stay.
        conn = await connect(net.url("B"))
        sub = await conn.subscribe(QUEUE, ack="client-individual")
        await net.wait_for_demand("C", DEMAND, 5)
        on_b = await take(sub, 50)
        await nothing_more(sub)
        await conn.disconnect()
        assert depths(net, ("A", "B", "C")) == {"A": 0, "B": 0, "C": 50}
        on_c = await drain(net, "C", 50)

        assert_once(on_b + on_c, bodies)
        assert paths(on_b) == {"A,C"}
        assert paths(on_c) == {"A,B"}


# -- chapter 2: networkTTL, messageTTL and consumerTTL -----------------------------------------


def chain(path: Path, attrs: str) -> BrokerNetwork:
    """A -> B -> C with simple connectors (ThreeBrokerQueueNetworkTest's layout)."""
    net = BrokerNetwork(path)
    net.add("C")
    net.add("B", connector("C", attrs))
    net.add("A", connector("B", attrs))
    return net


async def consumer_on_c(
    net: BrokerNetwork, *, demand_reaches: str
) -> tuple[Connection, Subscription]:
    """A consumer of TEST.FOO on C, once its demand subscription has reached ``demand_reaches``;
    where that is B, A must stay without one for a quiet period."""
    conn = await connect(net.url("C"))
    sub = await conn.subscribe(QUEUE, ack="client-individual")
    await net.wait_for_demand(demand_reaches, DEMAND)
    if demand_reaches == "B":
        await quiet(lambda: net.demand("A", DEMAND) == [], "no demand on A")
    return conn, sub


async def unreachable(tmp_path: Path, attrs: str, *, demand_reaches: str, stuck_on: str) -> None:
    """On the chain with ``attrs`` the demand of a consumer on C reaches ``demand_reaches`` (and
    no further), yet 10 messages sent to A never reach the consumer: they stay on ``stuck_on``."""
    async with chain(tmp_path, attrs) as net:
        await net.wait_for_bridges()
        conn, sub = await consumer_on_c(net, demand_reaches=demand_reaches)
        await net.produce("A", QUEUE, 10)
        await wait_depths(net, dict.fromkeys("ABC", 0) | {stuck_on: 10})
        await nothing_more(sub)
        await conn.disconnect()


async def test_network_ttl_1_reaches_only_the_neighbour(tmp_path: Path) -> None:
    """seed 001 §2 "networkTTL": 1 (the default) allows one hop, so on A -> B -> C a consumer on
    C is out of A's reach (reference §4.4, ThreeBrokerQueueNetworkTest expects 0): its
    subscription stops at B and the messages stay on A."""
    await unreachable(tmp_path, 'networkTTL="1"', demand_reaches="B", stuck_on="A")


async def test_network_ttl_2_crosses_two_hops(tmp_path: Path) -> None:
    """seed 001 §2 "networkTTL": with 2 the same chain delivers everything sent to A to the
    consumer on C, each message with the broker path A,B."""
    async with chain(tmp_path, 'networkTTL="2"') as net:
        await net.wait_for_bridges()
        conn, sub = await consumer_on_c(net, demand_reaches="A")
        bodies = await net.produce("A", QUEUE, 10)

        received = await take(sub, 10)
        await nothing_more(sub)
        await conn.disconnect()
        assert_once(received, bodies)
        assert paths(received) == {"A,B"}
        await wait_depths(net, {"A": 0, "B": 0, "C": 0})


async def test_message_ttl_limits_messages_not_subscriptions(tmp_path: Path) -> None:
    """reference §4.1 messageTTL: with consumerTTL 2 the subscription of a consumer on C reaches
    A, but with messageTTL 1 a message makes one hop only: A forwards it and it stays on B."""
    await unreachable(tmp_path, 'consumerTTL="2" messageTTL="1"', demand_reaches="A", stuck_on="B")


async def test_consumer_ttl_limits_subscriptions_not_messages(tmp_path: Path) -> None:
    """reference §4.1 consumerTTL: with messageTTL 2 a message could make two hops, but with
    consumerTTL 1 the subscription of a consumer on C stops at B, so A never learns of it and
    keeps its messages."""
    await unreachable(tmp_path, 'consumerTTL="1" messageTTL="2"', demand_reaches="B", stuck_on="A")


# -- chapter 2: the duplex connector, and demand that goes away ---------------------------------


async def test_duplex_connector_carries_both_directions(tmp_path: Path) -> None:
    """seed 001 Figure 2.3 / Example 2.3: only A defines the connector, with duplex="true";
    its one connection carries messages A -> B and B -> A, and B configures nothing."""
    net = BrokerNetwork(tmp_path)
    net.add("B")
    net.add(
        "A",
        '<networkConnector name="linkToBrokerB" uri="static:({B})" networkTTL="3" duplex="true"/>',
    )
    async with net:
        await net.wait_for_bridges()
        assert net["B"].network.connectors == []
        (bridge,) = net.bridges("A")
        directions = bridge["directions"]
        assert isinstance(directions, list)
        assert sorted((d["from"], d["to"]) for d in directions) == [("A", "B"), ("B", "A")]
        # Before any client connects, B's one connection is the bridge's.
        assert [c.network_bridge for c in net["B"].service.connections.values()] == [
            "linkToBrokerB"
        ]

        on_a = await connect(net.url("A"))
        on_b = await connect(net.url("B"))
        try:
            sub_a = await on_a.subscribe(QUEUE, ack="client-individual")
            await net.wait_for_demand("B", DEMAND)
            from_b = [f"from-b-{i}" for i in range(5)]
            for body in from_b:
                await on_b.send(QUEUE, body, persistent=True)
            got_a = await take(sub_a, 5)
            await sub_a.unsubscribe()
            await wait_until(lambda: net.demand("B", DEMAND) == [], WAIT_S, "no demand on B")

            sub_b = await on_b.subscribe(QUEUE, ack="client-individual")
            await net.wait_for_demand("A", DEMAND)
            from_a = [f"from-a-{i}" for i in range(5)]
            for body in from_a:
                await on_a.send(QUEUE, body, persistent=True)
            got_b = await take(sub_b, 5)
            await nothing_more(sub_b)
        finally:
            await on_a.disconnect()
            await on_b.disconnect()

        assert_once(got_a, from_b)
        assert_once(got_b, from_a)
        assert paths(got_a) == {"B"}
        assert paths(got_b) == {"A"}
        (bridge,) = net.bridges("A")
        directions = bridge["directions"]
        assert isinstance(directions, list)
        assert sorted((d["from"], d["forwarded"]) for d in directions) == [("A", 5), ("B", 5)]
        assert depths(net, ("A", "B")) == {"A": 0, "B": 0}
        await wait_until(
            lambda: len(net["B"].service.connections) == 1, WAIT_S, "only the bridge on B"
        )


async def test_consumer_leaving_cancels_its_demand(tmp_path: Path) -> None:
    """seed 001 §2 "Subscriptions": when a consumer disconnects, its subscriptions are cancelled
    throughout the network; messages sent afterwards stay on the broker they were sent to."""
    net = BrokerNetwork(tmp_path)
    net.add("B")
    net.add("A", connector("B"))
    async with net:
        await net.wait_for_bridges()
        conn = await connect(net.url("B"))
        sub = await conn.subscribe(QUEUE, ack="client-individual")
        await net.wait_for_demand("A", DEMAND)
        assert network_consumers(net, "A") == 1
        first = await net.produce("A", QUEUE, 5, prefix="first")
        assert_once(await take(sub, 5), first)
        await conn.disconnect()

        await wait_until(
            lambda: net.demand("A", DEMAND) == [] and network_consumers(net, "A") == 0,
            WAIT_S,
            "the demand subscription on A to go away",
        )
        later = await net.produce("A", QUEUE, 5, prefix="later")
        await wait_depths(net, {"A": 5, "B": 0})
        assert_once(await drain(net, "A", 5), later)
