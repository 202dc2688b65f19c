"""``ferrymq broker`` start-up failures as a user meets them (issue 15, defect 1): each is one
line on standard error, ``ferrymq broker: cannot start: WHAT (HOW TO FIX)``, exit status 1, and
a traceback only at ``--log-level DEBUG``.  Separate processes, as the user runs them."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ferrymq.service.errors import bind_error
from ferrymq.testing import BrokerProcess, wait_until_blocking

PREFIX = "ferrymq broker: cannot start: "


def _broker(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ferrymq.cli.main", "broker", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _cannot_start(*args: str) -> str:
    """Start a broker that must fail; the one line it printed (checked: exit 1, no traceback,
    and at WARNING nothing else on standard error)."""
    result = _broker(*args, "--log-level", "WARNING")
    assert result.returncode == 1, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(PREFIX), result.stderr
    assert "broker localhost stopped" not in result.stdout
    # The default level (INFO) tells what was done before, but neither a traceback nor the
    # failure twice.
    chatty = _broker(*args)
    assert chatty.returncode == 1
    assert "Traceback" not in chatty.stderr
    assert [line for line in chatty.stderr.splitlines() if "cannot" in line] == lines
    return lines[0].removeprefix(PREFIX)


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port on 127.0.0.1 that another process (this test) listens on."""
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        yield squatter.getsockname()[1]


def test_the_admin_port_in_use(tmp_path: Path, taken_port: int) -> None:
    line = _cannot_start(
        "--data", str(tmp_path), "--listen", "stomp://127.0.0.1:0", "--admin", f":{taken_port}"
    )
    assert line.startswith(f"the admin API cannot listen on 127.0.0.1:{taken_port}: ")
    assert "address already in use" in line
    assert "--admin HOST:PORT" in line
    assert "--admin off" in line


def test_the_stomp_port_in_use(tmp_path: Path, taken_port: int) -> None:
    line = _cannot_start(
        "--data", str(tmp_path), "--admin", "off", "--listen", f"stomp://127.0.0.1:{taken_port}"
    )
    assert f"cannot listen on 127.0.0.1:{taken_port}: address already in use" in line
    assert "--listen" in line


def test_the_stomp_port_of_a_config_file_in_use(tmp_path: Path, taken_port: int) -> None:
    config = tmp_path / "activemq.xml"
    config.write_text(
        '<broker xmlns="http://activemq.apache.org/schema/core" brokerName="b">\n'
        "  <transportConnectors>\n"
        f'    <transportConnector name="clients" uri="stomp://127.0.0.1:{taken_port}"/>\n'
        "  </transportConnectors>\n"
        "</broker>\n"
    )
    line = _cannot_start("--config", str(config), "--data", str(tmp_path / "d"), "--admin", "off")
    assert line.startswith(f"transport connector clients cannot listen on 127.0.0.1:{taken_port}")
    assert f"{config}:3" in line  # where to change it


def test_a_data_directory_that_is_a_file(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.write_text("not a directory")
    line = _cannot_start("--data", str(data), "--admin", "off", "--listen", "stomp://127.0.0.1:0")
    assert f"{data} is a file, not a directory" in line
    assert "--data DIR" in line


def test_a_kahadb_directory_under_a_file(tmp_path: Path) -> None:
    """Without a lock (useLock="false") the store itself finds the directory unusable."""
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    config = tmp_path / "activemq.xml"
    config.write_text(
        '<broker xmlns="http://activemq.apache.org/schema/core" brokerName="b">\n'
        "  <persistenceAdapter>\n"
        f'    <kahaDB directory="{blocker}/kahadb" useLock="false"/>\n'
        "  </persistenceAdapter>\n"
        "</broker>\n"
    )
    line = _cannot_start("--config", str(config), "--admin", "off")
    assert f"{blocker} is a file, not a directory" in line


def test_a_data_directory_that_is_not_writable(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        # Root writes through file modes; sysfs refuses a new directory even to root.
        data = Path("/sys") / f"ferrymq-test-{os.getpid()}"
    else:
        data = tmp_path / "data"
        data.mkdir(mode=0o555)
    line = _cannot_start("--data", str(data), "--admin", "off", "--listen", "stomp://127.0.0.1:0")
    assert "permission denied" in line
    assert "--data DIR" in line


def test_a_jdbc_url_that_is_not_postgresql(tmp_path: Path) -> None:
    """ActiveMQ's documented Oracle data source (seed 000 Example 3.3)."""
    config = tmp_path / "activemq.xml"
    config.write_text(
        '<beans xmlns="http://www.springframework.org/schema/beans">\n'
        '  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="b">\n'
        '    <persistenceAdapter><jdbcPersistenceAdapter dataSource="#oracle-ds"/>'
        "</persistenceAdapter>\n"
        "  </broker>\n"
        '  <bean id="oracle-ds" class="org.apache.commons.dbcp2.BasicDataSource">\n'
        '    <property name="driverClassName" value="oracle.jdbc.driver.OracleDriver"/>\n'
        '    <property name="url" value="jdbc:oracle:thin:@localhost:1521:AMQDB"/>\n'
        '    <property name="username" value="scott"/>\n'
        '    <property name="password" value="tiger"/>\n'
        "  </bean>\n"
        "</beans>\n"
    )
    line = _cannot_start("--config", str(config), "--admin", "off")
    assert "jdbc:oracle:thin:@localhost:1521:AMQDB is not a PostgreSQL url" in line
    assert "jdbc:postgresql://" in line  # which urls FerryMQ takes
    assert "tiger" not in line


def test_a_trace_directory_that_is_a_file(tmp_path: Path) -> None:
    blocker = tmp_path / "trace"
    blocker.write_text("")
    line = _cannot_start(
        "--data", str(tmp_path / "d"), "--admin", "off", "--trace", str(blocker / "sub")
    )
    assert line.startswith("cannot write the message trace")
    assert "--trace DIR" in line


def test_debug_shows_the_traceback(tmp_path: Path, taken_port: int) -> None:
    result = _broker("--data", str(tmp_path), "--admin", f":{taken_port}", "--log-level", "DEBUG")
    assert result.returncode == 1
    assert "Traceback" in result.stderr
    assert result.stderr.splitlines()[-1].startswith(PREFIX)


def test_a_second_broker_on_the_same_data_directory_says_so(tmp_path: Path) -> None:
    """It still waits as a shared-file slave (as ActiveMQ's does), but says once, plainly,
    that another broker holds the directory, which one, and how to choose another."""
    with BrokerProcess(tmp_path / "data", name="group") as first:
        second = BrokerProcess(tmp_path / "data", name="group").start(as_slave=True)
        try:
            assert second.state == "slave"
            assert first.process is not None

            def told() -> list[str]:
                return [line for line in second.output if "is in use by another broker" in line]

            wait_until_blocking(lambda: bool(told()), 10, "the slave to say why it waits")
            (line,) = told()
            assert str(tmp_path / "data" / "group") in line
            assert f"broker group, pid {first.process.pid} on host {socket.gethostname()}" in line
            assert "--data DIR" in line
        finally:
            second.stop()


@pytest.mark.parametrize(
    "error",
    [
        socket.gaierror(socket.EAI_NONAME, "Name or service not known"),
        OSError(socket.EAI_NONAME, "cannot listen on nohost:0: Name or service not known"),
    ],
)
def test_a_host_name_that_does_not_resolve(error: OSError) -> None:
    """Built from the resolver's error (a test may not look names up): its errno is a negative
    EAI_* code, which once read as "unknown error -2 (choose another port)"."""
    line = str(bind_error("the admin API", "nohost", 8161, error, "choose another port with X"))
    assert line == (
        "the admin API cannot listen on nohost:8161: the host name does not resolve "
        "(use an address or a host name of this machine: choose another address with X)"
    )
