"""The reconnect loop of a broker connection, as Artemis runs it (Artemis documentation,
"Broker Connections", reconnecting and failover; the scenarios of its
``ValidateAMQPErrorsTest``): fixed retry interval, ``#`` alternates in turn, the attempt budget,
refused links counted, a set-up connection resetting the counter."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ferrymq.broker import Broker
from ferrymq.config.broker_connections import SenderConfig
from ferrymq.connections.broker_connection import AmqpBrokerConnection, ConnectionState
from ferrymq.testing import free_port, wait_until
from tests.connections.runtime_support import (
    TinyElement,
    broker_with_connections,
    connection,
)
from tests.connections.scripted_peer import Answer, Attach, ScriptedPeer

pytestmark = pytest.mark.usefixtures("tiny_senders")

SENDER = SenderConfig(address_match="orders")


def of(broker: Broker, name: str = "c") -> AmqpBrokerConnection:
    return broker.broker_connections.get(name)


async def until_state(conn: AmqpBrokerConnection, state: ConnectionState) -> None:
    await wait_until(lambda: conn.state is state, 10, f"{conn.name} {state}")


async def test_first_host_down_then_alternate(tmp_path: Path) -> None:
    down = free_port()
    async with ScriptedPeer() as peer:
        uri = f"tcp://127.0.0.1:{down}?connectTimeoutMillis=2000#127.0.0.1:{peer.port}"
        async with broker_with_connections(tmp_path, connection("c", uri, SENDER)) as broker:
            conn = of(broker)
            await until_state(conn, ConnectionState.CONNECTED)
            assert conn.current_host == f"tcp://127.0.0.1:{peer.port}"
            assert conn.connects == 2
            assert conn.counter == 0
            assert [a.address for a in peer.attaches] == ["orders"]


async def test_runtime_drop_reconnects_to_the_next_alternate(tmp_path: Path) -> None:
    async with ScriptedPeer() as first, ScriptedPeer() as second:
        uri = f"{first.url}#{second.url}"
        async with broker_with_connections(tmp_path, connection("c", uri, SENDER)) as broker:
            conn = of(broker)
            await until_state(conn, ConnectionState.CONNECTED)
            assert (first.accepted, second.accepted) == (1, 0)
            await first.drop_all()
            await wait_until(lambda: second.accepted == 1, 10, "a connection to the alternate")
            await until_state(conn, ConnectionState.CONNECTED)
            assert conn.current_host == second.url
            assert first.accepted == 1  # still listening, but the next alternate came first


async def test_two_reconnect_attempts_make_three_connections(tmp_path: Path) -> None:
    async with ScriptedPeer(answer=lambda attach: Answer(refuse="no such address")) as peer:
        config = connection("c", peer.url, SENDER, reconnect_attempts=2)
        async with broker_with_connections(tmp_path, config) as broker:
            conn = of(broker)
            await until_state(conn, ConnectionState.FAILED)
            await asyncio.sleep(0.3)  # six retry intervals: nothing more comes
            assert peer.accepted == 3
            assert conn.state is ConnectionState.FAILED
            assert "no such address" in (conn.last_error or "")


async def test_attempts_run_out_when_nobody_listens(tmp_path: Path) -> None:
    config = connection("c", f"tcp://127.0.0.1:{free_port()}", SENDER, reconnect_attempts=1)
    async with broker_with_connections(tmp_path, config) as broker:
        conn = of(broker)
        await until_state(conn, ConnectionState.FAILED)
        assert conn.connects == 2
        assert "127.0.0.1" in (conn.last_error or "")


async def test_a_set_up_connection_resets_the_counter(tmp_path: Path) -> None:
    answers: list[str] = []

    def answer(attach: Attach) -> Answer:
        # Refused, refused, accepted, then (after the drop) refused for good.
        answers.append(attach.name)
        if len(answers) == 3:
            return Answer()
        return Answer(refuse="not now")

    async with ScriptedPeer(answer=answer) as peer:
        config = connection("c", peer.url, SENDER, reconnect_attempts=2)
        async with broker_with_connections(tmp_path, config) as broker:
            conn = of(broker)
            await until_state(conn, ConnectionState.CONNECTED)
            assert peer.accepted == 3  # the whole budget: 1 attempt and 2 retries
            assert conn.counter == 0
            await peer.drop_all()
            await until_state(conn, ConnectionState.FAILED)
            # After the drop: counter 1, then two refused attempts use up the budget.
            assert peer.accepted == 5


async def test_auto_start_false_waits_for_start_and_stop_start_repeat(tmp_path: Path) -> None:
    async with ScriptedPeer() as peer:
        config = connection("c", peer.url, SENDER, auto_start=False)
        async with broker_with_connections(tmp_path, config) as broker:
            conn = of(broker)
            await asyncio.sleep(0.2)
            assert conn.state is ConnectionState.STOPPED
            assert peer.accepted == 0
            for round_ in (1, 2):
                await broker.broker_connections.start_connection("c")
                await until_state(conn, ConnectionState.CONNECTED)
                assert peer.accepted == round_
                await broker.broker_connections.stop_connection("c")
                assert conn.state is ConnectionState.STOPPED
                await wait_until(lambda: len(peer._tasks) == 0, 5, "the peer's side closed")
            (element,) = conn.elements
            assert isinstance(element, TinyElement)
            assert element.runs == 2


async def test_open_announces_connection_name_and_persistent_node_id(tmp_path: Path) -> None:
    async with ScriptedPeer() as peer:
        config = connection("mirror-a", peer.url, SENDER)
        async with broker_with_connections(tmp_path, config) as broker:
            await until_state(of(broker, "mirror-a"), ConnectionState.CONNECTED)
            node_id = broker.service.region.node_id
        async with broker_with_connections(tmp_path, config) as broker:
            await until_state(of(broker, "mirror-a"), ConnectionState.CONNECTED)
            assert broker.service.region.node_id == node_id  # kept across a restart
        first, second = peer.connections
        for seen in (first, second):
            assert seen.container_id == f"{node_id}:mirror-a"
            assert seen.properties["broker-connection-info"] == {
                "connectionName": "mirror-a",
                "nodeId": node_id,
            }
        assert (tmp_path / "local" / "node-id").read_text().strip() == node_id


async def test_non_persistent_broker_gets_a_new_node_id(tmp_path: Path) -> None:
    ids = []
    for _ in range(2):
        async with broker_with_connections(tmp_path, persistent=False) as broker:
            ids.append(broker.service.region.node_id)
    assert ids[0] != ids[1]
    assert not (tmp_path / "local" / "node-id").exists()
