"""A bridge whose remote connection (``masterslave:`` or ``static:(failover:...)``) dies, and
whose next connection answers CONNECTED and drops as the bridge subscribes again (issue 13,
item 2): scripted by a ``ScriptedStompServer`` in front of broker B, so the failure comes at
the same frame every run. The bridge must come back and forward every message exactly once.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from ferrymq.client import connect
from ferrymq.testing.network import BrokerNetwork, receive_all
from ferrymq.testing.scripted import CloseOn, Forward, Refuse, ScriptedStompServer

QUEUE = "/queue/BRIDGE.RESTORE"
RETRY = "initialReconnectDelay=20&amp;maxReconnectDelay=100"


@pytest.fixture
def network(tmp_path: Path) -> BrokerNetwork:
    net = BrokerNetwork(tmp_path)
    net.add("B")
    return net


@pytest.fixture
def front_of_b(network: BrokerNetwork) -> Iterator[ScriptedStompServer]:
    """Connection 1 serves, 2 closes on its first SUBSCRIBE, the rest serve."""
    with ScriptedStompServer(network.ports["B"], [Forward(), CloseOn("SUBSCRIBE")]) as server:
        yield server


@pytest.mark.parametrize(
    "uri",
    [
        pytest.param("masterslave:({S},{R})?" + RETRY, id="masterslave"),
        pytest.param("static:(failover:({S})?" + RETRY + ")?" + RETRY, id="static-failover"),
    ],
)
async def test_a_bridge_comes_back_after_a_drop_during_its_resubscription(
    network: BrokerNetwork, front_of_b: ScriptedStompServer, uri: str
) -> None:
    """``{R}``: a slave of B that refuses every connection (``masterslave:`` needs two)."""
    with ScriptedStompServer(network.ports["B"], [], then=Refuse()) as slave:
        connector = uri.replace("{S}", front_of_b.url).replace("{R}", slave.url)
        await bridge_across_a_cut_resubscription(network, front_of_b, connector)


async def bridge_across_a_cut_resubscription(
    network: BrokerNetwork, front_of_b: ScriptedStompServer, connector: str
) -> None:
    network.add("A", f'<networkConnector name="toB" uri="{connector}"/>')
    async with network:
        await network.wait_for_bridges()
        async with await connect(network.url("B")) as consumer:
            subscription = await consumer.subscribe(QUEUE, ack="client-individual")
            await network.wait_for_demand("A", "queue://BRIDGE.RESTORE")
            first = await network.produce("A", QUEUE, 5, prefix="before")
            front_of_b.drop()
            await asyncio.to_thread(front_of_b.wait_closed_on, 1)
            await network.wait_for_bridges()
            await network.wait_for_demand("A", "queue://BRIDGE.RESTORE")
            second = await network.produce("A", QUEUE, 5, prefix="after")
            received = await receive_all({"B": subscription}, 10)
    bodies = Counter(message.text for message in received["B"])
    assert bodies == Counter(first + second)
    assert front_of_b.accepted >= 3
