"""``ferrymq stat`` and ``ferrymq connections`` show AMQP connections, with their links,
beside STOMP ones (issue 17, item 7); a real broker with both kinds of client connected."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ferrymq.cli.main import main
from tests.admin.mixed_clients import CONTAINER, CREDIT, SENT, mixed_clients


def run(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    code = main(list(args))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out.splitlines()


def test_stat_lists_connections_by_protocol_and_amqp_links(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with mixed_clients(tmp_path) as mixed:
        lines = run(capsys, "stat", "--admin", mixed.admin_url)
    assert "connections: 2 (AMQP 1, STOMP 1)" in lines
    (stomp,) = [line for line in lines if re.match(r"  ID:\S+ STOMP 1\.2 from ", line)]
    assert stomp.endswith(": 1 subscription(s), 0 link(s)"), stomp
    (amqp,) = [line for line in lines if re.match(r"  ID:\S+ AMQP 1\.0 from ", line)]
    assert f"client id {CONTAINER}" in amqp
    assert amqp.endswith("1 subscription(s), 2 link(s)"), amqp
    assert f"    sender orders-consumer queue://orders: credit {CREDIT - SENT}, " in "\n".join(
        lines
    )
    assert any(line.startswith("    receiver orders-producer queue://orders: ") for line in lines)


def test_connections_command_names_each_protocol(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with mixed_clients(tmp_path) as mixed:
        lines = run(capsys, "connections", "--admin", mixed.admin_url)
    found = [re.search(r"(STOMP|AMQP) \S+", line) for line in lines[1:]]
    assert sorted(match.group(0) for match in found if match) == ["AMQP 1.0", "STOMP 1.2"]
