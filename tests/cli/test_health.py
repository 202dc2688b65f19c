"""``ferrymq health`` (issue 15, item 11): exit 0 only when the broker serves clients, one line
that says its state, and one clear line when the admin API cannot be reached.

In-process brokers serve on the test's loop while ``main`` runs its blocking HTTP in a worker
thread; the master/slave pair is two ``ferrymq broker`` processes, asked by ``ferrymq health``
processes, so the exit codes are the ones a container or systemd probe sees.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ferrymq.admin import AdminServer
from ferrymq.admin.api import ROUTES
from ferrymq.cli.main import main
from ferrymq.config.cli import config_from_flags
from ferrymq.testing import broker_group, free_port, running_broker, start_group
from tests.admin.fake_broker import FakeBroker
from tests.ha.test_shared_file_group import group_config


async def health(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = await asyncio.to_thread(main, ["health", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


async def test_a_serving_broker_exits_0_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = config_from_flags("solo", tmp_path / "data", ["stomp://127.0.0.1:0"], "127.0.0.1:0")
    async with running_broker(config) as broker:
        assert broker.admin is not None
        # Both spellings of the address: the URL ``stat`` takes, and ``broker --admin``'s form.
        for address in (broker.admin.url, f"127.0.0.1:{broker.admin.port}"):
            code, out, err = await health(capsys, "--admin", address)
            assert code == 0, err
            assert out.startswith("broker solo: serving")
            assert out.count("\n") == 1
            assert err == ""


async def test_an_unreachable_admin_api_exits_1_with_one_clear_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    port = free_port()  # nothing listens there
    code, out, err = await health(capsys, "--admin", f"127.0.0.1:{port}")
    assert code == 1
    assert out == ""
    assert err.startswith(f"ferrymq health: cannot reach the admin API at http://127.0.0.1:{port}")
    assert "--admin" in err
    assert err.count("\n") == 1
    assert "Traceback" not in err


async def test_an_http_server_without_health_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    async with AdminServer(FakeBroker(), "127.0.0.1", 0, routes=ROUTES) as server:
        code, _out, err = await health(capsys, "--admin", server.url)
    assert code == 1
    assert "answered 404" in err
    assert err.count("\n") == 1


async def test_a_bad_address_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = await health(capsys, "--admin", "ftp://127.0.0.1:8161")
    assert code == 2
    assert err.startswith("ferrymq health: --admin: ")
    assert err.count("\n") == 1


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[list[str]]:
    """A shared-file master/slave pair of broker processes; their admin addresses."""
    with broker_group(tmp_path, group_config(tmp_path / "shared"), ("b1", "b2")) as brokers:
        addresses = []
        for broker in brokers:
            addresses.append(f"127.0.0.1:{free_port()}")
            broker.extra_args = ["--admin", addresses[-1]]
        start_group(brokers)
        assert [b.state for b in brokers] == ["master", "slave"]
        yield addresses


def _ferrymq_health(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "ferrymq.cli.main", "health", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def test_a_slave_exits_1_unless_slave_ok(pair: list[str]) -> None:
    master, slave = pair
    served = _ferrymq_health("--admin", master)
    assert (served.returncode, served.stderr) == (0, "")
    assert served.stdout.startswith("broker b1: serving (master)")

    standing_by = _ferrymq_health("--admin", f"http://{slave}")
    assert standing_by.returncode == 1
    assert standing_by.stdout.startswith("broker b2: slave (waiting for lock): ")
    assert standing_by.stdout.count("\n") == 1
    assert standing_by.stderr == ""

    accepted = _ferrymq_health("--admin", slave, "--slave-ok")
    assert accepted.returncode == 0
    assert accepted.stdout.startswith("broker b2: slave")
