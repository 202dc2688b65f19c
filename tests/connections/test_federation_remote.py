"""Remote policies: the remote's demand is served over the same connection (pushed from here
to a FerryMQ remote; sent over a control link, as Artemis does, to any other), and the
control-link contract (Artemis's scenario 35)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ferrymq.amqp import federation_codes as fc
from ferrymq.broker import Broker
from ferrymq.config.activemq_xml import parse_config
from ferrymq.config.model import AdminConfig
from tests.connections.federation_support import (
    Federation,
    broker_xml,
    client,
    decoded,
    drain,
    federated,
    has_subscriptions,
    queue_consumers,
    receive,
    subscriptions,
    until,
)
from tests.connections.scripted_peer import Answer, Attach, ScriptedPeer

REMOTE_POLICIES = (
    '<remote-address-policy name="to-r"><include address-match="test"/></remote-address-policy>'
    '<remote-queue-policy name="queues-to-r"><include address-match="#" queue-match="orders"/>'
    "</remote-queue-policy>"
)


async def test_remote_address_and_queue_policies_serve_the_remote_demand(
    tmp_path: Path,
) -> None:
    """Only L is configured: R's consumers get what is produced on L, while they exist."""
    async with federated(tmp_path, {"R": (), "L": (Federation("R", REMOTE_POLICIES),)}) as brokers:
        local, remote = await client(brokers["L"]), await client(brokers["R"])
        on_topic = await remote.subscribe("/topic/test")
        on_queue = await remote.subscribe("/queue/orders")
        await until(lambda: len(subscriptions(brokers["L"], "test")) == 1, "L's topic consumer")
        await until(lambda: queue_consumers(brokers["L"], "orders") == 1, "L's queue consumer")
        await local.send("/topic/test", "t", headers={"n": "t1"})
        await local.send("/queue/orders", "q", headers={"n": "q1"}, persistent=True)
        assert await receive(on_topic, 1) == ["t1"]
        assert await receive(on_queue, 1) == ["q1"]
        await on_queue.unsubscribe()
        await until(lambda: queue_consumers(brokers["L"], "orders") == 0, "demand gone")
        await local.send("/queue/orders", "stays", headers={"n": "q2"}, persistent=True)
        await on_topic.unsubscribe()
        await until(lambda: subscriptions(brokers["L"], "test") == [], "topic demand gone")
        await local.close()
        await remote.close()


async def test_scenario_31_two_way_over_a_single_connection(tmp_path: Path) -> None:
    """L has a local and a remote address policy on its one connection to R (R has none):
    a message from either side is received exactly once on each, then nothing more."""
    policies = (
        '<local-address-policy name="from-r"><include address-match="test"/>'
        "</local-address-policy>"
        '<remote-address-policy name="to-r"><include address-match="test"/>'
        "</remote-address-policy>"
    )
    async with federated(tmp_path, {"R": (), "L": (Federation("R", policies),)}) as brokers:
        local, remote = await client(brokers["L"]), await client(brokers["R"])
        on_l, on_r = await local.subscribe("/topic/test"), await remote.subscribe("/topic/test")
        for broker in ("L", "R"):
            await until(has_subscriptions(brokers[broker], "test", 2), broker)
        await local.send("/topic/test", "from L", headers={"n": "l1"})
        await remote.send("/topic/test", "from R", headers={"n": "r1"})
        assert sorted(await receive(on_l, 2)) == ["l1", "r1"]
        assert sorted(await receive(on_r, 2)) == ["l1", "r1"]
        assert await drain(on_l, 1.0) == []
        assert await drain(on_r, 0.2) == []
        # Neither direction reflected the other's message (see scenario 31 in
        # test_federation_addresses): one message each through the federation subscriptions.
        for broker in ("L", "R"):
            (federation,) = [
                s
                for s in subscriptions(brokers[broker], "test")
                if any(fc.FEDERATION_CONSUMER in c.extra for c in s.consumers)
            ]
            assert federation.stats.enqueued == 1
        await local.close()
        await remote.close()


def _broker_to(tmp_path: Path, peer: ScriptedPeer, attempts: int) -> Broker:
    connection = (
        f'<amqp-connection uri="{peer.url}" name="to-peer" retry-interval="100" '
        f'reconnect-attempts="{attempts}"><federation>{REMOTE_POLICIES}</federation>'
        "</amqp-connection>"
    )
    config = parse_config(
        broker_xml("L", 0, connection), "L.xml", {"activemq.data": str(tmp_path / "L")}
    )
    return Broker(replace(config, admin=AdminConfig(enabled=False)))


async def test_scenario_35_control_link_without_the_capability_fails_the_connection(
    tmp_path: Path,
) -> None:
    """A remote (not FerryMQ) that does not offer AMQ_FEDERATION_CONTROL_LINK takes no
    remote policies: each attempt fails, and with reconnect-attempts=1 the connection stops
    after two."""
    async with ScriptedPeer() as peer, _broker_to(tmp_path, peer, 1) as broker:
        connection = broker.broker_connections.get("to-peer")
        await until(lambda: connection.state == "failed", "connection failed")
        assert peer.accepted == 2
        assert fc.CONTROL_LINK in (connection.last_error or "")
        control = [a for a in peer.attaches if fc.CONTROL_LINK in a.desired]
        assert len(control) == 2
        assert control[0].dynamic
        assert control[0].properties[fc.FEDERATION_NAME] == "to-peer"


async def test_scenario_35_policies_sent_over_the_control_link(tmp_path: Path) -> None:
    """A remote offering the capability gets one message per remote policy, with Artemis's
    operation annotation and map body."""

    def answer(attach: Attach) -> Answer:
        if fc.CONTROL_LINK in attach.desired:
            return Answer(offered=(fc.CONTROL_LINK,), address="$ACTIVEMQ_ARTEMIS_FEDERATION.x")
        return Answer()

    async with ScriptedPeer(answer=answer) as peer, _broker_to(tmp_path, peer, -1):
        await until(lambda: len(peer.received) == 2, "two policies")
        (address_annotations, address), (queue_annotations, queue) = map(decoded, peer.received)
        assert address_annotations == {fc.OPERATION_TYPE: fc.ADD_ADDRESS_POLICY}
        assert address["policy-name"] == "to-r"
        assert address["address-includes"] == ["test"]
        assert queue_annotations == {fc.OPERATION_TYPE: fc.ADD_QUEUE_POLICY}
        assert queue["queue-includes"] == ["#", "orders"]


async def test_remote_policy_for_a_wildcard_consumer_of_the_remote(tmp_path: Path) -> None:
    """R's consumer of news.> (remote address policy news.#): each message produced on L
    reaches R on its own topic."""
    policy = (
        '<remote-address-policy name="p"><include address-match="news.#"/></remote-address-policy>'
    )
    async with federated(tmp_path, {"R": (), "L": (Federation("R", policy),)}) as brokers:
        local, remote = await client(brokers["L"]), await client(brokers["R"])
        consumer = await remote.subscribe("/topic/news.>")
        await until(has_subscriptions(brokers["L"], "news.>", 1), "L's consumer for R")
        await local.send("/topic/news.eu", "eu", headers={"n": "eu"})
        await local.send("/topic/news.us", "us", headers={"n": "us"})
        first, second = await consumer.get(timeout=10), await consumer.get(timeout=10)
        assert {first.destination, second.destination} == {"/topic/news.eu", "/topic/news.us"}
        await local.close()
        await remote.close()
