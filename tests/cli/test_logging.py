"""The ``ferrymq`` command's logging options (issue 15, defects 7 and 13): ``--log-level`` before
or after the sub-command and only with a real level, ``--log-format json``, ``--log-config``,
and a DEBUG level that says what the broker does."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from ferrymq.cli.main import main
from ferrymq.testing import BrokerProcess, wait_until_blocking


def _ferrymq(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ferrymq.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def _failing_broker(tmp_path: Path) -> list[str]:
    """Arguments of a broker that cannot start (its data directory is a file)."""
    data = tmp_path / "data-file"
    data.write_text("")
    return ["--data", str(data), "--admin", "off", "--listen", "stomp://127.0.0.1:0"]


@pytest.mark.parametrize("before", [True, False], ids=["before", "after"])
def test_an_unknown_level_is_a_usage_error(
    before: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--log-level", "verbose"]
    with pytest.raises(SystemExit) as exited:
        main([*args, "stat"] if before else ["stat", *args])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "unknown log level 'verbose'" in err
    assert "DEBUG, INFO, WARNING, ERROR, CRITICAL" in err


@pytest.mark.parametrize("before", [True, False], ids=["before", "after"])
def test_the_level_works_before_and_after_the_sub_command(before: bool, tmp_path: Path) -> None:
    broker = _failing_broker(tmp_path)
    level = ["--log-level", "debug"]  # any case
    result = _ferrymq(*level, "broker", *broker) if before else _ferrymq("broker", *broker, *level)
    assert result.returncode == 1
    assert " DEBUG " in result.stderr
    assert "Traceback" in result.stderr  # DEBUG shows where a start failed
    quiet = _ferrymq("broker", *broker)
    assert " DEBUG " not in quiet.stderr
    assert "Traceback" not in quiet.stderr


def test_a_level_after_the_sub_command_wins(tmp_path: Path) -> None:
    result = _ferrymq(
        "--log-level", "DEBUG", "broker", *_failing_broker(tmp_path), "--log-level", "ERROR"
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_json_format_at_debug_says_what_the_broker_does(tmp_path: Path) -> None:
    """One JSON object per line; DEBUG tells the configuration, the store, the listener and
    each connection with its remote address."""
    broker = BrokerProcess(
        tmp_path / "data", extra_args=["--log-format", "json", "--log-level", "DEBUG"]
    )
    with broker:
        with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as client:
            client.sendall(b"CONNECT\naccept-version:1.2\nhost:127.0.0.1\n\n\x00")
            assert client.recv(4096).startswith(b"CONNECTED")
            host, port = client.getsockname()
            local = f"{host}:{port}"

        def records() -> list[dict[str, str]]:
            return [json.loads(line) for line in broker.output if line.startswith("{")]

        wait_until_blocking(
            lambda: any(f"from {local} closed" in r["message"] for r in records()),
            10,
            "the connection's close to be logged",
            detail=lambda: "".join(broker.output[-10:]),
        )
    found = records()
    assert all({"time", "level", "logger", "message"} <= set(r) for r in found)
    messages = [r["message"] for r in found]
    store = tmp_path / "data" / "localhost"
    assert any("configuration" in m and str(store) in m for m in messages)
    assert any("store database" in m and "opened" in m for m in messages)
    assert any(f"listening for STOMP on 127.0.0.1:{broker.port}" in m for m in messages)
    assert any("lock" in m and "acquired" in m for m in messages)
    assert any(f"accepted from {local}" in m for m in messages)
    assert not [line for line in broker.output if line.startswith(" ")]  # no text traceback


def test_json_format_carries_the_traceback(tmp_path: Path) -> None:
    result = _ferrymq(
        "--log-format", "json", "broker", *_failing_broker(tmp_path), "--log-level", "DEBUG"
    )
    assert result.returncode == 1
    *logged, last = result.stderr.splitlines()
    assert last.startswith("ferrymq broker: cannot start: ")
    records = [json.loads(line) for line in logged]
    assert any("Traceback" in r.get("exc_info", "") for r in records)


def test_log_config_json_is_a_dict_config(tmp_path: Path) -> None:
    log_file = tmp_path / "broker.log"
    config = tmp_path / "logging.json"
    config.write_text(
        json.dumps(
            {
                "version": 1,
                "formatters": {"plain": {"format": "%(levelname)s|%(name)s|%(message)s"}},
                "handlers": {
                    "file": {
                        "class": "logging.FileHandler",
                        "filename": str(log_file),
                        "formatter": "plain",
                    }
                },
                "root": {"level": "INFO", "handlers": ["file"]},
            }
        )
    )
    result = _ferrymq(
        "--log-config",
        str(config),
        "broker",
        "--data",
        str(tmp_path / "d"),
        "--admin",
        "off",
        "--listen",
        "stomp://127.0.0.1:0",
        "--trace",
        str(config / "x"),  # a trace directory under a file: the start fails
    )
    assert result.returncode == 1
    assert result.stderr.startswith("ferrymq broker: cannot start: ")  # not a log record
    assert "INFO|ferrymq.ha.shared_file|lock" in log_file.read_text()


def test_log_config_ini_is_a_file_config(tmp_path: Path) -> None:
    config = tmp_path / "logging.ini"
    config.write_text(
        "[loggers]\nkeys=root\n\n[handlers]\nkeys=err\n\n[formatters]\nkeys=plain\n\n"
        "[logger_root]\nlevel=INFO\nhandlers=err\n\n"
        "[handler_err]\nclass=StreamHandler\nformatter=plain\nargs=(sys.stderr,)\n\n"
        "[formatter_plain]\nformat=INI %(levelname)s %(message)s\n"
    )
    result = _ferrymq(
        "broker",
        "--data",
        str(tmp_path / "d"),
        "--admin",
        "off",
        "--listen",
        "stomp://127.0.0.1:0",
        "--trace",
        str(config / "x"),
        "--log-config",
        str(config),
    )
    assert result.returncode == 1
    assert "INI INFO lock" in result.stderr


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("bad.json", '{"version": 1,\n  "handlers": [}', "bad.json:2: not valid JSON"),
        (
            "wrong.json",
            '{"version": 1, "handlers": {"h": {"class": "no.such.Handler"}}}',
            "wrong.json: ",
        ),
        ("missing.ini", None, "missing.ini: no such file"),
    ],
)
def test_a_log_config_that_does_not_load_is_one_line(
    tmp_path: Path, name: str, text: str | None, expected: str
) -> None:
    config = tmp_path / name
    if text is not None:
        config.write_text(text)
    result = _ferrymq("--log-config", str(config), "stat")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("ferrymq: --log-config ")
    assert expected in result.stderr


def test_json_format_with_a_log_config_is_refused_not_ignored(tmp_path: Path) -> None:
    config = tmp_path / "logging.json"
    config.write_text('{"version": 1}')
    result = _ferrymq("--log-config", str(config), "--log-format", "json", "stat")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert "--log-format json would do nothing" in result.stderr
    assert "ferrymq.cli.logging_setup.JsonFormatter" in result.stderr
