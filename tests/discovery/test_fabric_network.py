"""Brokers with fabric agents: ``<networkConnector uri="fabric://GROUP?...">`` bridges the
brokers registered in its group and no other, drops a broker that deregisters and bridges to it
again when it returns; a listener whose ``discoveryUri`` cannot reach its registry keeps the
broker from starting, with a message naming the registry but not its password."""

from __future__ import annotations

from pathlib import Path

import pytest

from ferrymq.client import connect
from ferrymq.service.broker import BrokerStartError
from ferrymq.testing import broker_config, free_port, running_broker, wait_until
from ferrymq.testing.network import BrokerNetwork
from tests.discovery.fabric_registry import registry_schema
from tests.network.conftest import WAIT_S
from tests.network.test_multicast_network import mesh_member, remote_brokers
from tests.postgres import PostgresDatabase


async def test_fabric_connectors_bridge_the_brokers_of_their_group_only(
    tmp_path: Path, postgres_database: PostgresDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = registry_schema(postgres_database, monkeypatch)
    net = BrokerNetwork(tmp_path)
    for name, group in (("A", "east"), ("B", "east"), ("C", "west")):
        agent_uri = registry.agent_uri(group, initialReconnectDelay="200")
        mesh_member(net, name, agent_uri.replace("&", "&amp;"))

    def bridged() -> dict[str, set[str]]:
        return {name: remote_brokers(net, name) for name in "ABC"}

    async with net:
        await wait_until(
            lambda: bridged() == {"A": {"B"}, "B": {"A"}, "C": set()}, WAIT_S, "A-B, not C"
        )
        async with connect(net.url("B")) as consumer:
            subscription = await consumer.subscribe("/queue/east")
            await net.wait_for_demand("A", "queue://east")
            (sent,) = await net.produce("A", "/queue/east", 1)
            assert (await subscription.get(timeout=WAIT_S)).text == sent

        await net.stop("B")  # deregisters: A hears it, and bridges to nobody
        assert registry.alive("east") == [f"stomp://127.0.0.1:{net.ports['A']}"]
        await wait_until(lambda: remote_brokers(net, "A") == set(), WAIT_S, "A to drop B")
        await net.start("B")
        await wait_until(lambda: bridged()["A"] == {"B"}, WAIT_S, "B to be bridged again")
    assert registry.rows("east") == registry.rows("west") == []  # all deregistered


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
