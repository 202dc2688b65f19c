"""The subscription an address receiver makes on the remote: kept while the connection is
down (what is published meanwhile crosses when it comes back), and removed by ``auto-delete``
after ``auto-delete-delay`` ms when it holds at most ``auto-delete-message-count`` messages
(ActiveMQ Artemis documentation, "Broker Connections", address federation)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from ferrymq.broker import Broker
from tests.connections.federation_support import (
    Federation,
    client,
    federated,
    federation_subscriptions,
    receive,
    until,
)

DELAY_MS = 1500


def policy(auto_delete: bool, count: int = 2) -> str:
    return (
        f'<local-address-policy name="p" auto-delete="{str(auto_delete).lower()}" '
        f'auto-delete-delay="{DELAY_MS}" auto-delete-message-count="{count}">'
        '<include address-match="test"/></local-address-policy>'
    )


async def _disconnected_with(brokers: dict[str, Broker], published: int) -> tuple[float, int]:
    """L's consumer makes the subscription on R; L's connection stops; ``published``
    messages go to R meanwhile. Returns when it stopped, and the subscription's depth."""
    local, remote = await client(brokers["L"]), await client(brokers["R"])
    await local.subscribe("/topic/test")
    await until(lambda: len(federation_subscriptions(brokers["R"], "test")) == 1, "sub on R")
    stopped = time.monotonic()
    await brokers["L"].broker_connections.stop_connection("L-to-R")
    for n in range(published):
        await remote.send("/topic/test", "kept", headers={"n": str(n)}, persistent=True)
    (subscription,) = federation_subscriptions(brokers["R"], "test")
    assert not subscription.consumers
    await local.close()
    await remote.close()
    return stopped, subscription.depth


@pytest.mark.parametrize("published", [0, 2])
async def test_auto_delete_after_the_delay_when_at_most_the_count(
    tmp_path: Path, published: int
) -> None:
    topology = {"R": (), "L": (Federation("R", policy(True)),)}
    async with federated(tmp_path, topology) as brokers:
        stopped, depth = await _disconnected_with(brokers, published)
        assert depth == published
        assert len(federation_subscriptions(brokers["R"], "test")) == 1  # not before the delay
        await until(lambda: federation_subscriptions(brokers["R"], "test") == [], "auto-deleted")
        assert time.monotonic() - stopped >= DELAY_MS / 1000


async def test_auto_delete_keeps_a_subscription_holding_more_than_the_count(
    tmp_path: Path,
) -> None:
    topology = {"R": (), "L": (Federation("R", policy(True, count=2)),)}
    async with federated(tmp_path, topology) as brokers:
        await _disconnected_with(brokers, 3)
        await asyncio.sleep(DELAY_MS / 1000 + 1.0)
        assert len(federation_subscriptions(brokers["R"], "test")) == 1


async def test_without_auto_delete_the_subscription_keeps_what_came_meanwhile(
    tmp_path: Path,
) -> None:
    """auto-delete false: the subscription outlives the delay, and once the connection is
    back the messages published while it was down reach L's consumer."""
    topology = {"R": (), "L": (Federation("R", policy(False)),)}
    async with federated(tmp_path, topology) as brokers:
        local = await client(brokers["L"])
        consumer = await local.subscribe("/topic/test")
        await until(lambda: len(federation_subscriptions(brokers["R"], "test")) == 1, "sub on R")
        await brokers["L"].broker_connections.stop_connection("L-to-R")
        remote = await client(brokers["R"])
        for n in range(5):
            await remote.send("/topic/test", "kept", headers={"n": str(n)}, persistent=True)
        await asyncio.sleep(DELAY_MS / 1000 + 0.5)
        assert len(federation_subscriptions(brokers["R"], "test")) == 1
        await brokers["L"].broker_connections.start_connection("L-to-R")
        assert await receive(consumer, 5) == ["0", "1", "2", "3", "4"]
        await local.close()
        await remote.close()
