"""What other brokers' mirrors applied on this broker, at the operator's surfaces: the admin
API's broker document (``mirror_target``), ``ferrymq stat`` and ``/metrics``
(``ferrymq_mirror_target_*``)."""

from __future__ import annotations

import asyncio
import urllib.request
from pathlib import Path

import pytest

from ferrymq.broker import Broker
from ferrymq.cli.main import main
from ferrymq.config.broker_connections import MirrorConfig
from ferrymq.testing import wait_until
from tests.connections.mirror_support import WAIT_S, consume, send
from tests.connections.runtime_support import amqp_url, broker_with_connections, connection
from tests.connections.test_runtime_admin import admin_url, call


def metric(text: str, name: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


async def test_mirror_target_numbers_in_api_stat_and_metrics(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async with broker_with_connections(tmp_path / "b", name="b", admin=True) as target:
        admin = admin_url(target)
        status, document = await call(f"{admin}/api/v1/broker")
        assert status == 200
        assert document["mirror_target"] == {
            "sends": 0,
            "duplicates": 0,
            "events": 0,
            "acks": 0,
            "acks_retried": 0,
            "acks_given_up": 0,
        }
        assert await asyncio.to_thread(main, ["stat", "--admin", admin]) == 0
        assert "mirror target" not in capsys.readouterr().out  # a broker nobody mirrors to

        dr = connection("dr", amqp_url(target), MirrorConfig())
        async with broker_with_connections(tmp_path / "a", dr, name="a") as source:
            await send(source, "/queue/orders", 3)
            await consume(source, "/queue/orders", 1)

            async def applied() -> dict[str, int]:
                return dict((await call(f"{admin}/api/v1/broker"))[1]["mirror_target"])

            numbers: dict[str, int] = {}

            async def settled() -> bool:
                numbers.update(await applied())
                return numbers["sends"] == 3 and numbers["acks"] == 1

            deadline = asyncio.get_running_loop().time() + WAIT_S
            while not await settled():
                assert asyncio.get_running_loop().time() < deadline, numbers
                await asyncio.sleep(0.1)
        assert numbers["events"] >= 1  # the queue's creation
        assert numbers["duplicates"] == numbers["acks_given_up"] == 0

        assert await asyncio.to_thread(main, ["stat", "--admin", admin]) == 0
        out = capsys.readouterr().out
        assert f"mirror target: 3 send(s), 0 duplicate(s), {numbers['events']} event(s)" in out
        assert "1 ack(s) (0 retried, 0 given up)" in out

        text = await asyncio.to_thread(_get, f"{admin}/metrics")
        assert metric(text, "ferrymq_mirror_target_sends_total") == 3
        assert metric(text, "ferrymq_mirror_target_acks_total") == 1
        assert metric(text, "ferrymq_mirror_target_acks_given_up_total") == 0
        await wait_until(lambda: _depth(target, "orders") == 2, WAIT_S, "2 left on b")


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return str(answer.read().decode())


def _depth(broker: Broker, queue: str) -> int | None:
    from ferrymq.core.destination import Destination

    found = broker.service.region.queues.get(Destination.queue(queue))
    return None if found is None else found.depth
