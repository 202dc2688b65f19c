"""Issue 3, "How it is checked" 1: a producer and a consumer on ``failover:(A,B)`` while 10,000
persistent messages flow; A is SIGKILLed and restarted on its data directory, or the clients
move to B. Every message sent is received exactly once, counted by body.

Run with ``-s`` to see the measured failover times.
"""

from __future__ import annotations

import asyncio
from collections import Counter

from ferrymq.client import Connection, Subscription, connect
from tests.client.failover.conftest import Brokers, Watcher

COUNT = 10_000
IN_FLIGHT = 100
"""Sends awaiting their receipt at any time (a pipelined producer)."""
PREFETCH = 200


class Tally:
    """What a client-individual consumer received, in order, with loop times."""

    def __init__(self, subscription: Subscription) -> None:
        self.subscription = subscription
        self.counts: Counter[str] = Counter()
        self.times: list[float] = []
        self._goal: tuple[int, asyncio.Event] | None = None
        self._seen: dict[str, asyncio.Event] = {}

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        async for message in self.subscription:
            body = message.text
            self.counts[body] += 1
            self.times.append(loop.time())
            await message.ack()
            if self._goal is not None and len(self.counts) >= self._goal[0]:
                self._goal[1].set()
            if body in self._seen:
                self._seen[body].set()

    async def distinct(self, count: int, within_s: float = 30.0) -> None:
        event = asyncio.Event()
        self._goal = (count, event)
        if len(self.counts) < count:
            async with asyncio.timeout(within_s):
                await event.wait()

    async def body(self, body: str, within_s: float = 30.0) -> None:
        event = self._seen.setdefault(body, asyncio.Event())
        if self.counts[body] == 0:
            async with asyncio.timeout(within_s):
                await event.wait()

    def gap_around(self, moment: float) -> float:
        """From the last message received before ``moment`` to the first after it."""
        before = max(t for t in self.times if t <= moment)
        after = min(t for t in self.times if t > moment)
        return after - before


async def produce(connection: Connection, bodies: list[str]) -> None:
    slots = asyncio.Semaphore(IN_FLIGHT)

    async def one(body: str) -> None:
        async with slots:
            await connection.send("/queue/flow", body, persistent=True)

    async with asyncio.TaskGroup() as tasks:
        for body in bodies:
            tasks.create_task(one(body))


def report(title: str, tally: Tally, killed_at: float, watchers: dict[str, Watcher]) -> None:
    lines = [f"\n[failover] {title}"]
    lines.append(
        f"  consumer gap, last message before the kill to the first after it: "
        f"{tally.gap_around(killed_at) * 1000:.0f} ms"
    )
    for name, watcher in watchers.items():
        resumed = next(t for t in watcher.resumed_at if t > killed_at)
        lines.append(f"  {name}: kill -> reconnected {(resumed - killed_at) * 1000:.0f} ms")
    duplicates = tally.subscription.duplicates_dropped
    lines.append(f"  redeliveries of acknowledged messages dropped by the audit: {duplicates}")
    print("\n".join(lines))


async def test_1_sigkill_and_restart_on_the_same_data_directory(
    brokers: Brokers, dead_url: str
) -> None:
    a = await brokers.start("a")
    url = f"failover:({a.url},{dead_url})?randomize=false&maxReconnectDelay=100"
    producer = await connect(url)
    consumer = await connect(url)
    watchers = {"producer": Watcher(producer), "consumer": Watcher(consumer)}
    tally = Tally(
        await consumer.subscribe("/queue/flow", ack="client-individual", prefetch=PREFETCH)
    )
    loop = asyncio.get_running_loop()
    async with asyncio.TaskGroup() as tasks:
        consuming = tasks.create_task(tally.run())
        bodies = [f"m{n}" for n in range(COUNT)]
        producing = tasks.create_task(produce(producer, bodies))
        await tally.distinct(COUNT // 3)
        killed_at = loop.time()
        a.kill()
        await brokers.restart(a)
        await producing
        await producer.send("/queue/flow", "end", persistent=True)
        await tally.body("end")  # the queue is FIFO: everything before it was delivered
        consuming.cancel()
    assert tally.counts.pop("end") == 1
    assert set(tally.counts) == set(bodies)
    assert [body for body, n in tally.counts.items() if n != 1] == []
    for watcher in watchers.values():
        assert watcher.interrupted_at
        assert watcher.resumed_urls[-1] == a.url
    stats = consumer.statistics()
    assert stats.transport.failovers >= 1
    assert stats.interruptions >= 1
    report("A killed and restarted", tally, killed_at, watchers)
    await producer.disconnect()
    await consumer.disconnect()


async def test_1_clients_move_to_b_and_what_stayed_on_a_is_drained_later(
    brokers: Brokers,
) -> None:
    a = await brokers.start("a")
    b = await brokers.start("b")
    url = f"failover:({a.url},{b.url})?randomize=false&maxReconnectDelay=100"
    producer = await connect(url)
    consumer = await connect(url)
    watchers = {"producer": Watcher(producer), "consumer": Watcher(consumer)}
    tally = Tally(
        await consumer.subscribe("/queue/flow", ack="client-individual", prefetch=PREFETCH)
    )
    loop = asyncio.get_running_loop()
    bodies = [f"m{n}" for n in range(COUNT)]
    async with asyncio.TaskGroup() as tasks:
        consuming = tasks.create_task(tally.run())
        producing = tasks.create_task(produce(producer, bodies))
        # Late enough that what was stranded on A is still within the consumer's audit
        # (the last 2048 acknowledged messages) when A comes back.
        await tally.distinct(COUNT * 85 // 100)
        killed_at = loop.time()
        a.kill()
        await producing
        assert producer.remote_url == b.url
        await producer.send("/queue/flow", "end-b", persistent=True)
        await tally.body("end-b")  # B is drained
        await producer.disconnect()
        # A comes back with what it stored but never delivered; B goes: the consumer moves.
        await brokers.restart(a)
        b.kill()
        await watchers["consumer"].resumptions(2)
        assert consumer.remote_url == a.url
        async with connect(a.url) as direct:
            await direct.send("/queue/flow", "end-a", persistent=True)
        await tally.body("end-a")  # A is drained
        consuming.cancel()
    assert tally.counts.pop("end-a") == tally.counts.pop("end-b") == 1
    assert set(tally.counts) == set(bodies)
    assert [body for body, n in tally.counts.items() if n != 1] == []
    report("clients moved from A to B", tally, killed_at, watchers)
    await consumer.disconnect()
