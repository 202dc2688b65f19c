"""Durable subscribers across a network (reference §4.3, DurableConduitBridge; seed 001 ch. 2).

A durable subscriber on B makes A's bridge hold a durable demand subscription
(``NC-DS_<A>_<topic>`` under the bridge's client id), so what A receives for the topic while the
subscriber, or the whole bridge, is away is kept and crosses later; deleting the subscription on
B deletes the demand on A.
"""

from __future__ import annotations

from pathlib import Path

from ferrymq.client import connect
from ferrymq.testing import wait_until
from ferrymq.testing.network import BrokerNetwork

BRIDGE_CLIENT = "linkToB_B_inbound_A"
DEMAND = "NC-DS_A_PRICES"


def _network(tmp_path: Path, extra: str = "") -> BrokerNetwork:
    net = BrokerNetwork(tmp_path)
    net.add("B")
    net.add(
        "A",
        f"""<networkConnector name="linkToB"
              uri="static:({{B}})?initialReconnectDelay=50&amp;maxReconnectDelay=200" {extra}>
              <durableDestinations><topic physicalName="PRICES"/></durableDestinations>
            </networkConnector>""",
    )
    return net


async def _messages(url: str, count: int) -> list[str]:
    subscriber = await connect(url, client_id="trader")
    subscription = await subscriber.subscribe("/topic/PRICES", durable_name="d1")
    bodies = []
    for _ in range(count):
        message = await subscription.get(timeout=10)
        bodies.append(message.body.decode())
    await subscriber.close()
    return bodies


async def _subscribed_while_bridged(net: BrokerNetwork) -> None:
    """Once the bridge is up, the trader's durable subscription is made on B (and left offline)
    and A holds the demand for it."""
    await net.wait_for_bridges()
    assert await _messages(net.url("B"), 0) == []  # the durable subscription exists on B
    await net.wait_for_demand("A", "topic://PRICES")


async def test_what_is_published_while_the_subscriber_is_offline_reaches_it(
    tmp_path: Path,
) -> None:
    net = _network(tmp_path)
    async with net:
        await _subscribed_while_bridged(net)
        assert net.durable_depth("A", BRIDGE_CLIENT, DEMAND) == 0
        sent = await net.produce("A", "/topic/PRICES", 5, prefix="p")
        await wait_until(lambda: net.durable_depth("B", "trader", "d1") == 5, 10, "5 kept on B")
        assert await _messages(net.url("B"), 5) == sent


async def test_durable_demand_keeps_messages_while_the_bridge_is_down(tmp_path: Path) -> None:
    """B restarts: A's durable demand keeps what is published meanwhile, and with
    ``durableDestinations`` (dynamicOnly false) the new bridge forwards it at once, before the
    subscriber is back."""
    net = _network(tmp_path)
    async with net:
        await _subscribed_while_bridged(net)
        await net.stop("B")
        sent = await net.produce("A", "/topic/PRICES", 5, prefix="q")
        assert net.durable_depth("A", BRIDGE_CLIENT, DEMAND) == 5
        await net.start("B")
        await wait_until(lambda: net.durable_depth("B", "trader", "d1") == 5, 15, "5 moved to B")
        # The bridge acknowledges on A once B has receipted them: that ack races the check.
        await wait_until(
            lambda: net.durable_depth("A", BRIDGE_CLIENT, DEMAND) == 0, 5, "A's copies acked"
        )
        assert await _messages(net.url("B"), 5) == sent


async def test_dynamic_only_waits_for_the_subscriber(tmp_path: Path) -> None:
    net = _network(tmp_path, 'dynamicOnly="true"')
    async with net:
        await _subscribed_while_bridged(net)
        await net.stop("B")
        sent = await net.produce("A", "/topic/PRICES", 3, prefix="r")
        await net.start("B")
        await net.wait_for_bridges()
        assert net.durable_depth("A", BRIDGE_CLIENT, DEMAND) == 3  # not taken up at start
        assert await _messages(net.url("B"), 3) == sent


async def test_deleting_the_subscription_deletes_the_demand(tmp_path: Path) -> None:
    net = _network(tmp_path, 'dynamicOnly="true"')
    async with net:
        await net.wait_for_bridges()
        subscriber = await connect(net.url("B"), client_id="trader")
        subscription = await subscriber.subscribe("/topic/PRICES", durable_name="d1")
        await net.wait_for_demand("A", "topic://PRICES")
        await subscription.unsubscribe(durable=True)
        await wait_until(
            lambda: net.durable_depth("A", BRIDGE_CLIENT, DEMAND) is None,
            10,
            "the durable demand deleted on A",
        )
        assert net.demand("A", "topic://PRICES") == []
        await subscriber.close()
