"""Address federation between FerryMQ brokers configured with ``<federation>`` (ActiveMQ
Artemis documentation, "Broker Connections", Federation; Artemis's scenarios 29, 31, 32, 34)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ferrymq.amqp import federation_codes as fc
from tests.connections.federation_support import (
    Federation,
    client,
    drain,
    federated,
    federation_subscriptions,
    has_subscriptions,
    receive,
    subscriptions,
    until,
)

ADDRESS_POLICY = (
    '<local-address-policy name="addresses"><include address-match="test"/></local-address-policy>'
)


async def test_scenario_29_address_demand_federates_from_the_remote(tmp_path: Path) -> None:
    """A topic consumer on L makes a subscription on R; a message produced on R arrives at L
    with its properties intact; without the consumer the subscription goes."""
    topology = {"R": (), "L": (Federation("R", ADDRESS_POLICY),)}
    async with federated(tmp_path, topology) as brokers:
        local, remote = await client(brokers["L"]), await client(brokers["R"])
        assert federation_subscriptions(brokers["R"], "test") == []
        consumer = await local.subscribe("/topic/test")
        await until(lambda: len(federation_subscriptions(brokers["R"], "test")) == 1, "R sub")
        await remote.send("/topic/test", "hello", headers={"n": "1", "color": "red"})
        message = await consumer.get(timeout=10)

        def federation() -> dict[str, Any]:
            (record,) = brokers["L"].broker_connections.statistics()
            elements = record["elements"]
            assert isinstance(elements, list)
            (element,) = elements
            assert isinstance(element, dict)
            return element

        await until(lambda: federation()["received"] == 1, "counted")  # after its receipt
        assert federation()["type"] == "federation"
        assert (federation()["links"], federation()["demand"]) == (1, 1)
        (link,) = federation()["federation_links"]
        assert (link["kind"], link["name"], link["state"]) == ("address", "test", "receiving")
        assert message.body == b"hello"
        assert message.headers["color"] == "red"
        assert message.headers[fc.HOPS] == "1"
        assert message.headers[fc.FEDERATION_PATH] == "|R|"
        await consumer.unsubscribe()
        await until(lambda: federation_subscriptions(brokers["R"], "test") == [], "R unsubscribed")
        await local.close()
        await remote.close()


async def test_unmatched_and_excluded_addresses_are_not_federated(tmp_path: Path) -> None:
    policy = (
        '<local-address-policy name="p"><include address-match="news.#"/>'
        '<exclude address-match="news.secret"/></local-address-policy>'
    )
    async with federated(tmp_path, {"R": (), "L": (Federation("R", policy),)}) as brokers:
        local = await client(brokers["L"])
        for name in ("other", "news.secret", "news.eu.sport"):
            await local.subscribe(f"/topic/{name}")
        await until(
            lambda: len(federation_subscriptions(brokers["R"], "news.eu.sport")) == 1, "sub"
        )
        assert federation_subscriptions(brokers["R"], "other") == []
        assert federation_subscriptions(brokers["R"], "news.secret") == []
        await local.close()


def _two_way() -> dict[str, tuple[Federation, ...]]:
    return {
        "A": (Federation("B", ADDRESS_POLICY),),
        "B": (Federation("A", ADDRESS_POLICY),),
    }


async def test_scenario_31_two_way_address_federation_is_not_reflected(tmp_path: Path) -> None:
    """max-hops 0 and consumers on both sides: a message from either broker is received
    exactly once on each, and nothing more."""
    async with federated(tmp_path, _two_way()) as brokers:
        a, b = await client(brokers["A"]), await client(brokers["B"])
        on_a, on_b = await a.subscribe("/topic/test"), await b.subscribe("/topic/test")
        for broker in ("A", "B"):
            await until(has_subscriptions(brokers[broker], "test", 2), f"{broker} 2")
        await a.send("/topic/test", "from A", headers={"n": "a1"})
        await b.send("/topic/test", "from B", headers={"n": "b1"})
        assert sorted(await receive(on_a, 2)) == ["a1", "b1"]
        assert sorted(await receive(on_b, 2)) == ["a1", "b1"]
        assert await drain(on_a, 1.0) == []
        assert await drain(on_b, 0.2) == []
        # Each side's federation subscription took the other side's message only: none came
        # back (the path filter; the duplicate check would hide a reflection from consumers).
        for broker in ("A", "B"):
            (federation,) = federation_subscriptions(brokers[broker], "test")
            assert federation.stats.enqueued == 1
        await a.close()
        await b.close()


async def test_scenario_32_no_self_sustaining_loop(tmp_path: Path) -> None:
    """Each broker federates from the other, one consumer per side: 2 bindings per side; the
    first consumer closed, 1 per side; the second, 0 (ARTEMIS-5656)."""
    async with federated(tmp_path, _two_way()) as brokers:
        a, b = await client(brokers["A"]), await client(brokers["B"])
        on_a = await a.subscribe("/topic/test")
        on_b = await b.subscribe("/topic/test")

        def bindings(count: int) -> bool:
            return all(len(subscriptions(brokers[n], "test")) == count for n in ("A", "B"))

        await until(lambda: bindings(2), "2 bindings per side")
        await on_a.unsubscribe()
        await until(lambda: bindings(1), "1 binding per side")
        await on_b.unsubscribe()
        await until(lambda: bindings(0), "0 bindings per side")
        await a.close()
        await b.close()


async def test_scenario_34_max_hops_selector_on_the_subscription(tmp_path: Path) -> None:
    """The address receiver's source carries the hops selector: on R the federation
    subscription refuses a message that made max-hops hops already."""
    policy = (
        '<local-address-policy name="p" max-hops="1"><include address-match="test"/>'
        "</local-address-policy>"
    )
    async with federated(tmp_path, {"R": (), "L": (Federation("R", policy),)}) as brokers:
        local, remote = await client(brokers["L"]), await client(brokers["R"])
        consumer = await local.subscribe("/topic/test")
        await until(lambda: len(federation_subscriptions(brokers["R"], "test")) == 1, "sub")
        (subscription,) = federation_subscriptions(brokers["R"], "test")
        assert subscription.selector is not None
        assert f"{fc.HOPS} < 1" in subscription.selector.text
        await remote.send("/topic/test", "far", headers={"n": "far", fc.HOPS: "1"})
        await remote.send("/topic/test", "near", headers={"n": "near"})
        assert await receive(consumer, 1) == ["near"]
        assert await drain(consumer) == []
        await local.close()
        await remote.close()


async def test_wildcard_consumer_gets_each_message_on_its_own_topic(tmp_path: Path) -> None:
    """A consumer of news.> on L federates news.> from R; each message lands on its own topic
    here (news.eu, news.us), not on a topic named news.>."""
    policy = (
        '<local-address-policy name="p"><include address-match="news.#"/></local-address-policy>'
    )
    async with federated(tmp_path, {"R": (), "L": (Federation("R", policy),)}) as brokers:
        local, remote = await client(brokers["L"]), await client(brokers["R"])
        consumer = await local.subscribe("/topic/news.>")
        await until(has_subscriptions(brokers["R"], "news.>", 1, federation=True), "sub on R")
        await remote.send("/topic/news.eu", "eu", headers={"n": "eu"})
        await remote.send("/topic/news.us", "us", headers={"n": "us"})
        first, second = await consumer.get(timeout=10), await consumer.get(timeout=10)
        assert {first.destination, second.destination} == {"/topic/news.eu", "/topic/news.us"}
        await local.close()
        await remote.close()
