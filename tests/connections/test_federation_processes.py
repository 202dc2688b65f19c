"""Queue federation between two ``ferrymq broker`` processes, with the federating broker
SIGKILLed while messages cross: every message is consumed, none twice except a redelivery
(flagged) of one the killed broker had handed out unacknowledged."""

from __future__ import annotations

import asyncio
from pathlib import Path

from ferrymq.client import Subscription, connect
from ferrymq.stomp import constants as h
from ferrymq.testing import BrokerProcess, free_port

TOTAL = 2000


def config(name: str, amqp_port: int, connections: str = "") -> str:
    return f"""<beans xmlns="http://www.springframework.org/schema/beans">
<broker xmlns="http://activemq.apache.org/schema/core" brokerName="{name}" persistent="true">
  <broker-connections>{connections}</broker-connections>
  <transportConnectors>
    <transportConnector name="amqp" uri="amqp://127.0.0.1:{amqp_port}"/>
  </transportConnectors>
</broker></beans>"""


FEDERATION = """<amqp-connection uri="tcp://127.0.0.1:{port}" name="from-r" retry-interval="100">
  <federation>
    <local-queue-policy name="orders"><include address-match="#" queue-match="orders"/>
    </local-queue-policy>
  </federation>
</amqp-connection>"""


async def _take(
    subscription: Subscription, seen: dict[str, int], redelivered: set[str], count: int
) -> None:
    for _ in range(count):
        message = await subscription.get(timeout=30)
        n = message.headers["n"]
        seen[n] = seen.get(n, 0) + 1
        if message.headers.get(h.REDELIVERED) == "true":
            redelivered.add(n)
        await message.ack()


async def _remaining(remote: BrokerProcess) -> int:
    """How many messages R's queue still holds (a browser counts them)."""
    browser_connection = await connect(remote.url)
    browser = await browser_connection.subscribe("/queue/orders", browser=True)
    count = 0
    async for _message in browser:
        count += 1
    await browser_connection.close()
    return count


async def test_federating_broker_killed_mid_stream_loses_and_duplicates_nothing(
    tmp_path: Path,
) -> None:
    r_amqp = free_port()
    remote = BrokerProcess(tmp_path / "r", name="R", config_xml=config("R", r_amqp))
    local = BrokerProcess(
        tmp_path / "l",
        name="L",
        config_xml=config("L", free_port(), FEDERATION.format(port=r_amqp)),
    )
    try:
        await asyncio.to_thread(remote.start)
        producer = await connect(remote.url)
        for n in range(TOTAL):
            await producer.send("/queue/orders", "o", headers={"n": str(n)}, persistent=True)
        await producer.close()
        await asyncio.to_thread(local.start)
        seen: dict[str, int] = {}
        redelivered: set[str] = set()
        consumer = await connect(local.url)
        orders = await consumer.subscribe("/queue/orders", ack=h.ACK_CLIENT_INDIVIDUAL, prefetch=20)
        await _take(orders, seen, redelivered, 50)
        await asyncio.to_thread(local.kill)  # mid-stream: receivers hold credit, sends in flight
        await consumer.close()
        assert await _remaining(remote) > 0, "the kill came after everything had crossed"
        await asyncio.to_thread(local.start)
        consumer = await connect(local.url)
        orders = await consumer.subscribe("/queue/orders", ack=h.ACK_CLIENT_INDIVIDUAL, prefetch=20)
        while len(seen) < TOTAL:
            await _take(orders, seen, redelivered, 1)
        await asyncio.sleep(1.0)  # anything more would be a duplicate
        with_more = await orders.get_many(100, timeout=0.5)
        assert with_more == []
        assert sorted(seen, key=int) == [str(n) for n in range(TOTAL)]
        twice = {n for n, count in seen.items() if count > 1}
        assert twice <= redelivered, f"received twice without a redelivery flag: {twice}"
        await consumer.close()
    finally:
        await asyncio.to_thread(local.stop)
        await asyncio.to_thread(remote.stop)
