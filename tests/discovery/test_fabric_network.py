"""Brokers with fabric agents: ``<networkConnector uri="fabric://GROUP?...">`` on brokers that
register in one group forms the complete graph, as with multicast (seed 001 chapter 6), drops a
broker that stops (its deregistration is notified) and bridges to it again when it returns; a
listener whose ``discoveryUri`` cannot reach its registry keeps the broker from starting, with a
message naming the registry but not its password."""

from __future__ import annotations

from pathlib import Path

import pytest

from ferrymq.client import connect
from ferrymq.service.broker import BrokerStartError
from ferrymq.testing import broker_config, free_port, running_broker
from ferrymq.testing.network import BrokerNetwork, wait_until
from tests.discovery.fabric_registry import registry_schema
from tests.network.conftest import WAIT_S
from tests.network.test_multicast_network import mesh_member, remote_brokers
from tests.postgres import PostgresDatabase


async def test_fabric_connectors_form_and_repair_a_complete_graph(
    tmp_path: Path, postgres_database: PostgresDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = registry_schema(postgres_database, monkeypatch)
    agent_uri = registry.agent_uri("mesh", initialReconnectDelay="200").replace("&", "&amp;")
    net = BrokerNetwork(tmp_path)
    for name in ("A", "B", "C"):
        mesh_member(net, name, agent_uri)
    async with net:

        def complete(names: str) -> bool:
            return all(remote_brokers(net, n) == set(names) - {n} for n in names)

        await wait_until(lambda: complete("ABC"), WAIT_S, "the complete graph A-B-C")
        async with connect(net.url("C")) as consumer:
            subscription = await consumer.subscribe("/queue/mesh")
            await net.wait_for_demand("A", "queue://mesh")
            await net.produce("A", "/queue/mesh", 20)
            bodies = [(await subscription.get(timeout=WAIT_S)).text for _ in range(20)]
            assert len(set(bodies)) == 20

        await net.stop("B")  # a clean stop: B deregisters, and A and C hear it
        await wait_until(lambda: complete("AC"), WAIT_S, "A and C to drop B")
        await net.start("B")
        await wait_until(lambda: complete("ABC"), WAIT_S, "B to rejoin the graph")
    assert registry.rows("mesh") == []  # every broker deregistered as it stopped


async def test_a_broker_whose_registry_is_unreachable_does_not_start(
    tmp_path: Path, postgres_database: PostgresDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = registry_schema(postgres_database, monkeypatch)
    port = free_port()  # no registry there
    agent_uri = registry.agent_uri("g", port=port).replace("&", "&amp;")
    xml = f"""<beans><broker xmlns="http://activemq.apache.org/schema/core" brokerName="b">
  <transportConnectors>
    <transportConnector name="stomp" uri="stomp://127.0.0.1:0" discoveryUri="{agent_uri}"/>
  </transportConnectors>
</broker></beans>"""
    with pytest.raises(BrokerStartError) as caught:
        async with running_broker(broker_config(tmp_path, xml=xml)):
            pass
    message = str(caught.value)
    assert "test-config.xml:3: discoveryUri: fabric://g: cannot use the registry" in message
    assert f"postgresql://postgres@127.0.0.1:{port}/" in message
    assert postgres_database.server.password not in message
