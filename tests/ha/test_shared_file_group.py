"""A shared-file master/slave group of real broker processes (issue 4, items 1, 3 and 4)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ferrymq.testing import BrokerProcess, broker_group, listening, start_group, wait_for_master
from tests.ha.conftest import stomp_client

INTERVAL_MS = 200


def group_config(shared: Path, *, keep_alive_ms: int = INTERVAL_MS) -> str:
    # seed 000 Example 3.1, with intervals short enough for a test.
    return f"""
<broker xmlns="http://activemq.apache.org/schema/core">
  <persistenceAdapter>
    <kahaDB directory="{shared}" lockKeepAlivePeriod="{keep_alive_ms}">
      <locker>
        <shared-file-locker lockAcquireSleepInterval="{INTERVAL_MS}"/>
      </locker>
    </kahaDB>
  </persistenceAdapter>
</broker>
"""


@pytest.fixture
def group(tmp_path: Path) -> Iterator[list[BrokerProcess]]:
    config = group_config(tmp_path / "shared")
    with broker_group(tmp_path, config, ("b1", "b2", "b3")) as brokers:
        start_group(brokers)
        yield brokers


def _masters(brokers: list[BrokerProcess]) -> list[BrokerProcess]:
    return [b for b in brokers if b.state == "master"]


def test_exactly_one_master_and_only_it_listens(group: list[BrokerProcess]) -> None:
    assert [b.state for b in group] == ["master", "slave", "slave"]
    assert [listening(b.port) for b in group] == [True, False, False]


def test_a_slave_takes_over_when_the_master_is_killed(group: list[BrokerProcess]) -> None:
    master = group[0]
    producer, sent = stomp_client(master.port)
    producer.send("/queue/kept", "before the crash", headers={"persistent": "true", "receipt": "r"})
    sent.wait_receipt("r")
    killed_at = time.monotonic()
    master.kill()
    successor = wait_for_master(group[1:], timeout_s=15)
    takeover_s = time.monotonic() - killed_at
    print(f"shared-file takeover: {takeover_s * 1000:.0f} ms")
    assert listening(successor.port)
    consumer, received = stomp_client(successor.port)
    consumer.subscribe("/queue/kept", id="s", ack="auto")
    (message,) = received.wait_messages(1)
    assert message.body == "before the crash"
    consumer.disconnect()
    # The old master comes back as a slave (seed 000 Figure 3.3).
    master.start(as_slave=True)
    assert master.state == "slave"


def test_a_deleted_lock_file_makes_the_master_step_down(
    group: list[BrokerProcess], tmp_path: Path
) -> None:
    """seed 003: the master checks at lockKeepAlivePeriod that the lock file still exists."""
    master = group[0]
    os.unlink(tmp_path / "shared" / "lock")
    assert master.wait_for_state("slave", timeout_s=10), "".join(master.output[-10:])
    assert not listening(master.port)
    successor = wait_for_master(group, timeout_s=15)
    assert successor is not master or listening(successor.port)


def test_a_paused_master_keeps_its_lock_and_serves_on(group: list[BrokerProcess]) -> None:
    """On a local file system a SIGSTOPped master keeps its kernel lock: no second master."""
    master = group[0]
    master.pause()
    try:
        for slave in group[1:]:
            assert not slave.wait_for_state("master", timeout_s=1.0)
    finally:
        master.resume()
    producer, listener = stomp_client(master.port)
    producer.send("/queue/after", "still master", headers={"receipt": "r"})
    listener.wait_receipt("r")
    producer.disconnect()
    assert _masters(group) == [master]
