"""Conduit subscriptions, selectors and destination filters across one hop (seed 001 ch. 2, 4,
5 and 9): the documented message counts, exactly.

Every scenario puts all consumers in place and waits for the demand they create before the first
message is sent, and the consumers keep the default prefetch (1000, far above what they get), so
a broker's queue dispatch is pure round robin over its equal-priority consumers (a local consumer
and a demand subscription both have priority 0 while decreaseNetworkConsumerPriority is false,
its default).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

from ferrymq.client import Connection, Message, connect
from ferrymq.testing import wait_until
from ferrymq.testing.network import BrokerNetwork, receive_all
from tests.network.conftest import counts

NO_CONDUIT = 'conduitSubscriptions="false"'


@pytest.mark.parametrize(
    ("conduit", "copies"),
    [pytest.param("", 1, id="conduit"), pytest.param(NO_CONDUIT, 2, id="no conduit")],
)
async def test_topic_consumers_get_one_copy_with_conduit_two_without(
    tmp_path: Path, conduit: str, copies: int
) -> None:
    """seed 001 Figure 2.5: C1 and C2 on topic t at B, a connector A->B. With conduit
    subscriptions (the default) A holds one subscription B:t and each consumer gets the message
    once; without, A holds B:C1:t and B:C2:t, sends two copies, and each consumer gets it twice."""
    net = BrokerNetwork(tmp_path)
    net.add("B")
    net.add("A", f'<networkConnector uri="static:({{B}})" {conduit}/>')
    async with net:
        await net.wait_for_bridges()
        on_b = await connect(net.url("B"))
        on_a = await connect(net.url("A"))
        consumers = {"C1": await on_b.subscribe("/topic/t"), "C2": await on_b.subscribe("/topic/t")}
        await net.wait_for_demand("A", "topic://t", count=copies)
        assert len(net.demand("A", "topic://t")) == copies

        await on_a.send("/topic/t", "one message")

        received = await receive_all(consumers, expected=2 * copies)
        assert counts(received) == {"C1": copies, "C2": copies}
        for messages in received.values():
            assert {m.message_id for m in messages} == {received["C1"][0].message_id}
            assert all(m.headers["JMSActiveMQBrokerPath"] == "A" for m in messages)
        await on_a.close()
        await on_b.close()


@pytest.mark.parametrize(
    ("conduit", "expected"),
    [
        pytest.param("", {"C1": 6, "C2": 3, "C3": 3}, id="Figure 9.1 conduit"),
        pytest.param(NO_CONDUIT, {"C1": 4, "C2": 4, "C3": 4}, id="Figure 9.2 no conduit"),
    ],
)
async def test_queue_load_is_6_3_3_with_conduit_and_4_4_4_without(
    tmp_path: Path, conduit: str, expected: dict[str, int]
) -> None:
    """seed 001 Figures 9.1 and 9.2: C1 on A, C2 and C3 on B, a connector A->B, 12 messages to
    TEST.FOO on A. With conduit subscriptions A sees C1 and one subscription for B and alternates
    (6 to C1, 6 to B, which alternates them over C2 and C3: 6/3/3); with
    conduitSubscriptions="false" (Example 9.1) A sees three subscriptions: 4/4/4."""
    net = BrokerNetwork(tmp_path)
    net.add("B")
    net.add("A", f'<networkConnector uri="static:({{B}})" networkTTL="3" {conduit}/>')
    async with net:
        await net.wait_for_bridges()
        on_a = await connect(net.url("A"))
        on_b = await connect(net.url("B"))
        consumers = {
            "C1": await on_a.subscribe("/queue/TEST.FOO"),
            "C2": await on_b.subscribe("/queue/TEST.FOO"),
            "C3": await on_b.subscribe("/queue/TEST.FOO"),
        }
        subscriptions = 1 if not conduit else 2
        await net.wait_for_demand("A", "queue://TEST.FOO", count=subscriptions)
        assert len(net.demand("A", "queue://TEST.FOO")) == subscriptions

        for i in range(12):
            await on_a.send("/queue/TEST.FOO", f"message {i}")

        received = await receive_all(consumers, expected=12)
        assert counts(received) == expected
        assert len({m.message_id for ms in received.values() for m in ms}) == 12
        assert net.queue_depth("A", "TEST.FOO") == net.queue_depth("B", "TEST.FOO") == 0
        await on_a.close()
        await on_b.close()


REGIONS = ["us", "us", "emea", "emea"] * 2
"""Each region twice in a row: A's round robin alternates between its two subscriptions, so
whichever of B and C comes first in it, each gets one 'us' and one 'emea' of every four. (A
strict us/emea alternation would be all luck: every message on its right broker, or on the
wrong one, as seed 001 chapter 5 puts it.)"""


async def test_selectors_behind_a_conduit_strand_messages_until_it_is_disabled(
    tmp_path: Path,
) -> None:
    """seed 001 Figure 5.1: C1 (region = 'us') on B, C2 (region = 'emea') on C, connectors
    A->B and A->C, a producer on A. The conduit subscriptions on A carry no selector, so A
    forwards alternately to B and C regardless of region: half of the messages sit on a broker
    whose consumer does not select them."""
    consumed, stuck = await _selector_scenario(tmp_path, "")
    assert consumed == {"C1": 2, "C2": 2}
    assert stuck == {"A": 0, "B": 2, "C": 2}


async def test_selectors_reach_their_consumers_without_conduit(tmp_path: Path) -> None:
    """seed 001 chapter 5 "Resolving the problem", Example 5.1: with conduitSubscriptions="false"
    each demand subscription carries its consumer's selector, so every message goes to the broker
    whose consumer selects it and nothing is left anywhere."""
    consumed, stuck = await _selector_scenario(tmp_path, NO_CONDUIT)
    assert consumed == {"C1": 4, "C2": 4}
    assert stuck == {"A": 0, "B": 0, "C": 0}


async def _selector_scenario(tmp_path: Path, conduit: str) -> tuple[dict[str, int], dict[str, int]]:
    net = BrokerNetwork(tmp_path)
    net.add("B")
    net.add("C")
    net.add(
        "A",
        f'<networkConnector name="linkToBrokerB" uri="static:({{B}})" networkTTL="3" {conduit}/>'
        f'<networkConnector name="linkToBrokerC" uri="static:({{C}})" networkTTL="3" {conduit}/>',
    )
    async with net:
        await net.wait_for_bridges()
        on_b = await connect(net.url("B"))
        on_c = await connect(net.url("C"))
        on_a = await connect(net.url("A"))
        consumers = {
            "C1": await on_b.subscribe("/queue/TEST.FOO", selector="region = 'us'"),
            "C2": await on_c.subscribe("/queue/TEST.FOO", selector="region = 'emea'"),
        }
        await net.wait_for_demand("A", "queue://TEST.FOO", count=2)
        selectors = sorted(str(d["selector"]) for d in net.demand("A", "queue://TEST.FOO"))
        assert selectors == (
            ["None", "None"] if not conduit else ["region = 'emea'", "region = 'us'"]
        )

        for i, region in enumerate(REGIONS):
            await on_a.send("/queue/TEST.FOO", f"order {i}", headers={"region": region})

        received = await receive_all(consumers, expected=4)
        await wait_until(
            lambda: net.queue_depth("A", "TEST.FOO") == 0, 10.0, "A to forward everything"
        )
        for name, region in (("C1", "us"), ("C2", "emea")):
            assert {m.headers["region"] for m in received[name]} <= {region}
        consumed = counts(received)
        stuck = {name: net.queue_depth(name, "TEST.FOO") for name in ("A", "B", "C")}
        for connection in (on_a, on_b, on_c):
            await connection.close()
    return consumed, stuck


# seed 001 chapter 4: the filters of Examples 4.1-4.3, as printed (Example 4.3's two missing
# closing quotes restored, as seed 002 Example 2.4 prints them).
INCLUDED = """<dynamicallyIncludedDestinations>
      <queue physicalName="TRADE.STOCK.>"/>
      <topic physicalName="PRICE.STOCK.>"/>
    </dynamicallyIncludedDestinations>"""
EXCLUDED = """<excludedDestinations>
      <queue physicalName="TRADE.STOCK.NYSE.*"/>
      <topic physicalName="PRICE.STOCK.NYSE.*"/>
    </excludedDestinations>"""

DESTINATIONS = [
    "/queue/TRADE.STOCK.NASDAQ.ORCL",
    "/queue/TRADE.STOCK.NYSE.IBM",
    "/queue/TRADE.STOCK.NYSE.IBM.PREFERRED",  # NYSE.* matches one segment only (Table 4.1)
    "/queue/TRADE.BOND.NYSE.IBM",
    "/topic/PRICE.STOCK.NASDAQ.ORCL",
    "/topic/PRICE.STOCK.NYSE.IBM",
    "/topic/PRICE.STOCK.NYSE.IBM.PREFERRED",
    "/topic/PRICE.BOND.NYSE.IBM",
]


@pytest.mark.parametrize(
    ("filters", "crossing"),
    [
        pytest.param(
            INCLUDED,
            {
                "/queue/TRADE.STOCK.NASDAQ.ORCL",
                "/queue/TRADE.STOCK.NYSE.IBM",
                "/queue/TRADE.STOCK.NYSE.IBM.PREFERRED",
                "/topic/PRICE.STOCK.NASDAQ.ORCL",
                "/topic/PRICE.STOCK.NYSE.IBM",
                "/topic/PRICE.STOCK.NYSE.IBM.PREFERRED",
            },
            id="Example 4.1 inclusion",
        ),
        pytest.param(
            EXCLUDED,
            {
                "/queue/TRADE.STOCK.NASDAQ.ORCL",
                "/queue/TRADE.STOCK.NYSE.IBM.PREFERRED",
                "/queue/TRADE.BOND.NYSE.IBM",
                "/topic/PRICE.STOCK.NASDAQ.ORCL",
                "/topic/PRICE.STOCK.NYSE.IBM.PREFERRED",
                "/topic/PRICE.BOND.NYSE.IBM",
            },
            id="Example 4.2 exclusion",
        ),
        pytest.param(
            INCLUDED + EXCLUDED,
            {
                "/queue/TRADE.STOCK.NASDAQ.ORCL",
                "/queue/TRADE.STOCK.NYSE.IBM.PREFERRED",
                "/topic/PRICE.STOCK.NASDAQ.ORCL",
                "/topic/PRICE.STOCK.NYSE.IBM.PREFERRED",
            },
            id="Example 4.3 combined, exclusion wins",
        ),
    ],
)
async def test_destination_filters(tmp_path: Path, filters: str, crossing: set[str]) -> None:
    """seed 001 chapter 4, Examples 4.1-4.3: a consumer on B for each destination, 3 messages to
    each on A. Those the connector's filters pass reach B; the others create no demand on A, so a
    queue's messages stay on A and a topic's find no subscriber there."""
    async with _filtered(tmp_path, filters) as net:
        await net.wait_for_bridges()
        on_b = await connect(net.url("B"))
        on_a = await connect(net.url("A"))
        # The refused consumers first: A's bridge reads B's advisories in order, so once the
        # last passing consumer has its demand, every refusal has been decided.
        ordered = sorted(DESTINATIONS, key=lambda d: d in crossing)
        consumers = {d: await on_b.subscribe(d) for d in ordered}
        for destination in ordered:
            if destination in crossing:
                await net.wait_for_demand("A", _qualified(destination))
        for destination in DESTINATIONS:
            demand = net.demand("A", _qualified(destination))
            assert len(demand) == (1 if destination in crossing else 0), destination

        await _send_three_each(on_a, DESTINATIONS)

        received = await receive_all(consumers, expected=3 * len(crossing))
        assert counts(received) == {d: 3 if d in crossing else 0 for d in DESTINATIONS}
        for destination in DESTINATIONS:
            if destination.startswith("/queue/"):
                name = destination.removeprefix("/queue/")
                stays = 0 if destination in crossing else 3
                assert net.queue_depth("A", name) == stays, destination
        await on_a.close()
        await on_b.close()


async def test_exclusion_applies_to_each_message_of_a_wildcard_consumer(tmp_path: Path) -> None:
    """seed 001 Example 4.2 with wildcard consumers on B (``TRADE.STOCK.>``, ``PRICE.STOCK.>``):
    their demand crosses, but each message is checked against the filters by its own
    destination, so the excluded NYSE queue messages stay on A and the excluded NYSE topic
    messages do not cross (ActiveMQ re-checks every message before forwarding too)."""
    async with _filtered(tmp_path, EXCLUDED) as net:
        await net.wait_for_bridges()
        on_b = await connect(net.url("B"))
        on_a = await connect(net.url("A"))
        consumers = {
            d: await on_b.subscribe(d) for d in ("/queue/TRADE.STOCK.>", "/topic/PRICE.STOCK.>")
        }
        await net.wait_for_demand("A", "queue://TRADE.STOCK.>")
        await net.wait_for_demand("A", "topic://PRICE.STOCK.>")
        sent = [
            "/queue/TRADE.STOCK.NASDAQ.ORCL",
            "/queue/TRADE.STOCK.NYSE.IBM",
            "/topic/PRICE.STOCK.NASDAQ.ORCL",
            "/topic/PRICE.STOCK.NYSE.IBM",
        ]
        await _send_three_each(on_a, sent)
        received = await receive_all(consumers, expected=6)
        assert sorted(m.destination for ms in received.values() for m in ms) == sorted(
            ["/queue/TRADE.STOCK.NASDAQ.ORCL"] * 3 + ["/topic/PRICE.STOCK.NASDAQ.ORCL"] * 3
        )
        assert net.queue_depth("A", "TRADE.STOCK.NYSE.IBM") == 3
        assert net.queue_depth("A", "TRADE.STOCK.NASDAQ.ORCL") == 0
        await on_a.close()
        await on_b.close()


def _qualified(destination: str) -> str:
    kind, _, name = destination.strip("/").partition("/")
    return f"{kind}://{name}"


def _filtered(tmp_path: Path, filters: str) -> BrokerNetwork:
    """B, and A with a connector to B that carries ``filters``."""
    net = BrokerNetwork(tmp_path)
    net.add("B")
    net.add(
        "A",
        f"""<networkConnector name="linkToBrokerB" uri="static:({{B}})" networkTTL="3">
    {filters}</networkConnector>""",
    )
    return net


async def _send_three_each(connection: Connection, destinations: Iterable[str]) -> None:
    for destination in destinations:
        for i in range(3):
            await connection.send(destination, f"{destination} {i}")


SEPARATE_CONNECTORS = """
  <networkConnector name="queuesOnly" uri="static:({B})" networkTTL="3"
      conduitSubscriptions="false">
    <dynamicallyIncludedDestinations>
      <queue physicalName=">"/>
    </dynamicallyIncludedDestinations>
  </networkConnector>
  <networkConnector name="topicsOnly" uri="static:({B})" networkTTL="3">
    <dynamicallyIncludedDestinations>
      <topic physicalName=">"/>
    </dynamicallyIncludedDestinations>
  </networkConnector>"""
"""seed 001 Example 9.2 prints physicalName="" (every queue / every topic); the configuration
loader refuses an empty name, and seed 002 Example 2.5, the same example, prints ">"."""


async def test_separate_connectors_for_queues_and_topics(tmp_path: Path) -> None:
    """seed 001 Example 9.2: a queue-only connector without conduit and a topic-only connector
    with conduit, both A->B. Two topic consumers on B get one copy each (no duplicates), and C1
    on A with C2, C3 on B share 12 queue messages 4/4/4 (Figure 9.2's balance)."""
    net = BrokerNetwork(tmp_path)
    net.add("B")
    net.add("A", SEPARATE_CONNECTORS)
    async with net:
        await net.wait_for_bridges()
        assert sorted(str(b["name"]) for b in net.bridges("A")) == ["queuesOnly", "topicsOnly"]
        on_a = await connect(net.url("A"))
        on_b = await connect(net.url("B"))
        topic_consumers = {
            "T1": await on_b.subscribe("/topic/PRICE.STOCK.NASDAQ.ORCL"),
            "T2": await on_b.subscribe("/topic/PRICE.STOCK.NASDAQ.ORCL"),
        }
        queue_consumers = {
            "C1": await on_a.subscribe("/queue/TEST.FOO"),
            "C2": await on_b.subscribe("/queue/TEST.FOO"),
            "C3": await on_b.subscribe("/queue/TEST.FOO"),
        }
        await net.wait_for_demand("A", "queue://TEST.FOO", count=2)
        await net.wait_for_demand("A", "topic://PRICE.STOCK.NASDAQ.ORCL")
        by_connector = {
            str(b["name"]): sorted(
                str(d["destination"])
                for direction in b["directions"]  # type: ignore[attr-defined]
                for d in direction["demandSubscriptions"]
            )
            for b in net.bridges("A")
        }
        assert by_connector == {
            "queuesOnly": ["queue://TEST.FOO", "queue://TEST.FOO"],
            "topicsOnly": ["topic://PRICE.STOCK.NASDAQ.ORCL"],
        }

        await on_a.send("/topic/PRICE.STOCK.NASDAQ.ORCL", "42.00")
        for i in range(12):
            await on_a.send("/queue/TEST.FOO", f"message {i}")

        received = await receive_all({**topic_consumers, **queue_consumers}, expected=14)
        assert counts(received) == {"T1": 1, "T2": 1, "C1": 4, "C2": 4, "C3": 4}
        await on_a.close()
        await on_b.close()


async def test_replies_cross_to_a_temporary_queue(tmp_path: Path) -> None:
    """bridgeTempDestinations (default true; reference §4.1 and §4.3, the seeds do not name it):
    a requester on B sends to a queue whose responder is on A, across a duplex connector A<->B,
    with reply-to a temporary queue of its own; the bridge mirrors the temporary queue on A, so
    the reply finds its way back."""
    net = BrokerNetwork(tmp_path)
    net.add("B")
    net.add("A", '<networkConnector uri="static:({B})" duplex="true"/>')
    async with net:
        await net.wait_for_bridges()
        on_a = await connect(net.url("A"))
        on_b = await connect(net.url("B"))
        requests = await on_a.subscribe("/queue/REQUESTS")
        replies = await on_b.subscribe("/temp-queue/replies")
        await net.wait_for_demand("B", "queue://REQUESTS")
        await wait_until(
            lambda: _temp_queue_demand(net, "A"), 10.0, "demand on A for B's temporary queue"
        )

        await on_b.send(
            "/queue/REQUESTS",
            "what time is it?",
            headers={"reply-to": "/temp-queue/replies", "correlation-id": "q1"},
        )
        request = await requests.get(timeout=10)
        assert request.headers["JMSActiveMQBrokerPath"] == "B"
        await _respond(on_a, request)

        reply = await replies.get(timeout=10)
        assert reply.body == b"noon"
        assert reply.headers["correlation-id"] == "q1"
        assert reply.headers["JMSActiveMQBrokerPath"] == "A"
        assert await receive_all({"replies": replies}, expected=0) == {"replies": []}
        await on_a.close()
        await on_b.close()


def _temp_queue_demand(net: BrokerNetwork, name: str) -> bool:
    return any(
        str(d["destination"]).startswith("temp-queue://")
        for bridge in net.bridges(name)
        for direction in bridge["directions"]  # type: ignore[attr-defined]
        for d in direction["demandSubscriptions"]
    )


async def _respond(connection: Connection, request: Message) -> None:
    await connection.send(
        request.headers["reply-to"],
        "noon",
        headers={"correlation-id": request.headers["correlation-id"]},
    )
