"""`<mirror>` between two (or three) brokers in this process: the ActiveMQ Artemis manual's
"Mirroring" section and the Artemis scenarios it is checked against (reference section 2,
named in each test), from a client's send to the target's queue."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from pathlib import Path

import pytest

from ferrymq.broker import Broker
from ferrymq.client import connect
from ferrymq.core.destination import Destination
from ferrymq.service.management import BrokerManagement
from ferrymq.testing import free_port, running_broker, wait_until
from tests.connections.mirror_support import (
    MIRROR_QUEUE,
    WAIT_S,
    amqp_uri,
    consume,
    depth,
    node_config,
    send,
    source,
    target,
    wait_depth,
    wait_drained,
)

pytestmark = pytest.mark.asyncio


async def test_scenario_1_basic_replicate_and_ack_mirror(tmp_path: Path) -> None:
    """Artemis scenario 1 (AMQPReplicaTest.testReplica): 200 sent, 100 consumed on the source,
    then the rest on both sides."""
    async with target(tmp_path) as b, source(tmp_path, [("dr", amqp_uri(b), "")]) as a:
        await send(a, "/queue/Q", 200)
        await wait_drained(a)
        await wait_depth(b, "Q", 200)
        assert depth(a, "Q") == 200
        await consume(a, "/queue/Q", 100)
        await wait_depth(b, "Q", 100, "the 100 acks reached the target")
        assert await consume(b, "/queue/Q", 100) == [f"m{i}" for i in range(100, 200)]
        await consume(a, "/queue/Q", 100)
        await wait_drained(a)
        assert (depth(a, "Q"), depth(b, "Q")) == (0, 0)


async def test_scenario_2_acks_off(tmp_path: Path) -> None:
    """Artemis scenario 2 (testReplicaCopyOnly): message-acknowledgements=false."""
    attributes = 'message-acknowledgements="false"'
    async with target(tmp_path) as b, source(tmp_path, [("dr", amqp_uri(b), attributes)]) as a:
        await send(a, "/queue/Q", 20)
        await consume(a, "/queue/Q", 20)
        await wait_drained(a)
        assert depth(b, "Q") == 20
        assert len(await consume(b, "/queue/Q", 20)) == 20


async def test_scenario_4_stop_and_start_the_broker_connection(tmp_path: Path) -> None:
    """Artemis scenario 4 (testReplicaRestartBrokerConnection): events wait in the mirror
    queue while the connection is stopped, and acks still mirror after it starts again."""
    async with target(tmp_path) as b, source(tmp_path, [("dr", amqp_uri(b), "")]) as a:
        await send(a, "/queue/Q", 10)
        await wait_drained(a)
        await a.broker_connections.stop_connection("dr")
        await send(a, "/queue/Q", 10, prefix="late")
        await consume(a, "/queue/Q", 5)
        assert depth(a, MIRROR_QUEUE + "dr") == 15  # 10 sends, 5 acks, stored
        assert depth(b, "Q") == 10
        await a.broker_connections.start_connection("dr")
        await wait_drained(a)
        await wait_depth(b, "Q", 15)


async def test_scenario_6_queue_creation_and_removal_switches(tmp_path: Path) -> None:
    """Artemis scenario 6: queue-creation=false creates nothing on the target;
    queue-removal=false leaves a queue removed on the source on the target."""
    async with (
        target(tmp_path, "b") as b,
        target(tmp_path, "c") as c,
        source(
            tmp_path,
            [
                ("nocreate", amqp_uri(b), 'queue-creation="false"'),
                ("noremove", amqp_uri(c), 'queue-removal="false"'),
            ],
        ) as a,
    ):
        async with await connect(a.stomp_urls[0]) as client:
            subscription = await client.subscribe("/queue/sometest")
            await subscription.unsubscribe()
        await BrokerManagement(a.service).remove_destination(Destination.queue("sometest"))
        await wait_drained(a, "nocreate")
        await wait_drained(a, "noremove")
        assert depth(b, "sometest") is None  # never created there
        assert depth(c, "sometest") == 0  # created, and left when the source removed it
        assert depth(a, "sometest") is None


@pytest.mark.parametrize(
    ("address_filter", "mirrored", "not_mirrored"),
    [
        ("eu", ["eu.uk", "eu.de", "europe"], ["us"]),
        ("!eu", ["us", "asia"], ["eu.uk", "europe"]),
        ("eu.uk,eu.de", ["eu.uk", "eu.de.berlin"], ["eu.fr", "us"]),
        ("eu,!eu.uk", ["eu.de", "eu.fr"], ["eu.uk", "eu.uk.london", "us"]),
    ],
)
async def test_the_manuals_address_filter_examples(
    tmp_path: Path, address_filter: str, mirrored: list[str], not_mirrored: list[str]
) -> None:
    """The manual's `address-filter` examples: prefixes, `!` excludes, an exclusion wins."""
    attributes = f'address-filter="{address_filter}"'
    async with target(tmp_path) as b, source(tmp_path, [("dr", amqp_uri(b), attributes)]) as a:
        for name in mirrored + not_mirrored:
            await send(a, f"/queue/{name}", 2)
        await wait_drained(a)
        for name in mirrored:
            await wait_depth(b, name, 2)
        assert [depth(b, name) for name in not_mirrored] == [None] * len(not_mirrored)


async def test_scenario_7_address_filter_adds_nothing_for_excluded_addresses(
    tmp_path: Path,
) -> None:
    """Artemis scenario 7 (testAddressFilter): 2 sends to `nonReplicated` add 0 events."""
    attributes = 'address-filter="replicated,!nonReplicated"'
    async with target(tmp_path) as b, source(tmp_path, [("dr", amqp_uri(b), attributes)]) as a:
        before = a.service.region.mirror.statistics()["dr"]
        await send(a, "/queue/nonReplicated", 2)
        assert a.service.region.mirror.statistics()["dr"] == before
        await send(a, "/queue/replicated", 2)
        await wait_depth(b, "replicated", 2)
        assert depth(b, "nonReplicated") is None


def holds(broker: Broker, client_id: str, count: int) -> bool:
    """Whether the durable subscription ``<client_id>.sub`` holds ``count`` messages."""
    found = broker.service.region.subscriptions.durable(client_id, "sub")
    return found is not None and found.depth == count


async def test_scenario_11_durable_subscriptions(tmp_path: Path) -> None:
    """Artemis scenario 11 (testMulticast*): two durable subscriptions get 200 each on both
    brokers; consuming them on the source empties them on the target."""
    async with target(tmp_path) as b, source(tmp_path, [("dr", amqp_uri(b), "")]) as a:
        for client_id in ("c1", "c2"):
            async with await connect(a.stomp_urls[0], client_id=client_id) as client:
                subscription = await client.subscribe("/topic/news", durable_name="sub")
                await subscription.unsubscribe()
        await send(a, "/topic/news", 200)
        await wait_drained(a)

        for broker_ in (a, b):
            for client_id in ("c1", "c2"):
                await wait_until(
                    functools.partial(holds, broker_, client_id, 200),
                    WAIT_S,
                    f"{client_id}.sub holds 200",
                )
        for client_id in ("c1", "c2"):
            async with await connect(a.stomp_urls[0], client_id=client_id) as client:
                subscription = await client.subscribe(
                    "/topic/news", durable_name="sub", ack="client-individual"
                )
                for _ in range(200):
                    message = await subscription.get(timeout=WAIT_S)
                    await message.ack()
                await subscription.unsubscribe()
        await wait_drained(a)
        for client_id in ("c1", "c2"):
            await wait_until(functools.partial(holds, b, client_id, 0), WAIT_S, "emptied on B")


async def test_scenario_12_ring_of_three_has_no_loop(tmp_path: Path) -> None:
    """Artemis scenario 12 (AMQPChainedReplicaTest.testChained): 1 -> 2 -> 3 -> 1, 40 sent to
    1 stay 40 everywhere; consuming on any node lowers the count everywhere."""
    ports = [free_port() for _ in range(3)]
    async with contextlib.AsyncExitStack() as stack:
        nodes = []
        for i, name in enumerate(["n1", "n2", "n3"]):
            following = f"tcp://127.0.0.1:{ports[(i + 1) % 3]}"
            config = node_config(tmp_path, name, [("to", following, "")], amqp_port=ports[i])
            nodes.append(await stack.enter_async_context(running_broker(config)))
        await send(nodes[0], "/queue/Q", 40)
        for node in nodes:
            await wait_depth(node, "Q", 40)
        await asyncio.sleep(1.0)  # a loop would keep adding
        for node in nodes:
            await wait_drained(node, "to")
            assert depth(node, "Q") == 40
        for consumed, node in enumerate(nodes, start=1):
            await consume(node, "/queue/Q", 10)
            for each in nodes:
                await wait_depth(each, "Q", 40 - 10 * consumed)


async def test_scenario_5_queue_created_while_the_target_is_offline(tmp_path: Path) -> None:
    """Artemis scenario 5 (testReplicaCatchupOnQueueCreates): a queue created on the source
    while the connection is down appears on the target once it is back; a queue that exists
    only on the target stays there."""
    async with target(tmp_path) as b, source(tmp_path, [("dr", amqp_uri(b), "")]) as a:
        await send(b, "/queue/onlyOnTarget", 1)
        await a.broker_connections.stop_connection("dr")
        async with await connect(a.stomp_urls[0]) as client:
            subscription = await client.subscribe("/queue/sometest")
            await subscription.unsubscribe()
        assert depth(b, "sometest") is None
        await a.broker_connections.start_connection("dr")
        await wait_depth(b, "sometest", 0, "sometest created on the target")
        assert depth(b, "onlyOnTarget") == 1
        assert depth(a, "onlyOnTarget") is None


async def test_statistics_show_the_backlog_and_the_lag(tmp_path: Path) -> None:
    """What the admin API lists per broker connection: the mirror's backlog (events waiting in
    its queue), its lag (the oldest one's age), what was forwarded, and the target's node id."""
    async with target(tmp_path) as b, source(tmp_path, [("dr", amqp_uri(b), "")]) as a:
        await send(a, "/queue/Q", 3)
        await wait_drained(a)

        def mirror() -> dict[str, object]:
            (connection,) = a.broker_connections.statistics()
            elements = connection["elements"]
            assert isinstance(elements, list)
            found: dict[str, object] = elements[0]
            return found

        await wait_until(lambda: mirror()["forwarded"] == 4, WAIT_S, "create + 3 sends")
        assert (mirror()["backlog"], mirror()["lag_ms"]) == (0, 0)
        assert mirror()["peer"] == b.service.region.node_id
        await a.broker_connections.stop_connection("dr")
        await send(a, "/queue/Q", 5)
        await asyncio.sleep(0.3)
        assert mirror()["backlog"] == 5
        lag = mirror()["lag_ms"]
        assert isinstance(lag, int)
        assert lag >= 300
        await a.broker_connections.start_connection("dr")
        await wait_drained(a)
        await wait_until(lambda: mirror()["lag_ms"] == 0, WAIT_S, "no lag once drained")
