"""FerryMQ and a real ActiveMQ 5.17 (Debian's ``activemq`` package) find each other by multicast
(issue 6; reference §3.4): ActiveMQ's STOMP connector advertises with ``discoveryUri`` and a
FerryMQ ``discovery:(multicast://...)`` client finds it and exchanges a message with it; a
FerryMQ broker advertises and ActiveMQ's ``<networkConnector uri="multicast://...">`` tries to
bridge to it (its log says so); when ActiveMQ stops, its ``dead`` datagram removes it from a
FerryMQ agent at once (the last test: it stops the module's ActiveMQ).

ActiveMQ runs once for the module, in the foreground as a child process, on free ports with its
files under a temporary directory, pinned to ``lo`` like every agent in the tests: its
``networkInterface=lo`` sends by ``lo`` and ``joinNetworkInterface=lo`` joins there (without
it ActiveMQ joins on its first non-loopback interface). FerryMQ reads the same agent URI.
Every wait is bounded. A machine without ActiveMQ fails here, saying what to install.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from ferrymq.client import connect
from ferrymq.testing import broker_config, free_port, running_broker
from ferrymq.testing.activemq import QUIET_LOG4J, ActiveMQProcess, ActiveMQUnavailableError
from tests.discovery.test_multicast_agent import Recorder, fresh_agent_uri, running_agent

WAIT_S = 20.0
BROKER_NAME = "amq-interop"

_ACTIVEMQ_XML = """<beans xmlns="http://www.springframework.org/schema/beans"
  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
  xsi:schemaLocation="http://www.springframework.org/schema/beans
    http://www.springframework.org/schema/beans/spring-beans.xsd
    http://activemq.apache.org/schema/core
    http://activemq.apache.org/schema/core/activemq-core.xsd">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="{name}" useJmx="false"
      persistent="false" dataDirectory="{{data}}">
    <networkConnectors>
      <networkConnector name="multicast" uri="{agent}"/>
    </networkConnectors>
    <transportConnectors>
      <transportConnector name="stomp" uri="stomp://127.0.0.1:{port}" discoveryUri="{agent}"/>
    </transportConnectors>
  </broker>
</beans>
"""

# The start-up lines and the network connector's decisions.
_LOG4J = QUIET_LOG4J + "log4j.logger.org.apache.activemq.network.DiscoveryNetworkConnector=INFO\n"


class ActiveMQ(ActiveMQProcess):
    """The module's ActiveMQ: its STOMP connector advertised through ``agent_uri``."""

    def __init__(self, base: Path, agent_uri: str) -> None:
        self.agent_uri = agent_uri
        self.port = free_port()
        xml = _ACTIVEMQ_XML.format(
            name=BROKER_NAME, agent=agent_uri.replace("&", "&amp;"), port=self.port
        )
        super().__init__(base, xml, broker_name=BROKER_NAME, log4j=_LOG4J)

    def start(self) -> None:
        try:
            super().start()
        except ActiveMQUnavailableError as exc:
            pytest.fail(str(exc))


@pytest.fixture(scope="module")
def agent_uri() -> str:
    return fresh_agent_uri(keep_alive_ms=100, extra="&joinNetworkInterface=lo")


@pytest.fixture(scope="module")
def activemq(tmp_path_factory: pytest.TempPathFactory, agent_uri: str) -> Iterator[ActiveMQ]:
    broker = ActiveMQ(tmp_path_factory.mktemp("activemq"), agent_uri)
    try:
        broker.start()
        yield broker
    finally:
        broker.stop()


async def test_a_ferrymq_discovery_client_finds_activemq_and_exchanges_a_message(
    activemq: ActiveMQ, agent_uri: str
) -> None:
    # ActiveMQ publishes its listener under the host name it resolves 127.0.0.1 to.
    probe = Recorder()
    async with running_agent(agent_uri, listener=probe):
        await probe.wait_for(
            lambda: any(uri.endswith(f":{activemq.port}") for uri in probe.services),
            "ActiveMQ's STOMP connector",
        )
    (advertised,) = probe.services
    assert advertised.startswith("stomp://")
    async with connect(f"discovery:({agent_uri})", connect_timeout=WAIT_S) as client:
        assert client.remote_url.endswith(f":{activemq.port}")
        assert "ActiveMQ" in (client.server or "")
        subscription = await client.subscribe("/queue/ferrymq.interop")
        await client.send("/queue/ferrymq.interop", "found by multicast", persistent=True)
        message = await subscription.get(timeout=WAIT_S)
    assert message.text == "found by multicast"


async def test_activemq_discovers_a_ferrymq_broker_and_tries_to_bridge_to_it(
    activemq: ActiveMQ, agent_uri: str, tmp_path: Path
) -> None:
    xml = f"""<beans><broker xmlns="http://activemq.apache.org/schema/core" brokerName="ferry">
      <transportConnectors>
        <transportConnector name="stomp" uri="stomp://127.0.0.1:0"
          discoveryUri="{agent_uri.replace("&", "&amp;")}"/>
      </transportConnectors></broker></beans>"""
    async with running_broker(broker_config(tmp_path, name="ferry", xml=xml)) as broker:
        advertised = f"stomp://127.0.0.1:{broker.stomp_ports[0]}"
        wanted = f"Establishing network connection from vm://{BROKER_NAME} to {advertised}"
        seen = await asyncio.to_thread(activemq.wait_for_line, lambda line: wanted in line, WAIT_S)
        assert seen, "ActiveMQ did not discover FerryMQ:\n" + "".join(activemq.lines[-40:])


async def test_activemqs_dead_datagram_removes_it_at_once(
    activemq: ActiveMQ, agent_uri: str
) -> None:
    """The module's last test: it stops ActiveMQ."""
    patient = agent_uri.replace("keepAliveInterval=100", "keepAliveInterval=10000")  # expiry 100 s
    probe = Recorder()
    async with running_agent(patient, listener=probe):
        await probe.wait_for(lambda: bool(probe.services), "ActiveMQ's STOMP connector")
        await asyncio.to_thread(activemq.stop)
        await probe.wait_for(lambda: not probe.services, "ActiveMQ's dead datagram")
    assert [what for what, _, _ in probe.events] == ["add", "remove"]
