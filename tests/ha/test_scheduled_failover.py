"""Issue 4 item 5: scheduled messages survive the failover and are delivered once, at their time.

A failover client sends a delayed message and a repeating one to the master of a group; the
master is SIGKILLed well before either is due, so the jobs exist only in the shared store.  The
slave that takes over must reload them and deliver each when due: the delayed one once, the
repeating one 1 + ``AMQ_SCHEDULED_REPEAT`` times, nothing more.  The consumer subscribes before
the kill, so its failover client carries the subscription over to the new master.  One test per
kind of shared store: file (kahaDB) and database (PostgreSQL), with the lock intervals of their
group tests (200 ms; a 1 s lease renewed every 300 ms).

Run with ``-s`` to see the takeover time and when each delivery arrived.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path

from ferrymq.client import Connection, Subscription, connect
from ferrymq.core.scheduler import DELAY, JOB_ID, PERIOD, REPEAT
from ferrymq.testing import BrokerProcess, broker_group, start_group, wait_for_master
from tests.ha.test_jdbc_group import group_config as database_group
from tests.ha.test_shared_file_group import group_config as shared_file_group
from tests.postgres import PostgresDatabase

QUEUE = "/queue/scheduled"
DELAYED = "delayed once"
REPEATING = "repeated"
DELAY_MS = 4000
REPEAT_DELAY_MS = 3000
PERIOD_MS = 1000
REPEATS = 2
EXPECTED = {DELAYED: 1, REPEATING: 1 + REPEATS}
EARLY_TOLERANCE_S = 0.1
"""The broker starts the delay when the SEND arrives, after the test read its clock; this
only absorbs the two clocks' rounding (the broker schedules in wall-clock ms)."""
DEADLINE_S = 15.0
QUIET_S = 1.5
URL_OPTIONS = "randomize=false&initialReconnectDelay=50&maxReconnectDelay=500"
SCHEDULER_SUPPORT = 'schedulerSupport="true"'


def _with_scheduler(config: str) -> str:
    """The shared-file group's configuration, with scheduler support switched on."""
    if SCHEDULER_SUPPORT in config:
        return config
    element = '<broker xmlns="http://activemq.apache.org/schema/core"'
    assert element in config
    return config.replace(element, f"{element} {SCHEDULER_SUPPORT}", 1)


async def _send(producer: Connection, body: str, schedule: dict[str, int]) -> float:
    """Send with a receipt; returns when it was sent (monotonic), before the broker had it."""
    sent_at = time.monotonic()
    await producer.send(
        QUEUE,
        body,
        headers={name: str(value) for name, value in schedule.items()},
        persistent=True,
        receipt=True,
    )
    return sent_at


async def _take(subscription: Subscription, until: float) -> tuple[str, float] | None:
    """The next message's body and arrival time, or None if none came by ``until``."""
    try:
        message = await subscription.get(timeout=max(0.0, until - time.monotonic()))
    except TimeoutError:
        return None
    arrived_at = time.monotonic()
    assert JOB_ID in message.headers, message.headers
    assert DELAY not in message.headers, message.headers
    await message.ack()
    return message.text, arrived_at


async def scheduled_across_failover(brokers: list[BrokerProcess]) -> None:
    await asyncio.to_thread(start_group, brokers)
    master = brokers[0]
    url = f"failover:({','.join(b.url for b in brokers)})?{URL_OPTIONS}"
    async with await connect(url) as producer, await connect(url) as consumer:
        subscription = await consumer.subscribe(QUEUE, ack="client-individual")
        sent_at = {
            DELAYED: await _send(producer, DELAYED, {DELAY: DELAY_MS}),
            REPEATING: await _send(
                producer, REPEATING, {DELAY: REPEAT_DELAY_MS, PERIOD: PERIOD_MS, REPEAT: REPEATS}
            ),
        }
        due = {
            DELAYED: [sent_at[DELAYED] + DELAY_MS / 1000],
            REPEATING: [
                sent_at[REPEATING] + (REPEAT_DELAY_MS + n * PERIOD_MS) / 1000
                for n in range(1 + REPEATS)
            ],
        }
        killed_at = time.monotonic()
        await asyncio.to_thread(master.kill)
        # What this test is about: the jobs are only in the store when the master dies.
        assert time.monotonic() < due[REPEATING][0], "the master died after the first was due"
        successor = await asyncio.to_thread(wait_for_master, brokers[1:])
        takeover_s = time.monotonic() - killed_at

        arrivals: list[tuple[str, float]] = []
        deadline = killed_at + DEADLINE_S
        while len(arrivals) < sum(EXPECTED.values()):
            arrival = await _take(subscription, deadline)
            assert arrival is not None, f"by the deadline only {arrivals}"
            arrivals.append(arrival)
        quiet_until = time.monotonic() + QUIET_S
        while (extra := await _take(subscription, quiet_until)) is not None:
            arrivals.append(extra)

        assert Counter(body for body, _ in arrivals) == EXPECTED, [
            f"{body} at +{at - killed_at:.3f} s" for body, at in arrivals
        ]
        early = [
            f"{body} #{n}: {due_at - at:.3f} s early"
            for body, times in due.items()
            for n, (at, due_at) in enumerate(
                zip([at for got, at in arrivals if got == body], times, strict=True)
            )
            if at < due_at - EARLY_TOLERANCE_S
        ]
        assert early == []
        # Not hidden by the client's failover audit either: the broker sent no duplicate.
        assert subscription.duplicates_dropped == 0
        assert consumer.remote_url == successor.url
    print(
        f"\n[scheduled failover] takeover {takeover_s * 1000:.0f} ms; arrivals after their send: "
        + ", ".join(f"{body} {at - sent_at[body]:.3f} s" for body, at in arrivals)
    )


async def test_shared_file_group_delivers_scheduled_messages_once(tmp_path: Path) -> None:
    config = _with_scheduler(shared_file_group(tmp_path / "shared"))
    with broker_group(tmp_path, config, ("f1", "f2", "f3")) as brokers:
        await scheduled_across_failover(brokers)


async def test_database_group_delivers_scheduled_messages_once(
    tmp_path: Path, postgres_database: PostgresDatabase
) -> None:
    config = database_group(postgres_database)
    assert SCHEDULER_SUPPORT in config
    with broker_group(tmp_path, config, ("d1", "d2", "d3")) as brokers:
        await scheduled_across_failover(brokers)
