"""One message, two protocols: sent over STOMP and received over AMQP 1.0 (python-qpid-proton)
and the reverse, with every mapped field compared (body, message id, correlation-id, reply-to,
priority, expiry, persistence, type/subject, group id and sequence, custom properties), and a
network of brokers carrying AMQP-produced messages to a STOMP consumer on the other broker.

The STOMP side is raw frames (``tests.fuzz.wire``), independent of FerryMQ's own client.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from proton import Message

from ferrymq.testing import BrokerThread, broker_config, free_port, wait_until_blocking
from tests.amqp.proton_support import blocking, region_of
from tests.fuzz.wire import RawConnection, Reply, frame

TTL_MS = 60_000


@pytest.fixture
def served(tmp_path: Path) -> Iterator[BrokerThread]:
    with BrokerThread(broker_config(tmp_path / "data", amqp=True)) as thread:
        yield thread


def _amqp(served: BrokerThread) -> str:
    return f"amqp://127.0.0.1:{served.amqp_port}"


def _stomp(served: BrokerThread) -> RawConnection:
    connection = RawConnection(served.port)
    connection.handshake("1.2")
    return connection


def test_stomp_in_amqp_out_keeps_every_mapped_field(served: BrokerThread) -> None:
    expires = int(time.time() * 1000) + TTL_MS
    with _stomp(served) as stomp, blocking(_amqp(served)) as amqp:
        # A topic with one subscriber per protocol: both see the same message, so the AMQP
        # message-id can be compared with the STOMP one.
        stomp.send(frame("SUBSCRIBE", ("id", "s"), ("destination", "/topic/cross.in")))
        receiver = amqp.create_receiver("topic://cross.in", credit=1)
        stomp.send(
            frame(
                "SEND",
                ("destination", "/topic/cross.in"),
                ("correlation-id", "corr-1"),
                ("reply-to", "/queue/cross.replies"),
                ("priority", "7"),
                ("expires", str(expires)),
                ("persistent", "true"),
                ("type", "order"),
                ("JMSXGroupID", "group-1"),
                ("JMSXGroupSeq", "3"),
                ("colour", "red"),
                ("count", "5"),
                ("receipt", "r1"),
                body=b"hello from stomp",
            )
        )
        stomp.expect("RECEIPT")
        seen_by_stomp = stomp.expect("MESSAGE")
        message = receiver.receive(timeout=10)
        receiver.accept()
    assert message.expiry_time == pytest.approx(expires / 1000, abs=0.001)
    assert 0 < message.ttl <= TTL_MS / 1000
    fields = {
        "body": message.body,
        "id": message.id,
        "correlation_id": message.correlation_id,
        "reply_to": message.reply_to,
        "priority": message.priority,
        "durable": message.durable,
        "subject": message.subject,
        "group": (message.group_id, message.group_sequence),
        "properties": message.properties,
        "address": message.address,
    }
    assert fields == {
        "body": "hello from stomp",
        "id": seen_by_stomp.headers["message-id"],
        "correlation_id": "corr-1",
        "reply_to": "queue://cross.replies",
        "priority": 7,
        "durable": True,
        "subject": "order",
        "group": ("group-1", 3),
        "properties": {"colour": "red", "count": "5"},
        "address": "topic://cross.in",
    }


def _stomp_message(served: BrokerThread, destination: str) -> Reply:
    with _stomp(served) as stomp:
        stomp.send(frame("SUBSCRIBE", ("id", "s"), ("destination", destination)))
        return stomp.expect("MESSAGE")


def test_amqp_in_stomp_out_keeps_every_mapped_field(served: BrokerThread) -> None:
    before_ms = int(time.time() * 1000)
    with blocking(_amqp(served)) as amqp:
        amqp.create_sender("queue://cross.out").send(
            Message(
                id="amqp-id-1",
                correlation_id="corr-2",
                reply_to="queue://cross.replies",
                priority=6,
                ttl=TTL_MS / 1000,
                durable=True,
                subject="invoice",
                group_id="group-2",
                group_sequence=4,
                content_type="text/plain",
                properties={"colour": "blue", "count": 6, "flag": True},
                body="hello from amqp",
            )
        )
    got = _stomp_message(served, "/queue/cross.out")
    headers = got.headers
    assert got.body == b"hello from amqp"
    assert headers["message-id"] == "amqp-id-1"
    assert headers["correlation-id"] == "corr-2"
    assert headers["reply-to"] == "/queue/cross.replies"
    assert headers["priority"] == "6"
    assert before_ms + TTL_MS <= int(headers["expires"]) <= int(time.time() * 1000) + TTL_MS
    assert headers["persistent"] == "true"
    assert headers["type"] == "invoice"
    assert (headers["JMSXGroupID"], headers["JMSXGroupSeq"]) == ("group-2", "4")
    assert headers["content-type"] == "text/plain"
    assert (headers["colour"], headers["count"], headers["flag"]) == ("blue", "6", "true")
    assert headers["destination"] == "/queue/cross.out"


def test_a_non_persistent_amqp_message_is_non_persistent_over_stomp(served: BrokerThread) -> None:
    with blocking(_amqp(served)) as amqp:
        amqp.create_sender("queue://cross.np").send(Message(body="light", durable=False))
    got = _stomp_message(served, "/queue/cross.np")
    assert got.headers.get("persistent", "false") == "false"
    assert "expires" not in got.headers or got.headers["expires"] == "0"
    assert got.body == b"light"


def test_a_network_of_brokers_carries_amqp_messages_to_a_stomp_consumer(tmp_path: Path) -> None:
    port_b = free_port()
    xml_a = f"""<beans><broker xmlns="http://activemq.apache.org/schema/core" brokerName="A">
      <networkConnectors>
        <networkConnector uri="static:(tcp://127.0.0.1:{port_b})"/>
      </networkConnectors></broker></beans>"""
    config_a = broker_config(tmp_path / "a", name="A", xml=xml_a, amqp=True)
    config_b = broker_config(tmp_path / "b", name="B", port=port_b)
    with BrokerThread(config_b) as b, BrokerThread(config_a) as a, _stomp(b) as consumer:
        consumer.send(
            frame("SUBSCRIBE", ("id", "s"), ("destination", "/queue/across"), ("ack", "auto"))
        )
        region_a = region_of(a)

        def demand() -> bool:
            return a.call(lambda: any(q.name == "across" for q in region_a.queues))

        wait_until_blocking(demand, 15, "B's demand for queue across reached A")
        with blocking(_amqp(a)) as producer:
            sender = producer.create_sender("queue://across")
            for n in range(5):
                sender.send(
                    Message(id=f"net-{n}", body=f"net {n}", durable=True, properties={"n": n})
                )
        arrived = [consumer.expect("MESSAGE") for _ in range(5)]
    assert [m.body for m in arrived] == [f"net {n}".encode() for n in range(5)]
    assert [m.headers["message-id"] for m in arrived] == [f"net-{n}" for n in range(5)]
    assert [m.headers["n"] for m in arrived] == [str(n) for n in range(5)]
    assert {m.headers["persistent"] for m in arrived} == {"true"}
