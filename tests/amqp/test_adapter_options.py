"""The AMQP listener's own options and limits, with python-qpid-proton's BlockingConnection:
consumer options in a source address, the message size limit, user-id, what the broker
announces at open, and the anonymous relay."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import cast

import pytest
from proton import Message, Timeout
from proton.utils import BlockingConnection, LinkDetached

from ferrymq.config.model import StompLimitsConfig
from ferrymq.testing import BrokerThread, broker_config

LIMIT = 200_000


@pytest.fixture
def served(tmp_path: Path) -> Iterator[BrokerThread]:
    config = broker_config(tmp_path, amqp=True)
    connectors = tuple(
        replace(c, stomp=StompLimitsConfig(max_data_length=LIMIT)) if c.scheme == "amqp" else c
        for c in config.transport_connectors
    )
    with BrokerThread(replace(config, transport_connectors=connectors)) as broker:
        yield broker


@pytest.fixture
def connection(served: BrokerThread) -> Iterator[BlockingConnection]:
    connection = BlockingConnection(f"amqp://127.0.0.1:{served.amqp_port}", timeout=10)
    try:
        yield connection
    finally:
        connection.close()


def test_an_exclusive_consumer_takes_everything_while_it_is_there(
    connection: BlockingConnection,
) -> None:
    exclusive = connection.create_receiver(
        "queue://excl?consumer.exclusive=true", name="first", credit=10
    )
    other = connection.create_receiver("queue://excl", name="second", credit=10)
    sender = connection.create_sender("queue://excl")
    for i in range(6):
        sender.send(Message(body=f"m{i}"))
    got = []
    for _ in range(6):
        got.append(exclusive.receive(timeout=5).body)
        exclusive.accept()
    assert got == [f"m{i}" for i in range(6)]
    with pytest.raises(Timeout):
        other.receive(timeout=0.5)


def test_an_unknown_address_option_is_refused_on_the_link(connection: BlockingConnection) -> None:
    with pytest.raises(LinkDetached, match=r"unknown address option 'consumer\.bogus'"):
        connection.create_receiver("queue://x?consumer.bogus=1", name="bad")
    sender = connection.create_sender("queue://x")  # the connection goes on
    sender.send(Message(body="fine"))


def test_a_message_over_the_limit_ends_its_link_not_the_connection(
    connection: BlockingConnection,
) -> None:
    sender = connection.create_sender("queue://big", name="big")
    assert sender.link.remote_max_message_size == LIMIT
    sender.send(Message(body=b"x" * 1000))
    with pytest.raises(LinkDetached, match="amqp:link:message-size-exceeded"):
        sender.send(Message(body=b"x" * (LIMIT * 15)))  # several frames: refused mid-way
    connection.create_sender("queue://big", name="again").send(Message(body=b"y"))
    receiver = connection.create_receiver("queue://big", credit=5)
    messages = [receiver.receive(timeout=5) for _ in range(2)]  # kept: proton's body is a view
    assert [bytes(cast(bytes, m.body)) for m in messages] == [b"x" * 1000, b"y"]
    with pytest.raises(Timeout):  # nothing of the refused one
        receiver.receive(timeout=0.5)


def test_a_user_id_the_connection_did_not_log_in_as_is_dropped(
    connection: BlockingConnection,
) -> None:
    connection.create_sender("queue://who").send(Message(body="m", user_id=b"admin"))
    received = connection.create_receiver("queue://who", credit=1).receive(timeout=5)
    assert received.user_id in (None, b"")


def test_the_broker_announces_its_prefixes_and_the_anonymous_relay(
    connection: BlockingConnection,
) -> None:
    remote = connection.conn
    assert remote is not None
    assert remote.remote_properties["queue-prefix"] == "queue://"
    assert remote.remote_properties["topic-prefix"] == "topic://"
    assert "ANONYMOUS-RELAY" in remote.remote_offered_capabilities
    relay = connection.create_sender(None)
    relay.send(Message(address="queue://relayed", body="via the relay"))
    received = connection.create_receiver("queue://relayed", credit=1).receive(timeout=5)
    assert received.body == "via the relay"
