"""Credentials for the admin API from the shell (issue 16, item 5): ``--admin-user`` with the
password from ``FERRYMQ_ADMIN_PASSWORD``, against a real broker whose activemq.xml configures
``<simpleAuthenticationPlugin>``.  ``main`` does blocking I/O, so it runs in a worker thread."""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ferrymq.broker import Broker
from ferrymq.cli.main import main
from ferrymq.client import BrokerErrorFrame, connect
from ferrymq.config.cli import config_from_flags

Capture = pytest.CaptureFixture[str]

SECURED = """\
<beans xmlns="http://www.springframework.org/schema/beans">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="secured">
    <plugins>
      <simpleAuthenticationPlugin>
        <users>
          <authenticationUser username="admin" password="s3cret-admin" groups="admins,users"/>
          <authenticationUser username="reader" password="s3cret-reader" groups="users"/>
          <authenticationUser username="ops" password="s3cret-ops" groups="operators"/>
        </users>
      </simpleAuthenticationPlugin>
    </plugins>
  </broker>
</beans>
"""


async def start(tmp_path: Path, **flags: object) -> Broker:
    path = tmp_path / "activemq.xml"
    path.write_text(SECURED)
    config = config_from_flags(
        None,
        tmp_path / "data",
        ["stomp://127.0.0.1:0"],
        "127.0.0.1:0",
        False,
        config_path=path,
        **flags,  # type: ignore[arg-type]
    )
    broker = Broker(config)
    await broker.start()
    return broker


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Broker]:
    running = await start(tmp_path)
    try:
        yield running
    finally:
        await running.stop()


def admin(broker: Broker) -> str:
    assert broker.admin is not None
    return f"127.0.0.1:{broker.admin.port}"


async def ferrymq(capsys: Capture, *argv: str) -> tuple[int, str, str]:
    try:
        code = await asyncio.to_thread(main, list(argv))
    except SystemExit as exc:  # argparse's usage errors
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


async def send_one(broker: Broker, queue: str) -> None:
    port = broker.service.ports[0]
    producer = await connect(f"tcp://127.0.0.1:{port}", login="admin", passcode="s3cret-admin")
    await producer.send(f"/queue/{queue}", "m", persistent=True)
    await producer.close()


@pytest.fixture
def password(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv("FERRYMQ_ADMIN_USER", raising=False)
    monkeypatch.delenv("FERRYMQ_ADMIN_PASSWORD", raising=False)
    return monkeypatch


async def test_stat_without_a_login_says_what_to_give(
    broker: Broker, capsys: Capture, password: pytest.MonkeyPatch
) -> None:
    code, out, err = await ferrymq(capsys, "stat", "--admin", admin(broker))
    assert code == 1
    assert out == ""
    assert err.count("\n") == 1
    assert "needs a login: give --admin-user NAME" in err
    assert "FERRYMQ_ADMIN_PASSWORD" in err


async def test_stat_with_the_password_from_the_environment(
    broker: Broker, capsys: Capture, password: pytest.MonkeyPatch
) -> None:
    password.setenv("FERRYMQ_ADMIN_PASSWORD", "s3cret-reader")
    code, out, err = await ferrymq(
        capsys, "stat", "--admin", admin(broker), "--admin-user", "reader"
    )
    assert (code, err) == (0, "")
    assert out.startswith("broker secured: standalone")


async def test_the_user_may_come_from_the_environment_too(
    broker: Broker, capsys: Capture, password: pytest.MonkeyPatch
) -> None:
    password.setenv("FERRYMQ_ADMIN_USER", "reader")
    password.setenv("FERRYMQ_ADMIN_PASSWORD", "s3cret-reader")
    code, out, _ = await ferrymq(capsys, "connections", "--admin", admin(broker))
    assert code == 0
    assert out.startswith("ID")


async def test_a_wrong_password_is_one_line_that_does_not_echo_it(
    broker: Broker, capsys: Capture, password: pytest.MonkeyPatch
) -> None:
    password.setenv("FERRYMQ_ADMIN_PASSWORD", "not-it-4711")
    code, out, err = await ferrymq(
        capsys, "stat", "--admin", admin(broker), "--admin-user", "admin"
    )
    assert code == 1
    assert err == (
        f"ferrymq stat: the admin API at http://{admin(broker)} refused user admin: "
        "wrong user name or password\n"
    )
    assert "not-it-4711" not in out + err


async def test_no_password_and_no_terminal_is_a_usage_error(
    broker: Broker, capsys: Capture, password: pytest.MonkeyPatch
) -> None:
    code, _, err = await ferrymq(
        capsys, "purge", "q", "--admin", admin(broker), "--admin-user", "x"
    )
    assert code == 2
    assert "set the password in $FERRYMQ_ADMIN_PASSWORD" in err


async def test_a_reader_may_not_purge_and_an_admin_may(
    broker: Broker, capsys: Capture, password: pytest.MonkeyPatch
) -> None:
    await send_one(broker, "work")
    password.setenv("FERRYMQ_ADMIN_PASSWORD", "s3cret-reader")
    code, _, err = await ferrymq(
        capsys, "purge", "work", "--admin", admin(broker), "--admin-user", "reader"
    )
    assert code == 1
    assert "user reader may read the admin API but not change the broker" in err
    assert "(HTTP 403)" in err
    password.setenv("FERRYMQ_ADMIN_PASSWORD", "s3cret-admin")
    code, out, err = await ferrymq(
        capsys, "purge", "work", "--admin", admin(broker), "--admin-user", "admin"
    )
    assert (code, err) == (0, "")
    assert out == "purged 1 messages from queue work\n"


async def test_admin_group_chooses_who_may_write(
    tmp_path: Path, capsys: Capture, password: pytest.MonkeyPatch
) -> None:
    broker = await start(tmp_path, admin_group="operators")
    try:
        await send_one(broker, "work")
        password.setenv("FERRYMQ_ADMIN_PASSWORD", "s3cret-ops")
        argv = ("purge", "work", "--admin", admin(broker), "--admin-user", "ops")
        code, out, err = await ferrymq(capsys, *argv)
        assert (code, out, err) == (0, "purged 1 messages from queue work\n", "")
        password.setenv("FERRYMQ_ADMIN_PASSWORD", "s3cret-admin")
        argv = ("purge", "work", "--admin", admin(broker), "--admin-user", "admin")
        code, _, err = await ferrymq(capsys, *argv)
        assert code == 1
        assert "needs membership of group operators" in err
    finally:
        await broker.stop()


async def test_health_stays_open_for_probes(
    broker: Broker, capsys: Capture, password: pytest.MonkeyPatch
) -> None:
    code, out, _ = await ferrymq(capsys, "health", "--admin", admin(broker))
    assert code == 0
    assert out == "the broker: serving\n"  # a stranger learns the state only (issue 16)
    password.setenv("FERRYMQ_ADMIN_PASSWORD", "s3cret-reader")
    argv = ("health", "--admin", admin(broker), "--admin-user", "reader")
    code, out, _ = await ferrymq(capsys, *argv)
    assert code == 0
    assert out.startswith("broker secured: serving (standalone)")


def test_the_password_prompt_does_not_echo(tmp_path: Path) -> None:
    """On a terminal the password is asked for with getpass (here: a pseudo-terminal)."""
    pty = pytest.importorskip("pty")
    script = (
        "import sys, argparse\n"
        "from ferrymq.cli.admin_client import credentials_from\n"
        "c = credentials_from(argparse.Namespace(admin_user='reader'))\n"
        "print('GOT', c.user, len(c.password))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "FERRYMQ_ADMIN_PASSWORD"}
    pid, fd = pty.fork()
    if pid == 0:  # the child: a CLI on a terminal; it never returns into pytest
        try:
            os.execve(sys.executable, [sys.executable, "-c", script], env)
        finally:
            os._exit(127)
    output = b""
    try:
        output = _read_until(fd, b"password for reader: ")
        os.write(fd, b"typed-secret\n")
        output += _read_until(fd, b"GOT reader 12")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)  # done by now, unless a wait above failed
        os.waitpid(pid, 0)
        os.close(fd)
    assert b"typed-secret" not in output


def _read_until(fd: int, marker: bytes) -> bytes:
    seen = b""
    for _ in range(200):
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                seen += os.read(fd, 1024)
            except OSError:
                break
        if marker in seen:
            return seen
    raise AssertionError(f"{marker!r} never came; got {seen!r}")


def test_an_empty_admin_group_is_refused(tmp_path: Path, capsys: Capture) -> None:
    code = main(["broker", "--admin-group", " ", "--data", str(tmp_path), "--admin", "off"])
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "--admin-group" in err
    assert "must not be empty" in err


async def test_failed_logins_count_across_stomp_and_the_admin_api(
    broker: Broker, capsys: Capture, password: pytest.MonkeyPatch
) -> None:
    """One guesser, two doors: the admin API's failures and STOMP's share one throttle."""
    password.setenv("FERRYMQ_ADMIN_PASSWORD", "guess")
    await ferrymq(capsys, "stat", "--admin", admin(broker), "--admin-user", "admin")
    with pytest.raises(BrokerErrorFrame, match="password is invalid"):
        await connect(f"tcp://127.0.0.1:{broker.service.ports[0]}", login="admin", passcode="guess")
    assert broker.service.security.throttle.failures("127.0.0.1") == 2
