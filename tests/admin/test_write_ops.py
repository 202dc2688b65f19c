"""The admin API's write operations (issue 15, item 10) against real brokers over real HTTP:
purge, delete, move/copy by selector, retry from the DLQ, remove a durable subscription, close
a connection, send a test message; refused on a slave; durable across a SIGKILL."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from ferrymq.broker import Broker
from ferrymq.client import Connection, connect
from ferrymq.config.cli import config_from_flags
from ferrymq.testing import BrokerProcess, free_port, running_broker
from tests.ha.test_shared_file_group import group_config

JSON = "application/json"


def request(
    url: str, method: str = "GET", document: Any = None, content_type: str | None = JSON
) -> tuple[int, Any]:
    """One HTTP request; the status and the JSON answer, errors included."""
    data = json.dumps(document).encode() if document is not None else None
    headers = {"Content-Type": content_type} if content_type else {}
    call = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(call, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.loads(exc.read())


async def call(url: str, method: str = "GET", document: Any = None, **kw: Any) -> tuple[int, Any]:
    return await asyncio.to_thread(request, url, method, document, **kw)


async def depth(base: str, name: str, type_: str = "queue") -> int:
    status, document = await call(f"{base}/api/v1/destinations/{type_}/{name}")
    return int(document["depth"]) if status == 200 else -1


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Broker]:
    config = config_from_flags(
        "ops", tmp_path / "data", ["stomp://127.0.0.1:0"], "127.0.0.1:0", True
    )
    async with running_broker(config) as running:
        yield running


def base_url(broker: Broker) -> str:
    assert broker.admin is not None
    return broker.admin.url


async def client(broker: Broker, client_id: str | None = None) -> Connection:
    return await connect(f"tcp://127.0.0.1:{broker.service.ports[0]}", client_id=client_id)


async def fill(connection: Connection, queue: str, colours: list[str]) -> None:
    for n, colour in enumerate(colours):
        await connection.send(
            f"/queue/{queue}", f"m{n}", headers={"colour": colour}, persistent=True
        )


async def test_purge_empties_a_queue_and_keeps_it(broker: Broker) -> None:
    base = base_url(broker)
    connection = await client(broker)
    await fill(connection, "work", ["red"] * 5)
    status, document = await call(f"{base}/api/v1/queues/work/purge", "POST")
    assert (status, document) == (200, {"queue": "work", "purged": 5})
    assert await depth(base, "work") == 0
    status, document = await call(f"{base}/api/v1/queues/missing/purge", "POST")
    assert status == 404
    assert "missing" in document["message"]
    await connection.disconnect()


async def test_a_write_needs_a_json_content_type(broker: Broker) -> None:
    base = base_url(broker)
    connection = await client(broker)
    await fill(connection, "kept", ["red"])
    # A web page can make a browser POST a form to the loopback port: not with this type.
    status, document = await call(
        f"{base}/api/v1/queues/kept/purge", "POST", content_type="application/x-www-form-urlencoded"
    )
    assert status == 415
    assert document["error"] == "Unsupported Media Type"
    assert await depth(base, "kept") == 1
    await connection.disconnect()


async def test_delete_a_queue_and_a_topic(broker: Broker) -> None:
    base = base_url(broker)
    connection = await client(broker)
    await fill(connection, "doomed", ["red", "red"])
    await connection.send("/topic/news", "x")
    status, document = await call(f"{base}/api/v1/destinations/queue/doomed", "DELETE")
    assert (status, document) == (
        200,
        {"deleted": {"type": "queue", "name": "doomed"}, "messages": 2},
    )
    assert await depth(base, "doomed") == -1
    status, _ = await call(f"{base}/api/v1/destinations/topic/news", "DELETE")
    assert status == 200
    status, _ = await call(f"{base}/api/v1/destinations/topic/news", "DELETE")
    assert status == 404
    # The read route of the same path still answers, and says which methods there are.
    status, document = await call(f"{base}/api/v1/destinations/queue/doomed", "PUT", {})
    assert status == 405
    await connection.disconnect()


async def test_move_and_copy_by_selector_with_a_limit(broker: Broker) -> None:
    base = base_url(broker)
    connection = await client(broker)
    await fill(connection, "source", ["red", "blue", "red", "red", "blue"])
    move = {"to": "reds", "selector": "colour = 'red'", "max": 2}
    status, document = await call(f"{base}/api/v1/queues/source/move", "POST", move)
    assert (status, document) == (200, {"queue": "source", "to": "reds", "moved": 2})
    assert (await depth(base, "source"), await depth(base, "reds")) == (3, 2)
    copy = {"to": "copies", "selector": "colour = 'blue'", "copy": True}
    status, document = await call(f"{base}/api/v1/queues/source/move", "POST", copy)
    assert (status, document["copied"]) == (200, 2)
    assert (await depth(base, "source"), await depth(base, "copies")) == (3, 2)

    subscription = await connection.subscribe("/queue/reds", ack="client")
    bodies = [(await subscription.get(5)).text for _ in range(2)]
    assert bodies == ["m0", "m2"]  # in their order, the first two that matched
    status, document = await call(
        f"{base}/api/v1/queues/source/move", "POST", {"to": "x", "selector": "colour ="}
    )
    assert status == 400
    assert "selector" in document["message"]
    status, document = await call(f"{base}/api/v1/queues/source/move", "POST", {})
    assert status == 400
    assert "'to'" in document["message"]
    await connection.disconnect()


async def test_retry_sends_dead_letters_back_where_they_came_from(broker: Broker) -> None:
    base = base_url(broker)
    connection = await client(broker)
    await fill(connection, "orders", ["red", "blue"])
    subscription = await connection.subscribe("/queue/orders", ack="client-individual")
    for _ in range(2):
        message = await subscription.get(5)
        await message.nack(receipt=True)
    await subscription.unsubscribe()
    assert (await depth(base, "orders"), await depth(base, "ActiveMQ.DLQ")) == (0, 2)
    status, document = await call(
        f"{base}/api/v1/queues/ActiveMQ.DLQ/retry", "POST", {"selector": "colour = 'blue'"}
    )
    assert (status, document) == (200, {"queue": "ActiveMQ.DLQ", "retried": 1})
    assert (await depth(base, "orders"), await depth(base, "ActiveMQ.DLQ")) == (1, 1)
    again = await connection.subscribe("/queue/orders")
    retried = await again.get(5)
    assert retried.text == "m1"
    assert "original-destination" not in retried.headers
    assert "dlqDeliveryFailureCause" not in retried.headers
    await connection.disconnect()


async def test_remove_a_durable_subscription_only_when_inactive(broker: Broker) -> None:
    base = base_url(broker)
    subscriber = await client(broker, client_id="reader")
    durable = await subscriber.subscribe("/topic/prices", durable_name="keep", ack="client")
    path = f"{base}/api/v1/durable-subscriptions/reader/keep"
    status, document = await call(path, "DELETE")
    assert status == 409
    assert "active" in document["message"]
    await durable.unsubscribe()  # inactive, not destroyed
    producer = await client(broker)
    await producer.send("/topic/prices", "1", persistent=True)
    status, document = await call(path, "DELETE")
    assert (status, document) == (
        200,
        {"client_id": "reader", "subscription": "keep", "messages": 1},
    )
    status, _ = await call(path, "DELETE")
    assert status == 404
    await subscriber.disconnect()
    await producer.disconnect()


async def test_close_a_connection_by_id(broker: Broker) -> None:
    base = base_url(broker)
    victim = await client(broker, client_id="victim")
    status, document = await call(f"{base}/api/v1/connections")
    (listed,) = document["connections"]
    quoted = urllib.parse.quote(listed["id"], safe="")
    status, document = await call(f"{base}/api/v1/connections/{quoted}", "DELETE")
    assert (status, document) == (200, {"closed": listed["id"]})
    await asyncio.wait_for(victim.wait_closed(), 5)
    status, _ = await call(f"{base}/api/v1/connections/{quoted}", "DELETE")
    assert status == 404


async def test_send_a_test_message(broker: Broker) -> None:
    base = base_url(broker)
    document = {"body": "hello", "headers": {"colour": "green", "priority": 7}}
    status, answer = await call(
        f"{base}/api/v1/destinations/queue/tests/messages", "POST", document
    )
    assert status == 200
    assert answer["sent"] == {"type": "queue", "name": "tests"}
    connection = await client(broker)
    subscription = await connection.subscribe("/queue/tests")
    message = await subscription.get(5)
    assert (message.text, message.headers["colour"], message.headers["priority"]) == (
        "hello",
        "green",
        "7",
    )
    assert message.message_id == answer["message_id"]
    assert message.persistent
    bad = {"body": "x", "headers": {"priority": "high"}}
    status, answer = await call(f"{base}/api/v1/destinations/queue/tests/messages", "POST", bad)
    assert status == 400
    assert "priority" in answer["message"]
    await connection.disconnect()


# -- separate processes: a slave refuses, a write survives a SIGKILL ---------------------------


def admin_process(
    data_dir: Path, name: str, config_xml: str | None = None
) -> tuple[BrokerProcess, str]:
    port = free_port()
    process = BrokerProcess(
        data_dir, name=name, config_xml=config_xml, extra_args=["--admin", f"127.0.0.1:{port}"]
    )
    return process, f"http://127.0.0.1:{port}"


def test_a_slave_refuses_every_write(tmp_path: Path) -> None:
    config = group_config(tmp_path / "shared")
    master, _ = admin_process(tmp_path / "b1", "b1", config)
    slave, slave_url = admin_process(tmp_path / "b2", "b2", config)
    try:
        master.start()
        slave.start(as_slave=True)
        assert slave.state == "slave"
        for method, path, document in (
            ("POST", "/api/v1/queues/q/purge", None),
            ("POST", "/api/v1/queues/q/move", {"to": "r"}),
            ("POST", "/api/v1/queues/ActiveMQ.DLQ/retry", None),
            ("DELETE", "/api/v1/destinations/queue/q", None),
            ("POST", "/api/v1/destinations/queue/q/messages", {"body": "x"}),
            ("DELETE", "/api/v1/durable-subscriptions/c/s", None),
            ("DELETE", "/api/v1/connections/ID:x", None),
        ):
            status, answer = request(slave_url + path, method, document)
            assert status == 503, (path, answer)
            assert "b2 is not serving (waiting for lock)" in answer["message"]
    finally:
        slave.kill()
        master.kill()


def test_purge_and_move_survive_a_sigkill(tmp_path: Path) -> None:
    broker, base = admin_process(tmp_path / "data", "durable")
    with broker:
        for n in range(6):
            status, _ = request(
                f"{base}/api/v1/destinations/queue/purged/messages", "POST", {"body": f"p{n}"}
            )
            assert status == 200
            colour = "red" if n % 2 else "blue"
            document = {"body": f"m{n}", "headers": {"colour": colour}}
            status, _ = request(f"{base}/api/v1/destinations/queue/from/messages", "POST", document)
            assert status == 200
        assert request(f"{base}/api/v1/queues/purged/purge", "POST")[1]["purged"] == 6
        move = {"to": "to", "selector": "colour = 'red'"}
        assert request(f"{base}/api/v1/queues/from/move", "POST", move)[1]["moved"] == 3
        broker.kill()  # at once: no clean shutdown, nothing flushed but what was committed
        broker.start()
        depths = {
            name: request(f"{base}/api/v1/destinations/queue/{name}")[1]["depth"]
            for name in ("purged", "from", "to")
        }
        assert depths == {"purged": 0, "from": 3, "to": 3}
        # After the restart everything is paged out: a move reads it back from the store.
        assert request(f"{base}/api/v1/queues/to/move", "POST", {"to": "back", "max": 2})[1] == {
            "queue": "to",
            "to": "back",
            "moved": 2,
        }
        broker.kill()
        broker.start()
        depths = {
            name: request(f"{base}/api/v1/destinations/queue/{name}")[1]["depth"]
            for name in ("to", "back")
        }
        assert depths == {"to": 1, "back": 2}
