"""``ferrymq stat`` shows a broker's network bridges (issue 5 "Observability").

The brokers run in this process; ``main`` runs its own blocking I/O, so it runs in a worker
thread while the brokers serve on the test's loop.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ferrymq.cli.main import main
from ferrymq.client import connect
from ferrymq.testing import wait_until
from ferrymq.testing.network import BrokerNetwork

WAIT_S = 15.0


async def stat(capsys: pytest.CaptureFixture[str], admin_url: str) -> list[str]:
    code = await asyncio.to_thread(main, ["stat", "--admin", admin_url])
    out = capsys.readouterr().out
    assert code == 0
    return out.splitlines()


async def test_stat_lists_each_bridge_its_demand_and_forwarded_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    net = BrokerNetwork(tmp_path)
    net.add(
        "A",
        '<networkConnector name="to-B" uri="static:({B})" duplex="true" '
        'decreaseNetworkConsumerPriority="true"/>',
    )
    net.add("B", attributes='brokerId="id-of-B"')
    net.enable_admin("A")
    net.enable_admin("B")
    async with net:
        await net.wait_for_bridges()
        consumer = await connect(net.url("B"))
        producer = await connect(net.url("A"))
        try:
            sub = await consumer.subscribe("/queue/orders", ack="client-individual")
            await net.wait_for_demand("A", "queue://orders")
            for i in range(4):
                await producer.send("/queue/orders", f"m{i}", persistent=True)
            for _ in range(4):
                await (await sub.get(timeout=WAIT_S)).ack()
            await wait_until(
                lambda: net.demand("A", "queue://orders")[0]["forwarded"] == 4,
                WAIT_S,
                "4 messages counted as forwarded",
            )
            lines = await stat(capsys, net.admin_url("A"))
            responder = await stat(capsys, net.admin_url("B"))
        finally:
            await producer.disconnect()
            await consumer.disconnect()
    assert lines[0].startswith("broker A: master")
    # B has no connector of its own: the duplex bridge A opened is listed there too.
    assert responder[1:3] == [
        "network bridge to-B: B (id id-of-B) <-> A, duplex opened by A, started",
        "  outbound id-of-B -> A: 0 forwarded, 0 demand subscription(s)",
    ]
    assert lines[1:5] == [
        "network bridge to-B: A <-> B (id id-of-B), duplex, started",
        "  outbound A -> id-of-B: 4 forwarded, 1 demand subscription(s)",
        "    queue orders: 1 consumer(s), priority -5, 4 forwarded",
        "  inbound id-of-B -> A: 0 forwarded, 0 demand subscription(s)",
    ]
    assert lines[5].split() == ["TYPE", "NAME", "DEPTH", "ENQUEUED", "DEQUEUED", "CONSUMERS"]


async def test_stat_shows_a_bridge_that_has_not_reached_its_broker(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    net = BrokerNetwork(tmp_path)
    net.add("A", '<networkConnector name="to-B" uri="static:({B})"/>')
    net.add("B")
    net.enable_admin("A")
    await net.start("A")  # B never starts: the bridge keeps trying
    try:
        lines = await stat(capsys, net.admin_url("A"))
    finally:
        await net.stop()
    assert lines[1] == f"network bridge to-B: A -> {net.url('B')} (not yet known), connecting"
