"""`<mirror>` across broker processes that are killed and restarted: store and forward while the
target is away, crash consistency of the mirror queue (its events are committed with what they
reproduce), and a mirror to itself (Artemis scenarios named in each test)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from ferrymq.client import connect
from ferrymq.testing import BrokerProcess, free_port, running_broker, wait_until
from ferrymq.testing.brokers import amqp_port
from tests.connections.mirror_support import (
    WAIT_S,
    browse,
    mirror_process,
    node_config,
)

pytestmark = pytest.mark.asyncio


@pytest.fixture
def processes() -> Iterator[list[BrokerProcess]]:
    started: list[BrokerProcess] = []
    yield started
    for process in started:
        process.kill()


async def wait_browsed(url: str, queue: str, expected: list[str]) -> None:
    seen: list[str] = []

    async def check() -> bool:
        seen[:] = await browse(url, queue)
        return sorted(seen) == sorted(expected)

    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_S * 2
    while not await check():
        if loop.time() > deadline:
            raise AssertionError(f"{queue} holds {len(seen)} (want {len(expected)}): {seen[:5]}")
        await asyncio.sleep(0.2)


async def test_sigkill_of_the_source_with_a_backlog_then_restart_every_event_arrives_once(
    tmp_path: Path, processes: list[BrokerProcess]
) -> None:
    """Artemis scenario 3 (testReplicaDeferredStart) with a crash: the target is down while
    200 are sent and 50 consumed on the source, the source is SIGKILLed with those events in its
    mirror queue, restarted, then the target starts: 150 arrive, once each. Then scenario 9
    (testRouteSurviving): both stopped and started again, still 150, no duplicate."""
    port_b = free_port()
    a = mirror_process(
        tmp_path, "a", [("dr", f"tcp://127.0.0.1:{port_b}", "")], amqp_port=free_port()
    )
    b = mirror_process(tmp_path, "b", [], amqp_port=port_b)
    processes += [a, b]
    a.start()
    async with await connect(a.url) as client:
        for i in range(200):
            await client.send("/queue/Q", f"m{i}", persistent=True)
        subscription = await client.subscribe("/queue/Q", ack="client-individual")
        for _ in range(50):
            message = await subscription.get(timeout=WAIT_S)
            await message.ack(receipt=True)
    a.kill()
    a.start()
    b.start()
    expected = [f"m{i}" for i in range(50, 200)]
    await wait_browsed(b.url, "Q", expected)
    await asyncio.sleep(1.0)  # a duplicate would show now
    assert sorted(await browse(b.url, "Q")) == sorted(expected)
    assert sorted(await browse(a.url, "Q")) == sorted(expected)
    a.stop()
    b.stop()
    b.start()
    a.start()
    await asyncio.sleep(1.0)
    assert sorted(await browse(b.url, "Q")) == sorted(expected)


async def test_scenario_20_sync_mirror_blocks_the_sender_while_the_target_is_down(
    tmp_path: Path, processes: list[BrokerProcess]
) -> None:
    """Artemis scenario 20 (AMQPSyncMirrorTest): with `sync="true"` a send's receipt, an ack's
    receipt and a commit's receipt wait until the target has applied the event; while the target
    is down they stay pending (the client's own timeout decides), and complete once it is back."""
    port_b = free_port()
    b = mirror_process(tmp_path, "b", [], amqp_port=port_b)
    processes.append(b)
    b.start()
    config = node_config(tmp_path, "a", [("dr", f"tcp://127.0.0.1:{port_b}", 'sync="true"')])
    async with running_broker(config) as a, await connect(a.stomp_urls[0]) as client:
        await client.send("/queue/Q", "first", persistent=True)  # the target is up: completes
        assert await browse(b.url, "Q") == ["first"]
        b.stop()
        sending = asyncio.ensure_future(client.send("/queue/Q", "second", persistent=True))
        done, _ = await asyncio.wait([sending], timeout=1.5)
        assert not done, "the receipt came before the target had the message"
        b.start()
        await asyncio.wait_for(sending, WAIT_S)
        assert sorted(await browse(b.url, "Q")) == ["first", "second"]

        subscription = await client.subscribe("/queue/Q", ack="client-individual")
        message = await subscription.get(timeout=WAIT_S)
        b.stop()
        acking = asyncio.ensure_future(message.ack(receipt=True))
        acked, _ = await asyncio.wait([acking], timeout=1.5)
        assert not acked, "the ack's receipt came before the target applied it"
        b.start()
        await asyncio.wait_for(acking, WAIT_S)
        await wait_until_browsed_count(b.url, "Q", 1)

        b.stop()
        async with client.transaction() as tx:
            await client.send("/queue/Q", "in-tx", persistent=True, transaction=tx)
            committing = asyncio.ensure_future(tx.commit())
            committed, _ = await asyncio.wait([committing], timeout=1.5)
            assert not committed, "the commit's receipt came before the target had its send"
            b.start()
            await asyncio.wait_for(committing, WAIT_S)
        assert "in-tx" in await browse(b.url, "Q")


async def wait_until_browsed_count(url: str, queue: str, count: int) -> None:
    for _ in range(100):
        if len(await browse(url, queue)) == count:
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"{queue} never held {count}")


async def test_scenario_23_mirror_to_itself_is_refused(tmp_path: Path) -> None:
    """Artemis scenario 23 (ValidateAMQPErrorsTest.testConnectItself): the uri is the broker's
    own AMQP listener; every attempt fails at the mirror link and the connection stops after
    its reconnect-attempts."""
    port = free_port()
    config = node_config(
        tmp_path,
        "a",
        [("self", f"tcp://127.0.0.1:{port}", "")],
        amqp_port=port,
        options='reconnect-attempts="2"',
    )
    async with running_broker(config) as a:
        connections = a.broker_connections

        def state() -> dict[str, object]:
            (statistics,) = connections.statistics()
            return statistics

        await wait_until(lambda: state()["state"] == "failed", WAIT_S, "the connection stops")
        assert "itself" in str(state()["last_error"])
        assert state()["connects"] == 3
        await asyncio.sleep(0.5)
        assert state()["connects"] == 3  # no more attempts


async def test_scenario_20_sync_mirror_holds_an_amqp_senders_disposition_too(
    tmp_path: Path, processes: list[BrokerProcess]
) -> None:
    """The same wait for a client of the source's AMQP listener: its transfer is settled only
    once the target has applied it."""
    port_b = free_port()
    b = mirror_process(tmp_path, "b", [], amqp_port=port_b)
    processes.append(b)
    config = node_config(tmp_path, "a", [("dr", f"tcp://127.0.0.1:{port_b}", 'sync="true"')])
    async with running_broker(config) as a:
        url = f"amqp://127.0.0.1:{amqp_port(a)}"
        async with await connect(url) as client:
            sending = asyncio.ensure_future(client.send("/queue/Q", "over amqp", persistent=True))
            done, _ = await asyncio.wait([sending], timeout=1.5)
            assert not done, "the transfer was settled before the target had the message"
            b.start()
            await asyncio.wait_for(sending, WAIT_S)
        assert await browse(b.url, "Q") == ["over amqp"]
