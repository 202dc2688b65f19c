"""Destination policies and limits from an activemq.xml file, observed with stomp.py."""

from __future__ import annotations

from pathlib import Path

from ferrymq.core.destination import Destination
from ferrymq.testing import BrokerThread, broker_config
from tests.interop.conftest import Clients

INDIVIDUAL_DLQ = """
<beans xmlns="http://www.springframework.org/schema/beans">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="policy-test">
    <destinationPolicy>
      <policyMap>
        <policyEntries>
          <policyEntry queue="orders.>">
            <deadLetterStrategy>
              <individualDeadLetterStrategy queuePrefix="DLQ." processNonPersistent="true"/>
            </deadLetterStrategy>
          </policyEntry>
        </policyEntries>
      </policyMap>
    </destinationPolicy>
    <plugins>
      <redeliveryPlugin fallbackToDeadLetter="true" sendToDlqIfMaxRetriesExceeded="true">
        <redeliveryPolicyMap>
          <redeliveryPolicyMap>
            <redeliveryPolicyEntries>
              <redeliveryPolicy queue="retry.>" maximumRedeliveries="2"/>
            </redeliveryPolicyEntries>
          </redeliveryPolicyMap>
        </redeliveryPolicyMap>
      </redeliveryPlugin>
    </plugins>
  </broker>
</beans>
"""


def _clients(tmp_path: Path, xml: str) -> tuple[BrokerThread, Clients]:
    thread = BrokerThread(broker_config(tmp_path / "data", xml=xml)).start()
    return thread, Clients(thread)


def test_individual_dead_letter_strategy_from_config(tmp_path: Path) -> None:
    thread, clients = _clients(tmp_path, INDIVIDUAL_DLQ)
    try:
        conn, listener = clients.connect()
        conn.send("/queue/orders.eu", "not persistent")  # processNonPersistent="true"
        conn.subscribe("/queue/orders.eu", id="s", ack="client")
        (message,) = listener.wait_messages(1)
        conn.nack(message.headers["ack"])
        conn.subscribe("/queue/DLQ.orders.eu", id="dlq", ack="auto")
        dead = listener.wait_messages(2)[1]
        assert dead.body == "not persistent"
        assert dead.headers["originalDeliveryMode"] == "NON_PERSISTENT"
        assert clients.depth("ActiveMQ.DLQ") == 0
    finally:
        clients.close_all()
        thread.stop()


def test_redelivery_plugin_policy_retries_nacks_then_dead_letters(tmp_path: Path) -> None:
    thread, clients = _clients(tmp_path, INDIVIDUAL_DLQ)
    try:
        conn, listener = clients.connect()
        conn.send("/queue/retry.me", "flaky", headers={"persistent": "true"})
        conn.subscribe("/queue/retry.me", id="s", ack="client-individual")
        flags = []
        for attempt in range(3):
            message = listener.wait_messages(attempt + 1)[attempt]
            flags.append(message.headers.get("redelivered", "false"))
            conn.nack(message.headers["ack"])
        assert flags == ["false", "true", "true"]
        conn.subscribe("/queue/ActiveMQ.DLQ", id="dlq", ack="auto")
        dead = listener.wait_messages(4)[3]
        assert dead.body == "flaky"
        assert "maximumRedeliveries=2" in dead.headers["dlqDeliveryFailureCause"]
    finally:
        clients.close_all()
        thread.stop()


def test_default_policy_keeps_activemq_nack_to_shared_dlq(tmp_path: Path) -> None:
    thread, clients = _clients(tmp_path, INDIVIDUAL_DLQ)
    try:
        conn, listener = clients.connect()
        conn.send("/queue/plain", "x", headers={"persistent": "true"})
        conn.subscribe("/queue/plain", id="s", ack="client")
        (message,) = listener.wait_messages(1)
        conn.nack(message.headers["ack"])
        conn.send("/queue/sync", "y", headers={"receipt": "sync"})
        listener.wait_receipt("sync")

        def dlq_depth() -> int:
            assert thread.broker is not None
            queues = thread.broker.service.region.queues
            return queues[Destination.queue("ActiveMQ.DLQ")].depth

        assert thread.call(dlq_depth) == 1
    finally:
        clients.close_all()
        thread.stop()
