"""A broker connection between two real FerryMQ brokers: FerryMQ's AMQP listener is the remote.

The tiny test element attaches a sender to the remote queue ``orders``; what it sends lands
there, the remote sees this broker's node id as the connection's container id, and a remote
that requires a login gets SASL PLAIN with the connection's user and password."""

from __future__ import annotations

import asyncio
from pathlib import Path

import proton
import pytest

from ferrymq.admin.source import BrokerServiceSource
from ferrymq.broker import Broker
from ferrymq.config.broker_connections import SenderConfig
from ferrymq.connections.broker_connection import AmqpBrokerConnection, ConnectionState
from ferrymq.testing import broker_config, wait_until
from tests.connections.runtime_support import (
    TinyElement,
    amqp_url,
    broker_with_connections,
    connection,
    running,
)

pytestmark = pytest.mark.usefixtures("tiny_senders")

SENDER = SenderConfig(address_match="orders", name="tiny")

SECURED = """<beans xmlns="http://www.springframework.org/schema/beans">
<broker xmlns="http://activemq.apache.org/schema/core" brokerName="remote">
  <plugins><simpleAuthenticationPlugin><users>
    <authenticationUser username="bridge" password="s3cret" groups="admins"/>
  </users></simpleAuthenticationPlugin></plugins>
  <transportConnectors><transportConnector name="s" uri="stomp://127.0.0.1:0"/>
  </transportConnectors>
</broker></beans>"""


async def connected(conn: AmqpBrokerConnection) -> TinyElement:
    await wait_until(lambda: conn.state is ConnectionState.CONNECTED, 10, "connected")
    (element,) = conn.elements
    assert isinstance(element, TinyElement)
    return element


def depth(broker: Broker, queue: str) -> int:
    stats = broker.service.region.destination_statistics()
    return sum(s.depth for s in stats if s.destination.name == queue)


async def test_sends_to_a_remote_ferrymq_broker(tmp_path: Path) -> None:
    remote_config = broker_config(tmp_path / "remote", name="remote", amqp=True)
    async with running(remote_config) as remote:
        config = connection("to-remote", amqp_url(remote), SENDER)
        async with broker_with_connections(tmp_path / "local", config) as local:
            element = await connected(local.broker_connections.get("to-remote"))
            assert element.sender is not None
            message = proton.Message(body="hello", durable=True)
            outcome = await asyncio.wait_for(element.sender.send(bytes(message.encode())), 10)
            assert outcome.accepted
            assert depth(remote, "orders") == 1
            clients = BrokerServiceSource(remote.service).connection_statistics()
            amqp = [c for c in clients if c.protocol == "AMQP"]
            assert [c.client_id for c in amqp] == [f"{local.service.region.node_id}:to-remote"]


async def test_plain_login_to_a_secured_remote(tmp_path: Path) -> None:
    remote_config = broker_config(tmp_path / "remote", name="remote", xml=SECURED, amqp=True)
    async with running(remote_config) as remote:
        wrong = connection(
            "bad", amqp_url(remote), SENDER, user="bridge", password="nope", reconnect_attempts=0
        )
        good = connection("good", amqp_url(remote), SENDER, user="bridge", password="s3cret")
        async with broker_with_connections(tmp_path / "local", wrong, good) as local:
            await connected(local.broker_connections.get("good"))
            bad = local.broker_connections.get("bad")
            await wait_until(lambda: bad.state is ConnectionState.FAILED, 10, "bad login failed")
            assert "auth" in (bad.last_error or "").lower()
            clients = BrokerServiceSource(remote.service).connection_statistics()
            assert [c.user for c in clients if c.protocol == "AMQP"] == ["bridge"]
