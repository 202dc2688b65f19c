"""Issue 4, "How it is checked" 2: failover clients produce and consume 20,000 persistent messages
while the master is SIGKILLed three times in a row, the killed broker rejoining as slave each
time; every message whose send completed is consumed exactly once, counted by body, and nothing
is left behind.  One test per kind of group: shared file, shared database, pure master/slave.

Run with ``-s`` to see the takeover times.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path

from ferrymq.client import Connection, Subscription, connect
from ferrymq.testing import BrokerProcess, broker_group, start_group, wait_for_master, wait_until
from tests.ha.test_jdbc_group import group_config as database_group
from tests.ha.test_pure_master_slave import MASTER, slave_config
from tests.ha.test_shared_file_group import group_config as shared_file_group
from tests.postgres import PostgresDatabase

COUNT = 20_000
KILLS = 3
IN_FLIGHT = 100
PREFETCH = 200
URL_OPTIONS = "randomize=false&initialReconnectDelay=50&maxReconnectDelay=500"

Rejoin = Callable[[BrokerProcess, BrokerProcess], Awaitable[BrokerProcess]]
"""Bring a killed broker back as a slave of the new master; returns the process now running."""


class Tally:
    def __init__(self, subscription: Subscription) -> None:
        self.subscription = subscription
        self.counts: Counter[str] = Counter()
        self._changed = asyncio.Event()

    async def run(self) -> None:
        async for message in self.subscription:
            self.counts[message.text] += 1
            await message.ack()
            self._changed.set()

    async def until(self, done: Callable[[], bool], within_s: float = 60.0) -> None:
        await wait_until(
            done,
            within_s,
            "the messages awaited",
            changed=self._changed,
            detail=lambda: f"{len(self.counts)} distinct bodies received",
        )


async def produce(connection: Connection, bodies: list[str], queue: str = "/queue/soak") -> None:
    """Persistent sends, each waiting for its receipt, at most ``IN_FLIGHT`` at a time."""
    slots = asyncio.Semaphore(IN_FLIGHT)

    async def one(body: str) -> None:
        async with slots:
            await connection.send(queue, body, persistent=True)

    async with asyncio.TaskGroup() as tasks:
        for body in bodies:
            tasks.create_task(one(body))


def _master(brokers: list[BrokerProcess]) -> BrokerProcess:
    masters = [b for b in brokers if b.state == "master"]
    assert len(masters) == 1, [b.state for b in brokers]
    return masters[0]


async def _restart_as_slave(killed: BrokerProcess, master: BrokerProcess) -> BrokerProcess:
    return await asyncio.to_thread(killed.start, as_slave=True)


async def soak(brokers: list[BrokerProcess], rejoin: Rejoin = _restart_as_slave) -> None:
    url = f"failover:({','.join(b.url for b in brokers)})?{URL_OPTIONS}"
    producer = await connect(url)
    consumer = await connect(url)
    tally = Tally(
        await consumer.subscribe("/queue/soak", ack="client-individual", prefetch=PREFETCH)
    )
    bodies = [f"m{n}" for n in range(COUNT)]
    takeovers: list[float] = []
    async with asyncio.TaskGroup() as tasks:
        consuming = tasks.create_task(tally.run())
        producing = tasks.create_task(produce(producer, bodies))
        for kill in range(1, KILLS + 1):
            goal = COUNT * kill // (KILLS + 1)
            await tally.until(lambda: len(tally.counts) >= goal)  # noqa: B023 - awaited now
            master = _master(brokers)
            killed_at = time.monotonic()
            master.kill()
            others = [b for b in brokers if b is not master]
            successor = await asyncio.to_thread(wait_for_master, others, timeout_s=30.0)
            takeovers.append(time.monotonic() - killed_at)
            replacement = await rejoin(master, successor)
            brokers[brokers.index(master)] = replacement
        await producing
        await producer.send("/queue/soak", "end", persistent=True)
        await tally.until(lambda: tally.counts["end"] > 0)
        consuming.cancel()
    assert tally.counts.pop("end") == 1
    assert set(tally.counts) == set(bodies)
    assert [body for body, n in tally.counts.items() if n != 1] == []
    # Nothing is left behind on the last master.
    leftover = await consumer.subscribe("/queue/soak", ack="client-individual", id="check")
    try:
        message = await leftover.get(timeout=0.5)
    except TimeoutError:
        message = None
    assert message is None, f"left behind: {message.text if message else ''}"
    print(
        "\n[takeover] "
        + ", ".join(f"{t * 1000:.0f} ms" for t in takeovers)
        + f"; duplicates dropped by the client audit: {tally.subscription.duplicates_dropped}"
    )
    await producer.disconnect()
    await consumer.disconnect()


async def test_shared_file_group_loses_nothing(tmp_path: Path) -> None:
    config = shared_file_group(tmp_path / "shared")
    with broker_group(tmp_path, config, ("f1", "f2", "f3")) as brokers:
        await asyncio.to_thread(start_group, brokers)
        await soak(brokers)


async def test_database_group_loses_nothing(
    tmp_path: Path, postgres_database: PostgresDatabase
) -> None:
    config = database_group(postgres_database)
    with broker_group(tmp_path, config, ("d1", "d2", "d3")) as brokers:
        await asyncio.to_thread(start_group, brokers)
        await soak(brokers)


async def in_sync(master: BrokerProcess, mark: int) -> None:
    """Until ``master`` says its (new) slave is in sync: a slave reports itself as one as soon
    as it starts, before it has even reached its master, and a slave that never had the master's
    store cannot take over (killing the master earlier would test nothing but that)."""
    await wait_until(
        lambda: any(" is in sync" in line for line in master.output[mark:]),
        30.0,
        "the slave in sync with its master",
    )


async def test_pure_master_slave_pair_loses_nothing(tmp_path: Path) -> None:
    """The killed master comes back as the slave of the one that took over (its store is
    replaced by a snapshot), so the pair can lose its master again."""
    started: list[BrokerProcess] = []

    async def rejoin(killed: BrokerProcess, master: BrokerProcess) -> BrokerProcess:
        process = BrokerProcess(
            killed.data_dir,
            name=killed.name,
            port=killed.port,
            config_xml=slave_config(master.port).replace('brokerName="slave"', ""),
        )
        started.append(process)
        mark = len(master.output)
        await asyncio.to_thread(process.start, as_slave=True)
        await in_sync(master, mark)
        return process

    master = BrokerProcess(
        tmp_path / "m", name="m", config_xml=MASTER.replace('brokerName="master"', "")
    )
    started.append(master)
    try:
        await asyncio.to_thread(master.start, wait=False)
        slave = BrokerProcess(
            tmp_path / "s",
            name="s",
            config_xml=slave_config(master.port).replace('brokerName="slave"', ""),
        )
        started.append(slave)
        await asyncio.to_thread(slave.start, as_slave=True)
        assert await asyncio.to_thread(master.wait_for_state, "master")
        await in_sync(master, 0)
        await soak([master, slave], rejoin)
    finally:
        for process in started:
            process.kill()
