"""The CLI into a pipe whose reader leaves early (``ferrymq browse ... | head -1``), and the one
reading of ``--admin`` addresses shared by ``broker``, ``stat`` and ``bench``.

The commands run as a user runs them: separate processes in a real shell pipeline with the real
``head``, against a ``ferrymq broker`` child process.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ferrymq.cli.admin_client import AdminAddressError, admin_base_url, parse_admin_address
from ferrymq.cli.main import main
from ferrymq.testing import BrokerProcess, free_port

PIPELINE_TIMEOUT_S = 60


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    process = BrokerProcess(tmp_path / "data").start()
    try:
        yield process
    finally:
        process.stop()


def ferrymq_into_head(tmp_path: Path, *argv: str, late: bool = False) -> tuple[int, str, str]:
    """``ferrymq ARGV | head -1`` in bash; (ferrymq's exit status, head's output, ferrymq's
    stderr). ``late``: head starts half a second later, when everything ferrymq could write
    ahead is in the pipe already."""
    command = shlex.join([sys.executable, "-m", "ferrymq.cli.main", *argv])
    err, status = tmp_path / "err", tmp_path / "status"
    reader = "{ sleep 0.5; head -1; }" if late else "head -1"
    script = f'{command} 2>"$ERR" | {reader}; echo "${{PIPESTATUS[0]}}" >"$STATUS"'
    done = subprocess.run(
        ["bash", "-c", script],
        capture_output=True,
        text=True,
        timeout=PIPELINE_TIMEOUT_S,
        env={"PATH": "/usr/bin:/bin", "ERR": str(err), "STATUS": str(status)},
        check=True,
    )
    return int(status.read_text()), done.stdout, err.read_text()


def send(url: str, destination: str, count: int, size: int = 16) -> None:
    argv = ["send", url, destination, "--count", str(count), "--size", str(size), "--receipt"]
    assert main(argv) == 0


def browse_count(url: str, destination: str, capsys: pytest.CaptureFixture[str]) -> int:
    capsys.readouterr()
    assert main(["browse", url, destination, "--format", "jsonl"]) == 0
    return len(capsys.readouterr().out.splitlines())


def test_browse_into_head_ends_quietly(broker: BrokerProcess, tmp_path: Path) -> None:
    # More than a pipe holds (64 KiB), so that browse is still writing when head leaves.
    send(broker.url, "/queue/pipe.browse", 1500, size=200)
    status, out, err = ferrymq_into_head(tmp_path, "browse", broker.url, "/queue/pipe.browse")
    assert out.rstrip("\n") == "message 1".ljust(200, ".")
    assert "Broken pipe" not in err
    assert "Traceback" not in err
    assert "Exception ignored" not in err
    assert status == 141  # as SIGPIPE ends a command: 128 + 13


def test_consume_into_head_leaves_every_unread_message_on_the_queue(
    broker: BrokerProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    send(broker.url, "/queue/pipe.consume", 20)
    status, out, err = ferrymq_into_head(
        tmp_path,
        "consume",
        broker.url,
        "/queue/pipe.consume",
        "--count",
        "20",
        "--ack",
        "client",
        late=True,
    )
    assert out == "message 1".ljust(16, ".") + "\n"
    assert "Traceback" not in err, err
    assert "Broken pipe" not in err, err
    assert status == 141
    # Only the line head read was acknowledged: the 19 it never read are still there.
    assert browse_count(broker.url, "/queue/pipe.consume", capsys) == 19


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("http://127.0.0.1:8161", ("127.0.0.1", 8161)),
        ("http://example.org:80/", ("example.org", 80)),
        ("127.0.0.1:8200", ("127.0.0.1", 8200)),
        ("localhost:9", ("localhost", 9)),
        (":8300", ("127.0.0.1", 8300)),
        ("8400", ("127.0.0.1", 8400)),
        ("[::1]:8500", ("::1", 8500)),
        ("http://[::1]:8600", ("::1", 8600)),
    ],
)
def test_admin_addresses_in_every_spelling(text: str, expected: tuple[str, int]) -> None:
    assert parse_admin_address(text) == expected


@pytest.mark.parametrize(
    "text", ["", "localhost", "ftp://127.0.0.1:8161", "http://h:1/api", "h:port", "h:70000"]
)
def test_a_bad_admin_address_names_the_forms(text: str) -> None:
    forms = r"--admin: .*http://HOST:PORT, https://HOST:PORT, HOST:PORT"
    with pytest.raises(AdminAddressError, match=forms):
        parse_admin_address(text)


def test_base_url_brackets_ipv6() -> None:
    assert admin_base_url("[::1]:8161") == "http://[::1]:8161"


def test_broker_and_stat_take_the_same_admin_spellings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    admin_port = free_port()
    # broker takes the URL form (before: only host:port) ...
    process = BrokerProcess(
        tmp_path / "data", extra_args=["--admin", f"http://127.0.0.1:{admin_port}"]
    )
    with process:
        # ... and stat the host:port form (before: only a URL).
        for spelling in (
            f"127.0.0.1:{admin_port}",
            f":{admin_port}",
            f"http://127.0.0.1:{admin_port}",
        ):
            assert main(["stat", "--admin", spelling]) == 0, capsys.readouterr().err
            assert capsys.readouterr().out.startswith("broker localhost: ")


def test_a_bad_admin_address_is_one_usage_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stat", "--admin", "ftp://127.0.0.1:8161"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("ferrymq stat: --admin: the admin API speaks HTTP or HTTPS")
    assert main(["broker", "--admin", "nowhere", "--non-persistent"]) == 2
    assert capsys.readouterr().err == (
        "ferrymq broker: --admin: expected http://HOST:PORT, https://HOST:PORT, HOST:PORT or "
        ":PORT, got 'nowhere'\n"
    )
