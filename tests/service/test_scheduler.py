"""Scheduled delivery end to end: timing, and jobs surviving a SIGKILL (issue 4, item 5)."""

from __future__ import annotations

import time
from pathlib import Path

import stomp
from ferrymq.testing import BrokerProcess, BrokerThread, broker_config
from tests.interop.conftest import Clients, Collector

SCHEDULER = (
    '<broker xmlns="http://activemq.apache.org/schema/core" brokerName="sched" '
    'schedulerSupport="true"/>'
)


def test_delayed_message_arrives_at_its_time(tmp_path: Path) -> None:
    with BrokerThread(broker_config(tmp_path / "data", xml=SCHEDULER)) as thread:
        clients = Clients(thread)
        try:
            conn, listener = clients.connect()
            conn.subscribe("/queue/later", id="s", ack="auto", headers={"receipt": "sub"})
            listener.wait_receipt("sub")
            sent_at = time.monotonic()
            conn.send(
                "/queue/later",
                "wait for it",
                headers={"AMQ_SCHEDULED_DELAY": "400", "persistent": "true", "receipt": "s"},
            )
            listener.wait_receipt("s")
            (message,) = listener.wait_messages(1, timeout=5)
            assert time.monotonic() - sent_at >= 0.35
            assert "scheduledJobId" in message.headers
            assert "AMQ_SCHEDULED_DELAY" not in message.headers
            assert listener.quiet_for(0.3) == []
        finally:
            clients.close_all()


def test_scheduled_message_survives_kill_and_is_delivered_once(tmp_path: Path) -> None:
    process = BrokerProcess(tmp_path / "data", name="sched", config_xml=SCHEDULER).start()
    try:
        producer = stomp.Connection12([("127.0.0.1", process.port)])
        listener = Collector()
        producer.set_listener("c", listener)
        producer.connect(wait=True)
        due = time.monotonic() + 2.0
        producer.send(
            "/queue/survivor",
            "scheduled before the crash",
            headers={"AMQ_SCHEDULED_DELAY": "2000", "receipt": "stored"},
        )
        listener.wait_receipt("stored")
        process.kill()
        process.start()
        consumer = stomp.Connection12([("127.0.0.1", process.port)])
        received = Collector()
        consumer.set_listener("c", received)
        consumer.connect(wait=True)
        consumer.subscribe("/queue/survivor", id="s", ack="client-individual")
        (message,) = received.wait_messages(1, timeout=10)
        assert time.monotonic() >= due - 0.1
        assert message.body == "scheduled before the crash"
        consumer.ack(message.headers["ack"], receipt="acked")
        received.wait_receipt("acked")
        assert received.quiet_for(0.5) == []
        consumer.disconnect()
    finally:
        process.kill()
