"""A shared-database (PostgreSQL) master/slave group of real broker processes (issue 4)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ferrymq.testing import BrokerProcess, broker_group, listening, start_group, wait_for_master
from tests.ha.conftest import stomp_client
from tests.postgres import PostgresDatabase

LEASE_MS = 1000
KEEP_ALIVE_MS = 300


def group_config(database: PostgresDatabase) -> str:
    # seed 000 Example 3.3 with a PostgreSQL data source in place of Oracle's, and a lease locker.
    return f"""
<beans xmlns="http://www.springframework.org/schema/beans">
  <broker xmlns="http://activemq.apache.org/schema/core" schedulerSupport="true">
    <persistenceAdapter>
      <jdbcPersistenceAdapter dataSource="#pg-ds" lockKeepAlivePeriod="{KEEP_ALIVE_MS}">
        <locker>
          <lease-database-locker lockAcquireSleepInterval="{LEASE_MS}"/>
        </locker>
      </jdbcPersistenceAdapter>
    </persistenceAdapter>
  </broker>
  <bean id="pg-ds" class="org.apache.commons.dbcp.BasicDataSource" destroy-method="close">
    <property name="driverClassName" value="org.postgresql.Driver"/>
    <property name="url" value="{database.jdbc_url}"/>
    <property name="username" value="{database.server.username}"/>
    <property name="password" value="{database.server.password}"/>
  </bean>
</beans>
"""


@pytest.fixture
def group(tmp_path: Path, postgres_database: PostgresDatabase) -> Iterator[list[BrokerProcess]]:
    config = group_config(postgres_database)
    with broker_group(tmp_path, config, ("pg1", "pg2", "pg3")) as brokers:
        start_group(brokers)
        yield brokers


def test_exactly_one_master_and_only_it_listens(group: list[BrokerProcess]) -> None:
    assert [b.state for b in group] == ["master", "slave", "slave"]
    assert [listening(b.port) for b in group] == [True, False, False]


def test_a_slave_takes_over_with_every_message(group: list[BrokerProcess]) -> None:
    master = group[0]
    producer, produced = stomp_client(master.port)
    for i in range(50):
        producer.send("/queue/pg", str(i), headers={"persistent": "true", "receipt": f"r{i}"})
    produced.wait_receipt("r49")
    killed_at = time.monotonic()
    master.kill()
    successor = wait_for_master(group[1:])
    print(
        f"database takeover (lease {LEASE_MS} ms): {(time.monotonic() - killed_at) * 1000:.0f} ms"
    )
    consumer, consumed = stomp_client(successor.port)
    consumer.subscribe("/queue/pg", id="s", ack="auto")
    messages = consumed.wait_messages(50, timeout=20)
    assert sorted(int(m.body) for m in messages) == list(range(50))
    assert consumed.quiet_for(0.3) == []


def test_a_paused_master_is_fenced_out_when_it_resumes(group: list[BrokerProcess]) -> None:
    """Split brain: SIGSTOP the master past its lease; a slave takes over; SIGCONT the old one:
    it must stop serving and must not write."""
    master = group[0]
    producer, produced = stomp_client(master.port)
    producer.send("/queue/fence", "before", headers={"persistent": "true", "receipt": "r0"})
    produced.wait_receipt("r0")
    master.pause()
    try:
        successor = wait_for_master(group[1:], timeout_s=20)
    finally:
        master.resume()
    # The old master's connection is still open: what it is sent now must not be stored.
    producer.send(
        "/queue/fence", "to the deposed master", headers={"persistent": "true", "receipt": "r1"}
    )
    assert master.wait_for_state("slave", timeout_s=20), "".join(master.output[-20:])
    assert "r1" not in produced.receipts
    consumer, consumed = stomp_client(successor.port)
    consumer.subscribe("/queue/fence", id="s", ack="auto")
    (message,) = consumed.wait_messages(1, timeout=10)
    assert message.body == "before"
    assert consumed.quiet_for(0.5) == []
