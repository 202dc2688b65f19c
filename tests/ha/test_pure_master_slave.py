"""Pure master/slave replication between two broker processes (seed 002, issue 4)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from ferrymq.testing import BrokerProcess, listening
from tests.ha.conftest import stomp_client

MASTER = """<broker xmlns="http://activemq.apache.org/schema/core" brokerName="master"
  waitForSlave="true" shutdownOnSlaveFailure="false"/>"""


def slave_config(master_port: int, *, shutdown_on_master_failure: bool = False) -> str:
    # seed 002 Example 4.3 (with the credentials of that example).
    flag = str(shutdown_on_master_failure).lower()
    return f"""<broker xmlns="http://activemq.apache.org/schema/core" brokerName="slave"
  shutdownOnMasterFailure="{flag}">
  <services>
    <masterConnector remoteURI="tcp://127.0.0.1:{master_port}" userName="James" password="Cheese"/>
  </services>
</broker>"""


def _pair(tmp_path: Path, **slave_options: bool) -> tuple[BrokerProcess, BrokerProcess]:
    master = BrokerProcess(tmp_path / "m", name="master", config_xml=MASTER).start(wait=False)
    slave = BrokerProcess(
        tmp_path / "s", name="slave", config_xml=slave_config(master.port, **slave_options)
    ).start(as_slave=True)
    assert master.wait_for_state("master"), "".join(master.output[-20:])
    return master, slave


def test_the_slave_copies_everything_and_takes_over(tmp_path: Path) -> None:
    master, slave = _pair(tmp_path)
    try:
        assert slave.state == "slave"
        assert not listening(slave.port)
        producer, produced = stomp_client(master.port)
        for i in range(200):
            producer.send(
                "/queue/orders", str(i), headers={"persistent": "true", "receipt": f"r{i}"}
            )
        produced.wait_receipt("r199", timeout=20)
        consumer, consumed = stomp_client(master.port)
        consumer.subscribe(
            "/queue/orders",
            id="s",
            ack="client-individual",
            headers={"activemq.prefetchSize": "50"},
        )
        first = consumed.wait_messages(50)
        for message in first:
            consumer.ack(message.headers["ack"], receipt=f"a{message.body}")
        consumed.wait_receipt(f"a{first[-1].body}")
        killed_at = time.monotonic()
        master.kill()
        assert slave.wait_for_state("master", timeout_s=20), "".join(slave.output[-20:])
        print(f"pure master/slave takeover: {(time.monotonic() - killed_at) * 1000:.0f} ms")
        after, received = stomp_client(slave.port)
        after.subscribe("/queue/orders", id="s", ack="client-individual")
        rest = received.wait_messages(150, timeout=20)
        assert sorted(int(m.body) for m in rest) == list(range(50, 200))
        assert received.quiet_for(0.3) == []
        after.disconnect()
    finally:
        master.kill()
        slave.kill()


def test_shutdown_on_master_failure_stops_the_slave(tmp_path: Path) -> None:
    master, slave = _pair(tmp_path, shutdown_on_master_failure=True)
    try:
        master.kill()
        assert slave.process is not None
        slave.process.wait(timeout=20)
        assert slave.process.returncode == 1  # a failure: a supervisor restarts it
        assert not listening(slave.port)
        assert any("shutdownOnMasterFailure" in line for line in slave.output)
    finally:
        master.kill()
        slave.kill()


def test_shutdown_on_slave_failure_stops_the_master(tmp_path: Path) -> None:
    """The master's process ends, with status 1, once its slave is lost (it used to close its
    listeners and linger, its process never ending, when its store has the default lock)."""
    config = MASTER.replace('shutdownOnSlaveFailure="false"', 'shutdownOnSlaveFailure="true"')
    master = BrokerProcess(tmp_path / "m", name="master", config_xml=config).start(wait=False)
    slave = BrokerProcess(tmp_path / "s", name="slave", config_xml=slave_config(master.port))
    try:
        slave.start(as_slave=True)
        assert master.wait_for_state("master"), "".join(master.output[-20:])
        slave.kill()
        assert master.process is not None
        master.process.wait(timeout=20)
        assert master.process.returncode == 1
        assert any("shutdownOnSlaveFailure" in line for line in master.output)
    finally:
        master.kill()
        slave.kill()


def test_a_silent_master_is_noticed_by_heart_beats(tmp_path: Path) -> None:
    """A master that stops answering without closing its connection (SIGSTOP stands in for a
    vanished host) is taken over once the replication link's heart-beats are missed."""
    master, slave = _pair(tmp_path)
    try:
        paused_at = time.monotonic()
        master.pause()
        assert slave.wait_for_state("master", timeout_s=20), "".join(slave.output[-20:])
        assert time.monotonic() - paused_at >= 5.0  # not before the grace period
        assert any("went silent" in line for line in slave.output)
        assert listening(slave.port)
    finally:
        master.kill()
        slave.kill()


def test_manual_recovery_by_copying_the_slave_data_back(tmp_path: Path) -> None:
    """seed 002: shut the slave down, copy its data directory over the master's, restart both."""
    master, slave = _pair(tmp_path)
    try:
        master.kill()
        assert slave.wait_for_state("master", timeout_s=20)
        producer, produced = stomp_client(slave.port)
        producer.send(
            "/queue/late", "sent to the slave", headers={"persistent": "true", "receipt": "r"}
        )
        produced.wait_receipt("r")
        producer.disconnect()
        slave.stop()
        shutil.rmtree(tmp_path / "m" / "master")
        shutil.copytree(tmp_path / "s" / "slave", tmp_path / "m" / "master")
        (tmp_path / "m" / "master" / "lock").unlink(missing_ok=True)
        master.start(wait=False)
        slave.start(as_slave=True)
        assert master.wait_for_state("master")
        consumer, consumed = stomp_client(master.port)
        consumer.subscribe("/queue/late", id="s", ack="auto")
        (message,) = consumed.wait_messages(1)
        assert message.body == "sent to the slave"
        consumer.disconnect()
    finally:
        master.kill()
        slave.kill()
