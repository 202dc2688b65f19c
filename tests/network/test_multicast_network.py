"""Networks that find themselves: ``<networkConnector uri="multicast://...">`` on every broker of
a group forms the complete graph of seed 001 chapter 6 (diameter 1, networkTTL 1), bridges to a
broker that joins, drops a broker that leaves, and with ``updateClusterClients`` tells failover
clients about all of it (seed 000 Example 2.2); ``zeroconf://`` connectors form the same graph.
All on loopback: a fresh group (and UDP port) per test, the agents pinned to ``lo``."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ferrymq.client import connect
from ferrymq.testing import BrokerProcess, free_port, wait_until
from ferrymq.testing.network import BrokerNetwork
from tests.network.conftest import WAIT_S

_groups = itertools.count()


def fresh_agent_uri(scheme: str = "multicast") -> str:
    """An agent URI (XML-escaped) no other test (or test run) shares, pinned to loopback."""
    group = f"ferrymq-test-{os.getpid()}-{next(_groups)}"
    if scheme == "zeroconf":
        return f"zeroconf://{group}?networkInterface=lo&amp;ttl=2&amp;initialReconnectDelay=200"
    return (
        f"multicast://239.255.42.42:{free_port(udp=True)}?group={group}"
        "&amp;networkInterface=lo&amp;keepAliveInterval=100&amp;initialReconnectDelay=200"
    )


@pytest.fixture
def agent_uri() -> str:
    return fresh_agent_uri()


def remote_brokers(net: BrokerNetwork, name: str) -> set[str]:
    return {
        str(bridge["remoteBrokerName"])
        for bridge in net.bridges(name)
        if bridge.get("state") == "started"
    }


def mesh_member(net: BrokerNetwork, name: str, agent_uri: str) -> None:
    net.add(
        name,
        f'<networkConnector name="mesh" uri="{agent_uri}"/>',
        listener=f'discoveryUri="{agent_uri}" updateClusterClients="true"',
    )


@pytest.mark.parametrize("scheme", ["multicast", "zeroconf"])
async def test_discovering_connectors_form_and_repair_a_complete_graph(
    tmp_path: Path, scheme: str
) -> None:
    agent_uri = fresh_agent_uri(scheme)
    net = BrokerNetwork(tmp_path)
    for name in ("A", "B", "C"):
        mesh_member(net, name, agent_uri)
    async with net:

        def complete(names: str) -> bool:
            return all(remote_brokers(net, n) == set(names) - {n} for n in names)

        await wait_until(lambda: complete("ABC"), WAIT_S, "the complete graph A-B-C")
        # Diameter 1 (seed 001 chapter 6): one hop, whatever the pair, with networkTTL=1.
        async with connect(net.url("C")) as consumer:
            subscription = await consumer.subscribe("/queue/mesh")
            await net.wait_for_demand("A", "queue://mesh")
            await net.produce("A", "/queue/mesh", 20)
            bodies = [(await subscription.get(timeout=WAIT_S)).text for _ in range(20)]
            assert len(set(bodies)) == 20

        await net.stop("B")  # a clean stop: B's agent says it is dead (or goodbye)
        await wait_until(lambda: complete("AC"), WAIT_S, "A and C to drop B")
        await net.start("B")
        await wait_until(lambda: complete("ABC"), WAIT_S, "B to rejoin the graph")


_PROCESS_XML = """<beans><broker xmlns="http://activemq.apache.org/schema/core"
  brokerName="{name}" brokerId="{name}">
  <networkConnectors><networkConnector name="mesh" uri="{agent}"/></networkConnectors>
  <transportConnectors>
    <transportConnector name="stomp" uri="stomp://127.0.0.1:{port}" discoveryUri="{agent}"
      updateClusterClients="true" updateClusterClientsOnRemove="true"/>
  </transportConnectors>
</broker></beans>"""


@pytest.fixture
def processes(tmp_path: Path, agent_uri: str) -> Iterator[dict[str, BrokerProcess]]:
    started: dict[str, BrokerProcess] = {}
    try:
        for name in ("A", "B", "C"):
            port = free_port()
            xml = _PROCESS_XML.format(name=name, agent=agent_uri, port=port)
            started[name] = BrokerProcess(
                tmp_path / name, name=name, port=port, config_xml=xml, listen=False
            ).start()
        yield started
    finally:
        for process in started.values():
            process.kill()


async def test_example_2_2_a_killed_broker_expires_from_the_graph_and_from_client_lists(
    processes: dict[str, BrokerProcess],
) -> None:
    """Seed 000 Example 2.2 (multicast connectors, discoveryUri, updateClusterClients) with
    updateClusterClientsOnRemove: a SIGKILLed broker sends no ``dead`` datagram; it expires
    (10 keep-alives) from the others' agents, their bridges to it end, and the clients of the
    survivors hear that it left."""
    a, b, c = processes["A"], processes["B"], processes["C"]
    client = await connect(f"failover:({a.url})?initialReconnectDelay=100")
    try:

        def known() -> set[int]:
            urls = client.statistics().transport.updated_urls
            return {int(url.rsplit(":", 1)[1]) for url in urls}

        await wait_until(lambda: known() == {a.port, b.port, c.port}, WAIT_S, "A, B and C known")
        b.kill()
        await wait_until(lambda: known() == {a.port, c.port}, WAIT_S, "B to leave the list")
        await client.send("/queue/after", "still here", persistent=True)
    finally:
        await client.close()
