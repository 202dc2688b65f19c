"""seed 001 §8.3 "Using fanout with a broker network": four brokers joined in a network, a
consumer on topic hello.jason on broker A. A producer connected to broker B gives the consumer
one copy of each message; a fanout producer connected to all four gives it FOUR copies, each
broker delivering its own (the pitfall the seed warns of). Without the network the consumer gets
one copy: its own broker's."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ferrymq.client import connect
from ferrymq.testing.network import BrokerNetwork, receive_all

BROKERS = ("A", "B", "C", "D")
TOPIC = "/topic/hello.jason"
BROKER_PATH = "JMSActiveMQBrokerPath"
MESSAGES = 5


def four_brokers(path: Path, *, networked: bool) -> BrokerNetwork:
    """With ``networked``, the complete graph of seed 001 chapter 6: one duplex connector per
    pair, networkTTL=1, so each broker forwards to a consumer on a neighbour and no further."""
    net = BrokerNetwork(path)
    for i, name in enumerate(BROKERS):
        peers = ",".join(f"{{{peer}}}" for peer in BROKERS[:i])
        connector = f'<networkConnector uri="static:({peers})" duplex="true" networkTTL="1"/>'
        net.add(name, connector if networked and i else "")
    return net


def fanout_url(net: BrokerNetwork) -> str:
    members = ",".join(net.url(name) for name in BROKERS)
    # minAckCount = the number of brokers: all four take every message (seed "Minimum number
    # of brokers").
    return f"fanout:(static:({members}))?minAckCount=4"


async def test_fanout_into_a_network_of_four_brokers_gives_four_copies(tmp_path: Path) -> None:
    async with four_brokers(tmp_path, networked=True) as net:
        await net.wait_for_bridges()
        async with connect(net.url("A")) as consumer:
            subscription = await consumer.subscribe(TOPIC)
            for name in ("B", "C", "D"):
                await net.wait_for_demand(name, "topic://hello.jason")

            async with connect(net.url("B")) as producer:
                for i in range(MESSAGES):
                    await producer.send(TOPIC, f"from B {i}", receipt=True)
            received = await receive_all({"A": subscription}, expected=MESSAGES)
            assert sorted(m.text for m in received["A"]) == [f"from B {i}" for i in range(5)]

            async with connect(fanout_url(net)) as producer:
                for i in range(MESSAGES):
                    await producer.send(TOPIC, f"fanned {i}", receipt=True)
            received = await receive_all({"A": subscription}, expected=4 * MESSAGES)

    copies = Counter(m.text for m in received["A"])
    assert copies == {f"fanned {i}": 4 for i in range(MESSAGES)}
    # One copy straight from A, one forwarded by each of B, C and D.
    routes = Counter(m.headers.get(BROKER_PATH) for m in received["A"])
    assert routes == {None: MESSAGES, "B": MESSAGES, "C": MESSAGES, "D": MESSAGES}


async def test_fanout_to_four_independent_brokers_gives_one_copy(tmp_path: Path) -> None:
    net = four_brokers(tmp_path, networked=False)
    async with net, connect(net.url("A")) as consumer:
        subscription = await consumer.subscribe(TOPIC)
        async with connect(fanout_url(net)) as producer:
            for i in range(MESSAGES):
                await producer.send(TOPIC, f"fanned {i}", receipt=True)
        received = await receive_all({"A": subscription}, expected=MESSAGES)
    assert [m.text for m in received["A"]] == [f"fanned {i}" for i in range(MESSAGES)]
    assert all(BROKER_PATH not in m.headers for m in received["A"])
