"""``ferrymq purge|delete|move|retry|connections`` (issue 15, item 10) against a real broker's
admin API.  The broker serves on the test's loop; ``main`` does blocking I/O, so it runs in a
worker thread.  A slave's refusal is checked with separate processes, as a user meets it."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ferrymq.broker import Broker
from ferrymq.cli.main import main
from ferrymq.client import Connection, connect
from ferrymq.config.cli import config_from_flags
from ferrymq.testing import BrokerProcess, free_port, running_broker
from tests.ha.test_shared_file_group import group_config

Capture = pytest.CaptureFixture[str]


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Broker]:
    config = config_from_flags(
        "cli-ops", tmp_path / "data", ["stomp://127.0.0.1:0"], "127.0.0.1:0", True
    )
    async with running_broker(config) as running:
        yield running


def admin(broker: Broker) -> str:
    assert broker.admin is not None
    return f"127.0.0.1:{broker.admin.port}"  # the host:port spelling; stat's http:// works too


async def ferrymq(capsys: Capture, *argv: str) -> tuple[int, str, str]:
    try:
        code = await asyncio.to_thread(main, list(argv))
    except SystemExit as exc:  # argparse's usage errors
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


async def client(broker: Broker, client_id: str | None = None) -> Connection:
    return await connect(f"tcp://127.0.0.1:{broker.service.ports[0]}", client_id=client_id)


def depth(broker: Broker, queue: str) -> int:
    return next(
        s.depth
        for s in broker.service.region.destination_statistics()
        if s.destination.name == queue
    )


async def test_purge(broker: Broker, capsys: Capture) -> None:
    connection = await client(broker)
    for n in range(3):
        await connection.send("/queue/work", str(n), persistent=True)
    result = await ferrymq(capsys, "purge", "work", "--admin", admin(broker))
    assert result == (0, "purged 3 messages from queue work\n", "")
    assert depth(broker, "work") == 0
    code, out, err = await ferrymq(capsys, "purge", "nothing", "--admin", "http://" + admin(broker))
    assert (code, out) == (1, "")
    assert err == "ferrymq purge: no queue named 'nothing' (HTTP 404)\n"
    await connection.disconnect()


async def test_delete_queue_topic_and_durable(broker: Broker, capsys: Capture) -> None:
    connection = await client(broker, client_id="app")
    await connection.send("/queue/old", "x", persistent=True)
    durable = await connection.subscribe("/topic/feed", durable_name="sub")
    address = admin(broker)
    result = await ferrymq(capsys, "delete", "queue", "old", "--admin", address)
    assert result == (0, "deleted queue old (1 messages)\n", "")
    result = await ferrymq(
        capsys, "delete", "durable", "sub", "--client-id", "app", "--admin", address
    )
    assert result[0] == 1
    assert "is active; close its consumer first (HTTP 409)" in result[2]
    await durable.unsubscribe()
    result = await ferrymq(
        capsys, "delete", "durable", "sub", "--client-id", "app", "--admin", address
    )
    assert result == (0, "deleted durable subscription sub of client app (0 messages)\n", "")
    result = await ferrymq(capsys, "delete", "topic", "feed", "--admin", address)
    assert result == (0, "deleted topic feed (0 messages)\n", "")
    code, _, err = await ferrymq(capsys, "delete", "durable", "sub", "--admin", address)
    assert (code, err) == (
        2,
        "ferrymq delete: delete durable needs --client-id (the subscription's client id)\n",
    )
    await connection.disconnect()


async def test_move_copy_and_retry(broker: Broker, capsys: Capture) -> None:
    connection = await client(broker)
    for n in range(4):
        headers = {"kind": "big" if n % 2 else "small"}
        await connection.send("/queue/in", str(n), headers=headers, persistent=True)
    address = admin(broker)
    result = await ferrymq(
        capsys, "move", "in", "big", "--selector", "kind = 'big'", "--max", "1", "--admin", address
    )
    assert result == (0, "moved 1 messages from queue in to queue big\n", "")
    result = await ferrymq(capsys, "move", "in", "all", "--copy", "--admin", address)
    assert result == (0, "copied 3 messages from queue in to queue all\n", "")
    assert (depth(broker, "in"), depth(broker, "big"), depth(broker, "all")) == (3, 1, 3)

    subscription = await connection.subscribe("/queue/big", ack="client-individual")
    message = await subscription.get(5)
    await message.nack(receipt=True)  # to ActiveMQ.DLQ, which remembers /queue/big
    await subscription.unsubscribe()
    result = await ferrymq(capsys, "retry", "ActiveMQ.DLQ", "--admin", address)
    assert result == (0, "retried 1 messages from queue ActiveMQ.DLQ\n", "")
    assert (depth(broker, "big"), depth(broker, "ActiveMQ.DLQ")) == (1, 0)
    code, _, err = await ferrymq(capsys, "move", "in", "x", "--max", "0", "--admin", address)
    assert code == 2
    assert "expected a whole number of at least 1, got '0'" in err
    await connection.disconnect()


async def test_connections_lists_and_closes(broker: Broker, capsys: Capture) -> None:
    connection = await client(broker)
    address = admin(broker)
    code, out, _ = await ferrymq(capsys, "connections", "--admin", address)
    header, row = out.splitlines()
    assert header.split() == ["ID", "REMOTE", "ADDRESS", "USER", "GROUPS", "PROTOCOL", "SINCE"]
    connection_id = row.split()[0]
    assert "127.0.0.1:" in row
    assert "STOMP 1.2" in row
    result = await ferrymq(capsys, "connections", "--close", connection_id, "--admin", address)
    assert result == (0, f"closed connection {connection_id}\n", "")
    await asyncio.wait_for(connection.wait_closed(), 5)
    code, out, _ = await ferrymq(capsys, "connections", "--admin", address)
    assert (code, out.splitlines()[1:]) == (0, [])


async def test_bad_and_unreachable_admin_addresses(capsys: Capture) -> None:
    code, _, err = await ferrymq(capsys, "purge", "q", "--admin", "ftp://127.0.0.1:1")
    assert code == 2
    assert err.count("\n") == 1
    port = free_port()
    code, _, err = await ferrymq(capsys, "purge", "q", "--admin", f"127.0.0.1:{port}")
    assert code == 1
    assert err.startswith(f"ferrymq purge: cannot reach the admin API at http://127.0.0.1:{port}:")
    assert err.count("\n") == 1


def test_a_slave_refuses_a_write_in_one_line(tmp_path: Path) -> None:
    config = group_config(tmp_path / "shared")
    slave_admin = free_port()
    master = BrokerProcess(tmp_path / "b1", name="b1", config_xml=config)
    slave = BrokerProcess(
        tmp_path / "b2",
        name="b2",
        config_xml=config,
        extra_args=["--admin", f"127.0.0.1:{slave_admin}"],
    )
    try:
        master.start()
        slave.start(as_slave=True)
        result = subprocess.run(
            [sys.executable, "-m", "ferrymq.cli.main", "purge", "q", "--admin", f":{slave_admin}"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        slave.kill()
        master.kill()
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        "ferrymq purge: broker b2 is not serving (waiting for lock): send write operations to "
        "its master (HTTP 503)\n"
    )
