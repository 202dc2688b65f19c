"""Queue federation between FerryMQ brokers (ActiveMQ Artemis documentation, "Broker
Connections", Federation; Artemis's scenarios 30, 33, 34): demand, priority-adjustment,
include-federated, and demand that goes away mid-stream."""

from __future__ import annotations

import asyncio
from pathlib import Path

from ferrymq.amqp import federation_codes as fc
from ferrymq.stomp import constants as h
from tests.connections.federation_support import (
    Federation,
    client,
    depth,
    drain,
    federated,
    queue,
    queue_consumers,
    receive,
    until,
)

QUEUE_POLICY = (
    '<local-queue-policy name="queues"><include address-match="#" queue-match="orders"/>'
    "</local-queue-policy>"
)


async def test_scenario_30_queue_demand_federates_from_the_remote(tmp_path: Path) -> None:
    async with federated(tmp_path, {"R": (), "L": (Federation("R", QUEUE_POLICY),)}) as brokers:
        local, remote = await client(brokers["L"]), await client(brokers["R"])
        await remote.send("/queue/other", "not federated", headers={"n": "x"}, persistent=True)
        consumer = await local.subscribe("/queue/orders")
        await until(lambda: queue_consumers(brokers["R"], "orders") == 1, "receiver on R")
        await remote.send("/queue/orders", "order", headers={"n": "1"}, persistent=True)
        assert await receive(consumer, 1) == ["1"]
        await consumer.unsubscribe()
        await until(lambda: queue_consumers(brokers["R"], "orders") == 0, "receiver gone")
        assert depth(brokers["R"], "other") == 1
        await local.close()
        await remote.close()


async def test_priority_adjustment_local_consumers_win_while_they_have_room(
    tmp_path: Path,
) -> None:
    """R's own consumer (priority 0) gets R's messages while it has room; the federation
    receiver (0 + priority-adjustment -1) gets only what it cannot take."""
    async with federated(tmp_path, {"R": (), "L": (Federation("R", QUEUE_POLICY),)}) as brokers:
        local, remote = await client(brokers["L"]), await client(brokers["R"])
        on_l = await local.subscribe("/queue/orders")
        await until(lambda: queue_consumers(brokers["R"], "orders") == 1, "receiver on R")
        on_r = await remote.subscribe("/queue/orders", ack=h.ACK_CLIENT_INDIVIDUAL, prefetch=5)
        orders = queue(brokers["R"], "orders")
        assert orders is not None
        (federation_consumer,) = [c for c in orders.consumers if fc.FEDERATION_CONSUMER in c.extra]
        assert federation_consumer.priority == -1
        for n in range(20):
            await remote.send("/queue/orders", "o", headers={"n": str(n)}, persistent=True)
        taken_on_r = await receive(on_r, 5)
        taken_on_l = await receive(on_l, 15)
        assert sorted(taken_on_r + taken_on_l, key=int) == [str(n) for n in range(20)]
        assert taken_on_r == ["0", "1", "2", "3", "4"]  # R's consumer first, up to its room
        await local.close()
        await remote.close()


async def test_scenario_34_queue_whose_only_consumer_is_a_federation_is_no_demand(
    tmp_path: Path,
) -> None:
    """A <- B <- C with queue policies: A's consumer makes a federation consumer on B, which is
    no demand for B's federation toward C (include-federated=false): nothing is taken from C.
    With include-federated=true it is, and C's message reaches A."""
    for include, expected in (("false", 0), ("true", 1)):
        policy = QUEUE_POLICY.replace(
            'name="queues"', f'name="queues" include-federated="{include}"'
        )
        topology = {
            "C": (),
            "B": (Federation("C", policy),),
            "A": (Federation("B", policy),),
        }
        async with federated(tmp_path / include, topology) as brokers:
            a, c = await client(brokers["A"]), await client(brokers["C"])
            consumer = await a.subscribe("/queue/orders")
            await until(lambda: queue_consumers(brokers["B"], "orders") == 1, "A's receiver on B")
            await c.send("/queue/orders", "from C", headers={"n": "c"}, persistent=True)
            await asyncio.sleep(0.5)
            assert queue_consumers(brokers["C"], "orders") == expected
            assert len(await drain(consumer, 1.0 if expected else 0.3)) == expected
            await a.close()
            await c.close()


async def test_scenario_33_demand_going_away_mid_stream_loses_and_duplicates_nothing(
    tmp_path: Path,
) -> None:
    """2000 messages on R; L's consumer takes some and goes while the federation receiver has
    messages in flight: it drains before it detaches, so every message is on L or on R, once
    (ARTEMIS-5215)."""
    total = 2000
    async with federated(tmp_path, {"R": (), "L": (Federation("R", QUEUE_POLICY),)}) as brokers:
        local, remote = await client(brokers["L"]), await client(brokers["R"])
        for n in range(total):
            await remote.send("/queue/orders", "o", headers={"n": str(n)}, persistent=n % 2 == 0)
        consumer = await local.subscribe("/queue/orders", ack=h.ACK_CLIENT_INDIVIDUAL, prefetch=10)
        taken = []
        for _ in range(100):
            message = await consumer.get(timeout=10)
            taken.append(message.headers["n"])
            await message.ack()
        await consumer.unsubscribe()
        await until(lambda: queue_consumers(brokers["R"], "orders") == 0, "receiver detached")
        remaining_l, remaining_r = depth(brokers["L"], "orders"), depth(brokers["R"], "orders")
        assert len(taken) + remaining_l + remaining_r == total
        # Every message once: what stayed on R, then what L holds (its consumer makes demand
        # again, so R's remainder comes over too).
        on_r = await remote.subscribe("/queue/orders")
        rest = await receive(on_r, remaining_r) if remaining_r else []
        await on_r.unsubscribe()
        on_l = await local.subscribe("/queue/orders")
        rest += await receive(on_l, remaining_l)
        rest += await drain(on_l)
        assert sorted(taken + rest, key=int) == [str(n) for n in range(total)]
        await local.close()
        await remote.close()
