"""A shared-file master/slave group of real broker processes (issue 4, items 1, 3 and 4)."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import stomp
from ferrymq.testing import BrokerProcess
from tests.interop.conftest import Collector

INTERVAL_MS = 200


def group_config(shared: Path) -> str:
    # seed 000 Example 3.1, with intervals short enough for a test.
    return f"""
<broker xmlns="http://activemq.apache.org/schema/core">
  <persistenceAdapter>
    <kahaDB directory="{shared}" lockKeepAlivePeriod="{INTERVAL_MS}">
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
    brokers = [
        BrokerProcess(tmp_path / name, name=name, config_xml=config) for name in ("b1", "b2", "b3")
    ]
    try:
        brokers[0].start()
        for broker in brokers[1:]:
            broker.start(as_slave=True)
        yield brokers
    finally:
        for broker in brokers:
            broker.kill()


def _listening(broker: BrokerProcess) -> bool:
    try:
        socket.create_connection(("127.0.0.1", broker.port), timeout=1).close()
    except OSError:
        return False
    return True


def _masters(brokers: list[BrokerProcess]) -> list[BrokerProcess]:
    return [b for b in brokers if b.state == "master"]


def _wait_for_new_master(brokers: list[BrokerProcess], timeout_s: float = 15) -> BrokerProcess:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        masters = _masters(brokers)
        if masters:
            return masters[0]
        for broker in brokers:
            broker.wait_for_state("master", timeout_s=0.1)
    raise AssertionError("no broker became master: " + "".join(brokers[0].output[-10:]))


def test_exactly_one_master_and_only_it_listens(group: list[BrokerProcess]) -> None:
    assert [b.state for b in group] == ["master", "slave", "slave"]
    assert [_listening(b) for b in group] == [True, False, False]


def test_a_slave_takes_over_when_the_master_is_killed(group: list[BrokerProcess]) -> None:
    master = group[0]
    producer = stomp.Connection12([("127.0.0.1", master.port)])
    sent = Collector()
    producer.set_listener("c", sent)
    producer.connect(wait=True)
    producer.send("/queue/kept", "before the crash", headers={"persistent": "true", "receipt": "r"})
    sent.wait_receipt("r")
    killed_at = time.monotonic()
    master.kill()
    successor = _wait_for_new_master(group[1:])
    takeover_s = time.monotonic() - killed_at
    print(f"shared-file takeover: {takeover_s * 1000:.0f} ms")
    assert _listening(successor)
    consumer = stomp.Connection12([("127.0.0.1", successor.port)])
    received = Collector()
    consumer.set_listener("c", received)
    consumer.connect(wait=True)
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
    assert not _listening(master)
    successor = _wait_for_new_master(group)
    assert successor is not master or _listening(successor)


def test_a_paused_master_keeps_its_lock_and_serves_on(group: list[BrokerProcess]) -> None:
    """On a local file system a SIGSTOPped master keeps its kernel lock: no second master."""
    master = group[0]
    master.pause()
    try:
        for slave in group[1:]:
            assert not slave.wait_for_state("master", timeout_s=1.0)
    finally:
        master.resume()
    producer = stomp.Connection12([("127.0.0.1", master.port)])
    listener = Collector()
    producer.set_listener("c", listener)
    producer.connect(wait=True)
    producer.send("/queue/after", "still master", headers={"receipt": "r"})
    listener.wait_receipt("r")
    producer.disconnect()
    assert _masters(group) == [master]
