"""Takeover time of each kind of master/slave group: master SIGKILLed -> first message served by
the new master, as a failover client sees it.  Run from the repository root:

    .venv/bin/python -m benchmarks.takeover [--runs 3]

It starts real ``ferrymq broker`` processes (and, for the database group, a throwaway
PostgreSQL server), with FerryMQ's defaults and with tuned intervals, and prints a Markdown
table.  A probe producer sends a persistent message every 10 ms through the failover URL; the
number is the time from the kill to the first probe that a consumer on the failover URL
receives from the new master.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tests.postgres import PostgresDatabase, PostgresServer, start_postgres

from ferrymq.client import connect
from ferrymq.testing import BrokerProcess

PROBE_INTERVAL_S = 0.01


def shared_file(shared: Path, acquire_ms: int | None, keep_alive_ms: int | None) -> str:
    keep = f' lockKeepAlivePeriod="{keep_alive_ms}"' if keep_alive_ms is not None else ""
    acquire = (
        f'<locker><shared-file-locker lockAcquireSleepInterval="{acquire_ms}"/></locker>'
        if acquire_ms is not None
        else ""
    )
    return f"""<broker xmlns="http://activemq.apache.org/schema/core"><persistenceAdapter>
      <kahaDB directory="{shared}"{keep}>{acquire}</kahaDB></persistenceAdapter></broker>"""


def database(db: PostgresDatabase, lease_ms: int | None, keep_alive_ms: int | None) -> str:
    keep = f' lockKeepAlivePeriod="{keep_alive_ms}"' if keep_alive_ms is not None else ""
    lease = (
        f'<locker><lease-database-locker lockAcquireSleepInterval="{lease_ms}"/></locker>'
        if lease_ms is not None
        else "<locker><lease-database-locker/></locker>"
    )
    return f"""<beans xmlns="http://www.springframework.org/schema/beans">
  <broker xmlns="http://activemq.apache.org/schema/core"><persistenceAdapter>
    <jdbcPersistenceAdapter dataSource="#pg-ds"{keep}>{lease}</jdbcPersistenceAdapter>
  </persistenceAdapter></broker>
  <bean id="pg-ds" class="org.apache.commons.dbcp.BasicDataSource">
    <property name="url" value="{db.jdbc_url}"/>
    <property name="username" value="{db.server.username}"/>
    <property name="password" value="{db.server.password}"/>
  </bean></beans>"""


async def measure(brokers: list[BrokerProcess]) -> float:
    members = ",".join(b.url for b in brokers)
    url = f"failover:({members})?randomize=false&initialReconnectDelay=10"
    producer = await connect(url)
    consumer = await connect(url)
    subscription = await consumer.subscribe("/queue/probe", ack="auto")
    stop = asyncio.Event()

    async def probe() -> None:
        n = 0
        while not stop.is_set():
            await producer.send("/queue/probe", str(n), persistent=True)
            n += 1
            await asyncio.sleep(PROBE_INTERVAL_S)

    async with asyncio.TaskGroup() as tasks:
        tasks.create_task(probe())
        await subscription.get(timeout=30)
        master = next(b for b in brokers if b.state == "master")
        killed_at = time.monotonic()
        master.kill()
        while True:
            await subscription.get(timeout=120)
            if consumer.remote_url != master.url:
                break
        took = time.monotonic() - killed_at
        stop.set()
    await producer.close()
    await consumer.close()
    return took


async def run_group(make: Callable[[Path], list[BrokerProcess]], root: Path) -> float:
    brokers = make(root)
    try:
        await asyncio.to_thread(brokers[0].start)
        for broker in brokers[1:]:
            await asyncio.to_thread(broker.start, as_slave=True)
        if isinstance(brokers[1].config_xml, str) and "masterConnector" in brokers[1].config_xml:
            await asyncio.sleep(1)  # let the pure slave finish its snapshot
        return await measure(brokers)
    finally:
        for broker in brokers:
            broker.kill()


async def main(runs: int) -> None:
    server = start_postgres()
    server.create_database("takeover")
    rows: list[tuple[str, str, list[float]]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="ferrymq-takeover-") as tmp:
            root = Path(tmp)
            cases: list[tuple[str, str, Callable[[Path], list[BrokerProcess]]]] = [
                (
                    "shared file",
                    "defaults (10000 ms acquire, no keep-alive)",
                    lambda r: _shared_file_pair(r, None, None),
                ),
                (
                    "shared file",
                    "tuned (200 ms acquire, 200 ms keep-alive)",
                    lambda r: _shared_file_pair(r, 200, 200),
                ),
                (
                    "shared database",
                    "defaults (10000 ms lease, keep-alive 5000 ms)",
                    lambda r: _database_pair(r, server, None, None),
                ),
                (
                    "shared database",
                    "tuned (1000 ms lease, 300 ms keep-alive)",
                    lambda r: _database_pair(r, server, 1000, 300),
                ),
                ("pure master/slave", "no intervals", _pure_pair),
            ]
            for kind, label, make in cases:
                results = []
                for run in range(runs):
                    where = root / f"{len(rows)}-{run}"
                    results.append(await run_group(make, where))
                rows.append((kind, label, results))
                print(f"{kind}, {label}: " + ", ".join(f"{r:.2f} s" for r in results), flush=True)
    finally:
        server.stop()
    print("\n| group | intervals | takeover (median of runs) | runs |")
    print("| --- | --- | ---: | --- |")
    for kind, label, results in rows:
        runs_text = ", ".join(f"{r:.2f}" for r in results)
        print(f"| {kind} | {label} | {statistics.median(results):.2f} s | {runs_text} |")


def _shared_file_pair(root: Path, acquire: int | None, keep: int | None) -> list[BrokerProcess]:
    config = shared_file(root / "shared", acquire, keep)
    return [BrokerProcess(root / n, name=n, config_xml=config) for n in ("a", "b")]


def _database_pair(
    root: Path, server: PostgresServer, lease: int | None, keep: int | None
) -> list[BrokerProcess]:
    schema = server.create_schema("takeover", f"t{time.monotonic_ns()}")
    config = database(schema, lease, keep)
    return [BrokerProcess(root / n, name=n, config_xml=config) for n in ("a", "b")]


def _pure_pair(root: Path) -> list[BrokerProcess]:
    master = BrokerProcess(root / "m", name="m", config_xml=PURE_MASTER)
    slave = BrokerProcess(root / "s", name="s", config_xml=pure_slave(master.port))
    return [master, slave]


PURE_MASTER = '<broker xmlns="http://activemq.apache.org/schema/core"/>'


def pure_slave(master_port: int) -> str:
    return f"""<broker xmlns="http://activemq.apache.org/schema/core"><services>
      <masterConnector remoteURI="tcp://127.0.0.1:{master_port}"/></services></broker>"""


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    asyncio.run(main(parser.parse_args().runs))
