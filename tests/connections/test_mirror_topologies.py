"""Mirrors in pairs and fans, in this process: the dual mirror of the ActiveMQ Artemis manual's
"Mirroring" section (disaster recovery, no loop, no duplicate), a fan-out to two targets, and
the Artemis scenarios about what is not mirrored (reference section 2, named in each test)."""

from __future__ import annotations

import asyncio
import functools
import time
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest

from ferrymq.broker import Broker
from ferrymq.client import connect
from ferrymq.core.destination import Destination
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


def dual(
    tmp: Path, attributes: str = ""
) -> tuple[AbstractAsyncContextManager[Broker], AbstractAsyncContextManager[Broker]]:
    """A and B, each mirroring to the other (connection `to`)."""
    port_a, port_b = free_port(), free_port()
    a = node_config(tmp, "a", [("to", f"tcp://127.0.0.1:{port_b}", attributes)], amqp_port=port_a)
    b = node_config(tmp, "b", [("to", f"tcp://127.0.0.1:{port_a}", attributes)], amqp_port=port_b)
    return running_broker(a), running_broker(b)


def forwarded(broker: Broker) -> int:
    (connection,) = broker.broker_connections.statistics()
    elements = connection["elements"]
    assert isinstance(elements, list)
    (mirror,) = elements
    return int(mirror["forwarded"])


def all_exist(broker: Broker, names: list[str]) -> bool:
    return all(depth(broker, name) == 0 for name in names)


def events_added(broker: Broker, connection: str = "to") -> int:
    return broker.service.region.mirror.statistics()[connection]


async def test_dual_mirror_has_no_loop_and_no_duplicate(tmp_path: Path) -> None:
    """Two brokers mirroring each other: each side's sends reach the other once, acks on either
    side remove the message on both, and nothing keeps travelling."""
    first, second = dual(tmp_path)
    async with first as a, second as b:
        await send(a, "/queue/Q", 20, prefix="a")
        await send(b, "/queue/Q", 20, prefix="b")
        for broker in (a, b):
            await wait_depth(broker, "Q", 40)
        await asyncio.sleep(1.0)
        settled = (events_added(a), events_added(b))
        await asyncio.sleep(1.0)  # a reflection would keep adding events
        assert (events_added(a), events_added(b)) == settled
        await consume(b, "/queue/Q", 30)  # A's 20 first, then 10 of B's
        for broker in (a, b):
            await wait_depth(broker, "Q", 10)
        await consume(a, "/queue/Q", 10)
        for broker in (a, b):
            await wait_depth(broker, "Q", 0)
            await wait_drained(broker, "to")


async def test_scenario_13_dual_mirror_queue_creation(tmp_path: Path) -> None:
    """Artemis scenario 13 (BrokerInSyncTest.testSyncOnCreateQueues): queues created on
    either side (10 + 10, interleaved) appear on both, with no reflection storm."""
    first, second = dual(tmp_path)
    async with first as a, second as b:
        async with await connect(a.stomp_urls[0]) as on_a, await connect(b.stomp_urls[0]) as on_b:
            for i in range(10):
                for client, side in ((on_a, "a"), (on_b, "b")):
                    subscription = await client.subscribe(f"/queue/{side}.{i}")
                    await subscription.unsubscribe()
        names = [f"{side}.{i}" for i in range(10) for side in "ab"]
        for broker in (a, b):
            await wait_until(functools.partial(all_exist, broker, names), WAIT_S, "all queues")
            await wait_drained(broker, "to")
        settled = (events_added(a), events_added(b))
        await asyncio.sleep(1.0)  # a reflection storm would keep adding events
        assert (events_added(a), events_added(b)) == settled
        for broker in (a, b):
            assert forwarded(broker) == 10  # its own creations; the other's were not sent back


async def test_scenario_10_fan_out_to_two_targets(tmp_path: Path) -> None:
    """Artemis scenario 10 (dualReplica): B mirrors to A and to C; stopping and starting both
    connections mid-stream loses nothing and duplicates nothing."""
    async with (
        target(tmp_path, "ta") as ta,
        target(tmp_path, "tc") as tc,
        source(tmp_path, [("toA", amqp_uri(ta), ""), ("toC", amqp_uri(tc), "")], "b") as b,
    ):
        await send(b, "/queue/Q", 100)
        for name in ("toA", "toC"):
            await b.broker_connections.stop_connection(name)
        await send(b, "/queue/Q", 100, prefix="n")
        for name in ("toA", "toC"):
            await b.broker_connections.start_connection(name)
        for broker in (b, ta, tc):
            await wait_depth(broker, "Q", 200)
        await consume(b, "/queue/Q", 100)
        for broker in (ta, tc):
            await wait_depth(broker, "Q", 100)
        ids_a = await consume(ta, "/queue/Q", 100)
        assert sorted(ids_a) == sorted(f"n{i}" for i in range(100))


async def test_scenario_15_16_internal_and_temporary_queues_are_not_mirrored(
    tmp_path: Path,
) -> None:
    """Artemis scenarios 15 (internal queues) and 16 (temporary queues, plain topic
    subscribers): nothing of them on the target, no event in the mirror queue."""
    async with target(tmp_path) as b, source(tmp_path, [("dr", amqp_uri(b), "")]) as a:
        before = a.service.region.mirror.statistics()["dr"]
        async with await connect(a.stomp_urls[0]) as client:
            subscriber = await client.subscribe("/topic/news")  # non-durable
            await client.send("/topic/news", "n", persistent=True, receipt=True)
            await subscriber.get(timeout=WAIT_S)
            await client.send("/temp-queue/replies", "r", receipt=True)
            await client.send("/queue/$ACTIVEMQ_ARTEMIS_internal", "i", receipt=True)
        added = a.service.region.mirror.statistics()["dr"] - before
        assert added == 1  # the topic's address, nothing else
        await wait_drained(a)
        region = b.service.region
        assert not [d for d in region.queues if d.is_temporary or "ARTEMIS" in d.name]


async def test_scenario_17_expiry_is_mirrored_once(tmp_path: Path) -> None:
    """Artemis scenario 17 (BrokerInSyncTest.testExpiry): a message expires on the source;
    Q = 0 on both and the dead-letter queue holds 1 on both, not 2."""
    async with target(tmp_path) as b, source(tmp_path, [("dr", amqp_uri(b), "")]) as a:
        async with await connect(a.stomp_urls[0]) as client:
            expires = int(time.time() * 1000) + 800
            await client.send("/queue/Q", "soon", persistent=True, expires=expires)
        await wait_depth(b, "Q", 1)
        await asyncio.sleep(1.0)
        async with await connect(a.stomp_urls[0]) as client:
            subscription = await client.subscribe("/queue/Q")  # finds it expired
            with pytest.raises(TimeoutError):
                await subscription.get(timeout=0.5)
        for broker in (a, b):
            await wait_depth(broker, "Q", 0)
            await wait_depth(broker, "ActiveMQ.DLQ", 1)
        await wait_drained(a)
        await asyncio.sleep(0.5)
        assert depth(b, "ActiveMQ.DLQ") == 1


async def test_scenario_22_ack_overtaking_the_send(tmp_path: Path) -> None:
    """Artemis scenario 22 (AMQPMirrorFastACKTest): a consumer on the source acks each message
    as it arrives; the target ends with Q = 0 and 10 messages added, none stuck."""
    async with target(tmp_path) as b, source(tmp_path, [("dr", amqp_uri(b), "")]) as a:
        async with await connect(a.stomp_urls[0]) as client:
            subscription = await client.subscribe("/queue/Q", ack="client-individual")
            for i in range(10):
                await client.send("/queue/Q", f"m{i}", persistent=True)
                message = await subscription.get(timeout=WAIT_S)
                await message.ack()
        await wait_drained(a)
        await wait_depth(b, "Q", 0)
        await wait_until(
            lambda: b.service.region.queues[Destination.queue("Q")].stats.enqueued == 10,
            WAIT_S,
            "10 added on the target",
        )
        assert depth(a, MIRROR_QUEUE + "dr") == 0
