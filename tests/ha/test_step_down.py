"""A busy master that loses its lock steps down without tearing down its failover clients
(issue 13, item 1).

Losing the lock is the documented way a master steps down ("it stops serving and waits as a
slave again"). Under load, with a failover producer and a failover consumer acknowledging each
message, the master's lock file is deleted (shared file) or its lease revoked
(shared database): its store refuses the writes in flight, it closes its connections as a broker
stopping its connectors does, and the clients fail over. The consumer must keep receiving every
message sent, exactly once (the broker flags what it delivers again ``redelivered``, and the
client drops a redelivery of what the application acknowledged), with no error of the
broker's reaching the application. Separate broker processes; counted by body.

Run with ``-s`` to see the step-down and takeover times.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from pathlib import Path

from ferrymq.client import connect
from ferrymq.testing import BrokerProcess, broker_group, start_group, wait_for_master
from tests.ha.test_group_soak import Tally, produce
from tests.ha.test_jdbc_group import group_config as database_group
from tests.ha.test_shared_file_group import group_config as shared_file_group
from tests.postgres import PostgresDatabase

COUNT = 3_000
PREFETCH = 100
URL_OPTIONS = "randomize=false&initialReconnectDelay=50&maxReconnectDelay=500"
WAIT_S = 60.0
QUEUE = "/queue/step-down"


def slave_lines(process: BrokerProcess) -> int:
    """How many times ``process`` said it waits as a slave (once more after a step-down)."""
    prefix = f"broker {process.name} is a slave"
    return sum(line.startswith(prefix) for line in list(process.output))


async def step_down_under_load(
    brokers: list[BrokerProcess], take_the_lock: Callable[[], None], kind: str
) -> None:
    url = f"failover:({','.join(b.url for b in brokers)})?{URL_OPTIONS}"
    master = brokers[0]
    producer = await connect(url)
    consumer_connection = await connect(url)
    consumer = Tally(
        await consumer_connection.subscribe(QUEUE, ack="client-individual", prefetch=PREFETCH)
    )
    bodies = [f"m{n}" for n in range(COUNT)]
    async with asyncio.TaskGroup() as tasks:
        consuming = tasks.create_task(consumer.run())
        producing = tasks.create_task(produce(producer, bodies, QUEUE))
        await consumer.until(lambda: len(consumer.counts) >= COUNT // 3, WAIT_S)
        before = slave_lines(master)
        taken_at = time.monotonic()
        take_the_lock()
        await asyncio.to_thread(
            lambda: master.wait_for_state("slave", timeout_s=WAIT_S) or slave_lines(master) > before
        )
        stepped_down_s = time.monotonic() - taken_at
        await asyncio.to_thread(wait_for_master, brokers, WAIT_S)
        serving_s = time.monotonic() - taken_at
        await producing
        await producer.send(QUEUE, "end", persistent=True)
        await consumer.until(lambda: consumer.counts["end"] > 0, WAIT_S)
        consuming.cancel()
    assert slave_lines(master) > before, "the master did not step down"
    assert not consumer_connection.closed, consumer_connection.close_reason
    assert consumer_connection.statistics().interruptions >= 1
    assert consumer.counts.pop("end") == 1
    assert set(consumer.counts) == set(bodies)
    # Exactly once to the application: the client drops a redelivery of what it acknowledged.
    assert [body for body, n in consumer.counts.items() if n != 1] == []
    print(
        f"\n[{kind}] stepped down after {stepped_down_s * 1000:.0f} ms, a master serves after "
        f"{serving_s * 1000:.0f} ms; {consumer.subscription.duplicates_dropped} redeliveries "
        "dropped by the client audit"
    )
    await producer.disconnect()
    await consumer_connection.disconnect()


async def test_a_master_whose_lock_file_is_deleted_under_load(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    with broker_group(tmp_path, shared_file_group(shared), ("f1", "f2")) as brokers:
        await asyncio.to_thread(start_group, brokers)
        await step_down_under_load(brokers, lambda: os.unlink(shared / "lock"), "lock file")


async def test_a_master_whose_lease_is_revoked_under_load(
    tmp_path: Path, postgres_database: PostgresDatabase
) -> None:
    def revoke() -> None:
        with postgres_database.connect() as db:
            db.execute("UPDATE ACTIVEMQ_LOCK SET TIME = 0 WHERE ID = 1")

    with broker_group(tmp_path, database_group(postgres_database), ("d1", "d2")) as brokers:
        await asyncio.to_thread(start_group, brokers)
        await step_down_under_load(brokers, revoke, "lease")
