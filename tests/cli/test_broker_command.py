"""``ferrymq broker`` and ``ferrymq stat`` as a user runs them: separate processes."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from ferrymq.cli.main import main
from ferrymq.testing import BrokerProcess, free_port


def _ferrymq(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ferrymq.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_a_wrong_value_names_file_line_and_attribute(tmp_path: Path) -> None:
    config = tmp_path / "activemq.xml"
    config.write_text(
        '<broker xmlns="http://activemq.apache.org/schema/core" brokerName="b">\n'
        "  <transportConnectors>\n"
        '    <transportConnector name="stomp" uri="stomp://127.0.0.1:61613"\n'
        '                        maximumConnections="lots"/>\n'
        "  </transportConnectors>\n"
        "</broker>\n"
    )
    result = _ferrymq("broker", "--config", str(config), "--data", str(tmp_path / "d"))
    assert result.returncode == 2
    assert f"{config}:3" in result.stderr
    assert "maximumConnections" in result.stderr


def test_an_unknown_element_is_reported_with_its_line(tmp_path: Path) -> None:
    config = tmp_path / "activemq.xml"
    config.write_text(
        '<broker xmlns="http://activemq.apache.org/schema/core">\n  <noSuchThing/>\n</broker>\n'
    )
    result = _ferrymq("broker", "--config", str(config), "--data", str(tmp_path / "d"))
    assert result.returncode == 2
    assert f"{config}:2" in result.stderr
    assert "noSuchThing" in result.stderr


def test_a_second_broker_on_the_same_store_waits_as_slave(tmp_path: Path) -> None:
    """seed 000 §3.1: the broker that cannot lock the data directory is a slave: it opens no
    listener and says what it waits for."""
    with BrokerProcess(tmp_path / "data", name="group"):
        # Same name and data directory: the same store, <data>/group/.
        slave = BrokerProcess(tmp_path / "data", name="group").start(as_slave=True)
        try:
            assert slave.state == "slave"
            assert any("waiting for the lock" in line and "lock" in line for line in slave.output)
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection(("127.0.0.1", slave.port), timeout=1).close()
        finally:
            slave.stop()


def test_a_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path / "one") as first:
        result = _ferrymq(
            "broker",
            "--data",
            str(tmp_path / "two"),
            "--listen",
            f"stomp://127.0.0.1:{first.port}",
            "--admin",
            "off",
        )
    assert result.returncode == 1
    assert f"127.0.0.1:{first.port}" in result.stderr


def test_a_slave_that_fails_to_take_over_exits_non_zero(tmp_path: Path) -> None:
    """issue 13 item 3: a broker that ends because of a failure exits 1 (it used to exit 0,
    which keeps systemd's ``Restart=on-failure`` from restarting it).  Here the slave takes
    over from a killed master and cannot open its listener: its port is taken meanwhile."""
    shared = tmp_path / "shared"
    config = f"""<broker xmlns="http://activemq.apache.org/schema/core">
  <persistenceAdapter>
    <kahaDB directory="{shared}" lockKeepAlivePeriod="200">
      <locker><shared-file-locker lockAcquireSleepInterval="200"/></locker>
    </kahaDB>
  </persistenceAdapter>
</broker>"""
    master = BrokerProcess(tmp_path / "m", name="m", config_xml=config).start()
    slave = BrokerProcess(tmp_path / "s", name="s", config_xml=config)
    try:
        slave.start(as_slave=True)
        assert slave.state == "slave"
        with socket.socket() as squatter:  # a slave listens on nothing: its port is free
            squatter.bind(("127.0.0.1", slave.port))
            squatter.listen()
            master.kill()
            assert slave.process is not None
            slave.process.wait(timeout=30)
        assert slave.process.returncode == 1, "".join(slave.output[-20:])
        assert any("stopped after a failure" in line for line in slave.output)
    finally:
        master.kill()
        slave.kill()


def test_broker_prints_where_it_listens_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    admin_port, amqp_port = free_port(), free_port()
    listen = ["--listen", f"amqp://127.0.0.1:{amqp_port}"]
    process = BrokerProcess(
        tmp_path / "data", extra_args=[*listen, "--admin", f"127.0.0.1:{admin_port}"]
    )
    # extra_args come last, so this --admin wins over the fixture's "off".
    with process:
        assert any(
            line.startswith(f"listening stomp://127.0.0.1:{process.port}")
            for line in process.output
        )
        assert f"listening amqp://127.0.0.1:{amqp_port}\n" in process.output
        assert any(
            line.startswith(f"admin http://127.0.0.1:{admin_port}") for line in process.output
        )
        code = main(["stat", "--admin", f"http://127.0.0.1:{admin_port}", "--format", "json"])
        assert code == 0
    assert process.process is not None
    assert process.process.returncode == 0
    assert any("stopped" in line for line in process.output)


def test_stat_reports_an_unreachable_admin_api(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["stat", "--admin", f"http://127.0.0.1:{free_port()}"])
    assert code == 1
    assert "cannot reach the admin API" in capsys.readouterr().err


def test_stat_lists_destinations(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import stomp

    admin_port = free_port()
    with BrokerProcess(
        tmp_path / "data", extra_args=["--admin", f"127.0.0.1:{admin_port}"]
    ) as process:
        conn = stomp.Connection12([("127.0.0.1", process.port)])
        conn.connect(wait=True)
        for _ in range(3):
            conn.send("/queue/stat.me", "x", headers={"persistent": "true"})
        conn.disconnect(receipt="bye")
        assert main(["stat", "--admin", f"http://127.0.0.1:{admin_port}", "--format", "json"]) == 0
        rows = json.loads(capsys.readouterr().out)
    row = next(r for r in rows if r["name"] == "stat.me")
    assert (row["type"], row["depth"], row["enqueued"]) == ("queue", 3, 3)


def test_stat_shows_the_role_of_master_and_slave(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """issue 4 "Roles are visible": master and slave of a shared-file group."""
    ports = [free_port(), free_port()]
    with BrokerProcess(
        tmp_path / "data", name="group", extra_args=["--admin", f"127.0.0.1:{ports[0]}"]
    ):
        slave = BrokerProcess(
            tmp_path / "data", name="group", extra_args=["--admin", f"127.0.0.1:{ports[1]}"]
        ).start(as_slave=True)
        try:
            assert main(["stat", "--admin", f"http://127.0.0.1:{ports[0]}"]) == 0
            master_line = capsys.readouterr().out.splitlines()[0]
            assert main(["stat", "--admin", f"http://127.0.0.1:{ports[1]}"]) == 0
            slave_line = capsys.readouterr().out.splitlines()[0]
        finally:
            slave.stop()
    assert master_line.startswith("broker group: master; shared-file-locker")
    assert "(held by this broker)" in master_line
    assert slave_line.startswith("broker group: waiting for lock; shared-file-locker")
