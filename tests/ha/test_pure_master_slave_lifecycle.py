"""Pure master/slave from the operator's side (issue 15, defect 2): a master waiting for its
slave stops cleanly on SIGTERM and says that it waits; shutdownOnSlaveFailure ends the master's
process even when the slave is lost before it was in sync; ``ferrymq stat`` tells each role as
it is.  Separate broker processes, as in production."""

from __future__ import annotations

import signal
import socket
from pathlib import Path

import pytest

from ferrymq.cli.main import main
from ferrymq.testing import BrokerProcess, free_port, listening, wait_until_blocking
from tests.ha.test_pure_master_slave import slave_config

WAITING_LINE = "broker master is waiting for its slave"


def _master_config(*, shutdown_on_slave_failure: bool = False) -> str:
    flag = str(shutdown_on_slave_failure).lower()
    return f"""<broker xmlns="http://activemq.apache.org/schema/core" brokerName="master"
  waitForSlave="true" shutdownOnSlaveFailure="{flag}"/>"""


def _wait_for_line(broker: BrokerProcess, text: str, timeout_s: float = 20) -> None:
    wait_until_blocking(
        lambda: any(text in line for line in broker.output),
        timeout_s,
        f"{broker.name} to print {text!r}",
        detail=lambda: "".join(broker.output[-20:]),
    )


def _stat(capsys: pytest.CaptureFixture[str], admin_port: int) -> str:
    assert main(["stat", "--admin", f"http://127.0.0.1:{admin_port}"]) == 0
    return capsys.readouterr().out.splitlines()[0]


def test_sigterm_stops_a_master_waiting_for_its_slave_cleanly(tmp_path: Path) -> None:
    master = BrokerProcess(tmp_path / "m", name="master", config_xml=_master_config())
    master.start(wait=False)
    try:
        _wait_for_line(master, WAITING_LINE)
        assert any("waitForSlave" in line and "INFO" in line for line in master.output)
        assert master.process is not None
        master.process.send_signal(signal.SIGTERM)
        assert master.process.wait(timeout=15) == 0, "".join(master.output[-20:])
        assert master.wait_for_state("stopped", "exited", timeout_s=5)
        assert any(line.startswith("broker master stopped") for line in master.output)
        # Its store was closed and its lock released: a new broker opens both at once.
        with BrokerProcess(tmp_path / "m", name="master") as again:
            assert again.state == "master"
    finally:
        master.kill()


def _attach_and_drop_a_slave(port: int) -> None:
    """A slave that connects, gets the start of its snapshot and dies before acknowledging it
    (as one SIGKILLed mid-sync does): a replication CONNECT over a real socket, then a close."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(
            b"CONNECT\naccept-version:1.2\nhost:127.0.0.1\n"
            b"ferrymq.replication:true\nferrymq.replica:doomed\n\n\x00"
        )
        received = b""
        while b"MESSAGE" not in received:
            chunk = sock.recv(65536)
            assert chunk, f"the master closed the link: {received!r}"
            received += chunk


def test_shutdown_on_slave_failure_ends_a_master_whose_slave_dies_before_it_is_in_sync(
    tmp_path: Path,
) -> None:
    """It used to wait for ever for its next slave, its process holding its lock."""
    config = _master_config(shutdown_on_slave_failure=True)
    master = BrokerProcess(tmp_path / "m", name="master", config_xml=config).start(wait=False)
    try:
        _wait_for_line(master, WAITING_LINE)
        _attach_and_drop_a_slave(master.port)
        assert master.process is not None
        assert master.process.wait(timeout=20) == 1, "".join(master.output[-20:])
        assert any("shutdownOnSlaveFailure" in line for line in master.output)
        assert not listening(master.port)
    finally:
        master.kill()


def test_stat_tells_each_role_truly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A master waiting for its slave says so (it said "waiting for lock ... (held)"), and a
    slave that took over is a master (it said "master; replicating from ...")."""
    master_admin, slave_admin = free_port(), free_port()
    master = BrokerProcess(
        tmp_path / "m",
        name="master",
        config_xml=_master_config(),
        extra_args=["--admin", f"127.0.0.1:{master_admin}"],
    ).start(wait=False)
    slave = BrokerProcess(
        tmp_path / "s",
        name="slave",
        config_xml=slave_config(master.port),
        extra_args=["--admin", f"127.0.0.1:{slave_admin}"],
    )
    try:
        _wait_for_line(master, WAITING_LINE)
        waiting = _stat(capsys, master_admin)
        assert waiting.startswith("broker master: waiting for slave; shared-file-locker ")
        assert waiting.endswith("(held by this broker)")
        slave.start(as_slave=True)
        assert master.wait_for_state("master"), "".join(master.output[-20:])
        assert _stat(capsys, master_admin).startswith("broker master: master; ")
        replicating = _stat(capsys, slave_admin)
        assert replicating.startswith(f"broker slave: replicating; replicating from {master.url}")
        master.kill()
        assert slave.wait_for_state("master", timeout_s=20), "".join(slave.output[-20:])
        assert _stat(capsys, slave_admin) == "broker slave: master"
    finally:
        master.kill()
        slave.kill()
