"""Dual mirror for disaster recovery (ActiveMQ Artemis manual, "Broker Connections", "Dual
Mirror (Disaster Recovery)"): DC1 and DC2 mirror each other; a client with a failover URL over
both consumes on DC1, DC1 is SIGKILLed while it consumes, and the client carries on at DC2 with
every acknowledged message gone and every other one there, counted by id."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from ferrymq.client import ClientError, connect
from ferrymq.testing import BrokerProcess, free_port
from tests.connections.mirror_support import WAIT_S, browse, mirror_process

pytestmark = pytest.mark.asyncio

TOTAL = 300
BEFORE_KILL = 100


@pytest.fixture
def data_centers(tmp_path: Path) -> Iterator[tuple[BrokerProcess, BrokerProcess]]:
    """DC1 mirrors to DC2 with `sync="true"` (an acknowledged operation is on DC2); DC2
    mirrors back asynchronously (with DC1 gone, a sync mirror would hold DC2's clients)."""
    port1, port2 = free_port(), free_port()
    dc1 = mirror_process(
        tmp_path, "dc1", [("dc2", f"tcp://127.0.0.1:{port2}", 'sync="true"')], amqp_port=port1
    )
    dc2 = mirror_process(
        tmp_path, "dc2", [("dc1", f"tcp://127.0.0.1:{port1}", "")], amqp_port=port2
    )
    try:
        yield dc1.start(), dc2.start()
    finally:
        dc1.kill()
        dc2.kill()


async def test_dual_mirror_failover_after_sigkill_loses_and_duplicates_nothing(
    data_centers: tuple[BrokerProcess, BrokerProcess],
) -> None:
    dc1, dc2 = data_centers
    url = f"failover:({dc1.url},{dc2.url})?randomize=false"
    expected = {f"m{i}" for i in range(TOTAL)}
    async with await connect(url) as producer:
        for i in range(TOTAL):
            await producer.send("/queue/orders", f"m{i}", persistent=True)
    assert sorted(await browse(dc2.url, "orders")) == sorted(expected)  # sync: already there

    acknowledged: list[str] = []  # receipted: on DC2 too
    attempted: set[str] = set()
    killed = asyncio.Event()
    async with await connect(url) as consumer:
        subscription = await consumer.subscribe("/queue/orders", ack="client-individual")
        while len(set(acknowledged)) < TOTAL:
            message = await subscription.get(timeout=WAIT_S * 2)
            attempted.add(message.text)
            try:
                await message.ack(receipt=True)
            except ClientError:  # the ack in flight when DC1 died
                continue
            acknowledged.append(message.text)
            if len(acknowledged) == BEFORE_KILL and not killed.is_set():
                dc1.kill()  # under load: the consumer is mid-stream
                killed.set()
                on_dc2 = set(await browse(dc2.url, "orders"))
                gone = set(acknowledged)
                assert not on_dc2 & gone, "an acknowledged message came back on DC2"
                assert expected - attempted <= on_dc2, "a message never acknowledged is lost"
    assert killed.is_set()
    assert len(acknowledged) == len(set(acknowledged)) == TOTAL, "0 lost, 0 duplicated"
    assert set(acknowledged) == expected
    assert await browse(dc2.url, "orders") == []


async def test_dual_mirror_producer_carries_on_at_dc2_after_a_sigkill(
    data_centers: tuple[BrokerProcess, BrokerProcess],
) -> None:
    """A producer with the failover URL sends while DC1 is SIGKILLed: every send it saw
    receipted is on DC2 once, and a send retried after the failover is not there twice."""
    dc1, dc2 = data_centers
    url = f"failover:({dc1.url},{dc2.url})?randomize=false"
    receipted: list[str] = []
    under_way = asyncio.Event()

    async def kill_mid_stream() -> None:
        await under_way.wait()
        await asyncio.to_thread(dc1.kill)  # while the producer sends the next ones

    async with await connect(url) as producer:
        killer = asyncio.ensure_future(kill_mid_stream())
        for i in range(TOTAL):
            await producer.send("/queue/incoming", f"p{i}", persistent=True)
            receipted.append(f"p{i}")
            if len(receipted) == BEFORE_KILL:
                under_way.set()
        await killer
    on_dc2 = await browse(dc2.url, "incoming")
    assert len(on_dc2) == len(set(on_dc2)), "a message is on DC2 twice"
    assert set(receipted) <= set(on_dc2), "a receipted message is lost"


async def test_dual_mirror_survives_a_sigkill_of_dc2_under_load(
    data_centers: tuple[BrokerProcess, BrokerProcess],
) -> None:
    """The other side dies: DC2 (the target of DC1's sync mirror) is SIGKILLed while a producer
    sends to DC1, and restarted. DC1's sends wait for it (sync) and none is lost; DC2 ends with
    every message once; consuming them on DC1 empties DC2 too (acks mirrored after the crash)."""
    dc1, dc2 = data_centers
    receipted: list[str] = []
    under_way = asyncio.Event()

    async def kill_and_restart_dc2() -> None:
        await under_way.wait()
        await asyncio.to_thread(dc2.kill)
        await asyncio.to_thread(dc2.restart)

    async with await connect(dc1.url) as producer:
        killer = asyncio.ensure_future(kill_and_restart_dc2())
        for i in range(TOTAL):
            await producer.send("/queue/payments", f"s{i}", persistent=True)
            receipted.append(f"s{i}")
            if len(receipted) == BEFORE_KILL:
                under_way.set()
        await killer
    expected = sorted(receipted)
    assert sorted(await browse(dc1.url, "payments")) == expected
    on_dc2 = await browse(dc2.url, "payments")
    assert sorted(on_dc2) == expected, "DC2 lost or duplicated a receipted message"

    async with await connect(dc1.url) as consumer:
        subscription = await consumer.subscribe("/queue/payments", ack="client-individual")
        for _ in range(TOTAL):
            message = await subscription.get(timeout=WAIT_S)
            await message.ack(receipt=True)  # sync: on DC2 once receipted
    assert await browse(dc2.url, "payments") == []
