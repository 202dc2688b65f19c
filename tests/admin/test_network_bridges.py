"""issue 5 "Observability": the admin API lists a broker's network bridges, real brokers on real
sockets (in-process, nothing is killed)."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from pathlib import Path
from typing import Any

from ferrymq.admin.api import ROUTES
from ferrymq.admin.routing import Router
from ferrymq.client import Subscription, connect
from ferrymq.testing import wait_until
from ferrymq.testing.network import BrokerNetwork
from tests.admin.fake_broker import FakeBroker

WAIT_S = 15.0


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.load(response)


async def api(net: BrokerNetwork, broker: str, path: str) -> Any:
    return await asyncio.to_thread(_get, net.admin_url(broker) + path)


async def forward(net: BrokerNetwork, source: str, sub: Subscription, count: int) -> None:
    """``count`` messages sent on ``source`` to the destination of ``sub``, a consumer on another
    broker; each one received and acknowledged there."""
    await net.wait_for_demand(source, "queue://" + sub.destination.removeprefix("/queue/"))
    await net.produce(source, sub.destination, count)
    for _ in range(count):
        message = await sub.get(timeout=WAIT_S)
        await message.ack()


def forwarded(net: BrokerNetwork, broker: str) -> list[object]:
    """What each direction of ``broker``'s one bridge has forwarded, by its statistics."""
    (bridge,) = net.bridges(broker)
    directions: Any = bridge["directions"]
    return [direction["forwarded"] for direction in directions]


async def test_a_bridge_with_its_brokers_demand_and_forwarded_count(tmp_path: Path) -> None:
    net = BrokerNetwork(tmp_path)
    net.add(
        "A",
        '<networkConnector name="to-B" uri="static:({B})" decreaseNetworkConsumerPriority="true"/>',
    )
    net.add("B")
    net.enable_admin("A")
    net.enable_admin("B")
    async with net:
        await net.wait_for_bridges()
        consumer = await connect(net.url("B"))
        try:
            await consumer.subscribe("/queue/orders", ack="client-individual", prefetch=1)
            await net.wait_for_demand("A", "queue://orders")
            listed = (await api(net, "A", "/api/v1/network-bridges"))["network_bridges"]
            (bridge,) = listed
            assert {k: bridge[k] for k in ("connector", "uri", "state", "duplex")} == {
                "connector": "to-B",
                "uri": net.url("B"),
                "state": "started",
                "duplex": False,
            }
            assert bridge["local_broker"] == {"name": "A", "id": "A"}
            assert bridge["remote_broker"] == {"name": "B", "id": "B"}
            assert isinstance(bridge["started_at_ms"], int)
            (direction,) = bridge["directions"]
            assert (direction["direction"], direction["from"], direction["to"]) == (
                "outbound",
                "A",
                "B",
            )
            (demand,) = direction["demand_subscriptions"]
            assert demand["destination"] == {"type": "queue", "name": "orders"}
            # seed 001 chapter 7: a network subscription one hop away starts at -5.
            assert (demand["consumers"], demand["priority"], demand["forwarded"]) == (1, -5, 0)
            assert demand["broker_path"] == ["B"]

            overview = await api(net, "A", "/api/v1/broker")
            assert overview["network_bridges"] == listed
            # B has no connector: the bridge is A's, B only serves its connection.
            assert (await api(net, "B", "/api/v1/network-bridges")) == {"network_bridges": []}
        finally:
            await consumer.disconnect()

        consumer = await connect(net.url("B"))
        try:
            await forward(
                net, "A", await consumer.subscribe("/queue/orders", ack="client-individual"), 3
            )
        finally:
            await consumer.disconnect()

        await wait_until(
            lambda: forwarded(net, "A")[0] == 3, WAIT_S, "3 messages counted as forwarded"
        )
        (bridge,) = (await api(net, "A", "/api/v1/network-bridges"))["network_bridges"]
        assert bridge["forwarded"] == 3
        assert bridge["directions"][0]["forwarded"] == 3


async def test_a_duplex_bridge_lists_both_directions(tmp_path: Path) -> None:
    net = BrokerNetwork(tmp_path)
    net.add("A", '<networkConnector name="both-ways" uri="static:({B})" duplex="true"/>')
    net.add("B")
    net.enable_admin("A")
    net.enable_admin("B")
    async with net:
        await net.wait_for_bridges()
        consumer = await connect(net.url("A"))
        try:
            sub = await consumer.subscribe("/queue/replies", ack="client-individual")
            await forward(net, "B", sub, 2)

            await wait_until(
                lambda: forwarded(net, "A") == [0, 2], WAIT_S, "2 messages forwarded B -> A"
            )
            (bridge,) = (await api(net, "A", "/api/v1/network-bridges"))["network_bridges"]
            (responder,) = (await api(net, "B", "/api/v1/network-bridges"))["network_bridges"]
        finally:
            await consumer.disconnect()
    assert bridge["duplex"] is True
    assert bridge["forwarded"] == 2
    outbound, inbound = bridge["directions"]
    assert (outbound["direction"], outbound["from"], outbound["to"]) == ("outbound", "A", "B")
    assert (inbound["direction"], inbound["from"], inbound["to"]) == ("inbound", "B", "A")
    assert outbound["demand_subscriptions"] == []
    (demand,) = inbound["demand_subscriptions"]
    assert demand["destination"] == {"type": "queue", "name": "replies"}
    assert (demand["consumers"], demand["priority"]) == (1, 0)
    assert demand["forwarded"] == 2
    # B has no connector of its own, yet lists the bridge A opened (ActiveMQ's
    # duplexNetworkConnectors), counting what it forwarded without the advisories A reads.
    assert (responder["connector"], responder["duplex"], responder["initiated_by"]) == (
        "both-ways",
        True,
        "remote",
    )
    assert (responder["local_broker"]["name"], responder["remote_broker"]["name"]) == ("B", "A")
    out, back = responder["directions"]
    assert (out["direction"], out["from"], out["to"], out["forwarded"]) == ("outbound", "B", "A", 2)
    (remote_demand,) = out["demand_subscriptions"]
    assert remote_demand["destination"] == {"type": "queue", "name": "replies"}
    assert (back["direction"], back["forwarded"]) == ("inbound", 0)
    assert bridge["initiated_by"] == "local"


def test_a_broker_without_network_statistics_lists_no_bridges() -> None:
    """A source that passes no bridge records (a broker built without network connectors)."""
    response = Router(ROUTES).dispatch(FakeBroker(), "GET", "/api/v1/network-bridges")
    assert (response.status, json.loads(response.body)) == (200, {"network_bridges": []})
    overview = json.loads(Router(ROUTES).dispatch(FakeBroker(), "GET", "/api/v1/broker").body)
    assert "network_bridges" not in overview
