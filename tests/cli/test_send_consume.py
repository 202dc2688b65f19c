"""``ferrymq send``, ``consume`` and ``browse`` against a real broker, run in-process.

``main`` runs its own event loop, so it runs in a worker thread while the broker serves on the
test's loop.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ferrymq.broker import Broker
from ferrymq.cli.main import main
from ferrymq.client import connect
from ferrymq.config.cli import config_from_flags


@pytest.fixture
async def url(tmp_path: Path) -> AsyncIterator[str]:
    config = config_from_flags(
        name="cli-test",
        data_dir=tmp_path,
        listen=["stomp://127.0.0.1:0"],
        admin="off",
        persistent=False,
    )
    broker = Broker(config)
    await broker.start()
    yield broker.stomp_urls[0]
    await broker.stop()


async def ferrymq(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run the command; returns (exit code, stdout, stderr)."""
    code = await asyncio.to_thread(main, list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def sequence_number(body: str) -> int:
    match = re.fullmatch(r"message (\d+)", body)
    assert match is not None, body
    return int(match[1])


def records(out: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.splitlines()]


async def test_count_messages_go_through_once_each(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = await ferrymq(capsys, "send", url, "/queue/cli", "--count", "100")
    assert code == 0
    assert "sent 100 messages" in err
    code, out, err = await ferrymq(
        capsys, "consume", url, "/queue/cli", "--count", "100", "--format", "jsonl"
    )
    assert code == 0
    assert "received 100 messages" in err
    received = records(out)
    numbers = sorted(sequence_number(str(r["body"])) for r in received)
    assert numbers == list(range(1, 101))
    first = received[0]
    assert first["destination"] == "/queue/cli"
    assert first["redelivered"] is False
    assert first["base64"] is False
    assert isinstance(first["id"], str)
    assert first["id"].startswith("ID:")
    code, out, _ = await ferrymq(capsys, "browse", url, "/queue/cli", "--format", "jsonl")
    assert (code, out) == (0, "")  # all acknowledged


async def test_stdin_lines_become_messages(
    url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    read_end, write_end = os.pipe()  # a real descriptor, as from a shell pipeline
    os.write(write_end, b"alpha\nbeta\r\n\ngamma")
    os.close(write_end)
    with os.fdopen(read_end) as stdin:
        monkeypatch.setattr("sys.stdin", stdin)
        code, _, err = await ferrymq(
            capsys, "send", url, "/queue/lines", "-H", "color:red", "--persistent", "--receipt"
        )
    assert code == 0, err
    code, out, _ = await ferrymq(
        capsys, "consume", url, "/queue/lines", "--idle-timeout", "0.3", "--format", "jsonl"
    )
    assert code == 0
    received = records(out)
    assert [r["body"] for r in received] == ["alpha", "beta", "", "gamma"]
    headers = received[0]["headers"]
    assert isinstance(headers, dict)
    assert headers["color"] == "red"
    assert headers["persistent"] == "true"


async def test_browse_lists_without_consuming(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = await ferrymq(capsys, "send", url, "/queue/shelf", "--count", "3", "--size", "16")
    assert code == 0
    for _ in range(2):
        code, out, err = await ferrymq(capsys, "browse", url, "/queue/shelf")
        assert code == 0
        assert out.splitlines() == ["message 1.......", "message 2.......", "message 3......."]
        assert "browsed 3 messages" in err
    code, out, _ = await ferrymq(capsys, "consume", url, "/queue/shelf", "--count", "3")
    assert code == 0
    assert len(out.splitlines()) == 3


async def test_transaction_batches_commit_everything(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = await ferrymq(
        capsys,
        "send",
        url,
        "/queue/batched",
        "--count",
        "25",
        "--transaction-batch",
        "10",
        "--persistent",
    )
    assert code == 0, err
    code, out, _ = await ferrymq(capsys, "browse", url, "/queue/batched")
    assert out.splitlines() == [f"message {n}" for n in range(1, 26)]


async def test_a_binary_body_is_base64_in_jsonl(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    body = b"\xff\xfe binary"
    async with connect(url) as conn:
        await conn.send("/queue/binary", body, receipt=True)
    code, out, _ = await ferrymq(
        capsys, "consume", url, "/queue/binary", "--count", "1", "--format", "jsonl"
    )
    assert code == 0
    (record,) = records(out)
    assert record["base64"] is True
    assert base64.b64decode(str(record["body"])) == body


async def test_idle_timeout_ends_an_empty_consume(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = await ferrymq(
        capsys, "consume", url, "/queue/empty", "--idle-timeout", "0.1", "--ack", "auto"
    )
    assert (code, out) == (0, "")
    assert "received 0 messages" in err


async def test_exit_codes_for_usage_and_connection_errors(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = await ferrymq(capsys, "send", "tcp://127.0.0.1:1?bogus=1", "/queue/x")
    assert code == 2
    assert "bogus" in err
    code, _, err = await ferrymq(capsys, "consume", url, "/topic/x", "--durable", "d")
    assert code == 2
    assert "--client-id" in err
    code, _, err = await ferrymq(capsys, "send", url, "/queue/x", "-H", "no-colon", "--count", "1")
    assert code == 2
    assert "NAME:VALUE" in err
    with pytest.raises(SystemExit) as exited:
        await ferrymq(capsys, "consume", url, "/queue/x", "--ack", "sometimes")
    assert exited.value.code == 2
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        code, _, err = await ferrymq(capsys, "browse", f"tcp://127.0.0.1:{port}", "/queue/x")
    assert code == 1
    assert "cannot connect" in err
    code, _, err = await ferrymq(capsys, "send", url, "/bogus/x", "--count", "1", "--receipt")
    assert code == 1
    assert "Illegal destination" in err


async def test_a_refused_send_without_receipt_fails_the_command(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The broker answers a refused SEND that asked for no receipt with an ERROR; the command
    learns of it from its closing DISCONNECT (whose receipt comes after) and fails."""
    code, _, err = await ferrymq(capsys, "send", url, "/bogus/x", "--count", "1")
    assert code == 1
    assert "Illegal destination" in err
    code, _, err = await ferrymq(capsys, "send", url, "/queue/fine", "--count", "3")
    assert (code, "sent 3 messages" in err) == (0, True)


async def test_browsing_a_topic_is_refused(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A topic keeps nothing to browse: an empty listing would pass for an empty queue."""
    code, out, err = await ferrymq(capsys, "browse", url, "/topic/prices")
    assert (code, out) == (2, "")
    assert "/topic/prices is a topic" in err
    assert "ferrymq consume" in err
