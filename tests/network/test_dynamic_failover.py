"""Dynamic failover, broker side (seed 000 §2.1.2, Table 2.2, Examples 2.2 and 2.3): brokers in a
network tell their FerryMQ failover clients about each other, so a client given one URL learns
the rest, survives that broker's death, is kept to the brokers ``updateClusterFilter`` admits,
and is moved when ``rebalanceClusterClients`` sees a broker join."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from ferrymq.client import Connection, connect
from ferrymq.testing import BrokerProcess, free_port, wait_until
from ferrymq.testing.network import BrokerNetwork
from tests.network.conftest import quiet

CLUSTER = 'updateClusterClients="true"'
FAST_RETRY = "initialReconnectDelay=50&amp;maxReconnectDelay=200"


def known(connection: Connection) -> set[int]:
    """The ports of the brokers the client learned from its broker."""
    return {int(url.rsplit(":", 1)[1]) for url in connection.statistics().transport.updated_urls}


def port_of(connection: Connection) -> int:
    return int(connection.remote_url.rsplit(":", 1)[1])


_PROCESS_XML = """<beans><broker xmlns="http://activemq.apache.org/schema/core"
  brokerName="{name}" brokerId="{name}">
  <networkConnectors>
    <networkConnector name="mesh" uri="static:({peers})?{retry}"/>
  </networkConnectors>
  <transportConnectors>
    <transportConnector name="stomp" uri="stomp://127.0.0.1:{port}"
      updateClusterClients="true" updateClusterClientsOnRemove="true"/>
  </transportConnectors>
</broker></beans>"""


@pytest.fixture
def mesh(tmp_path: Path) -> Iterator[dict[str, BrokerProcess]]:
    """Brokers A, B and C in separate processes, each bridged to the other two (Example 2.2's
    network, with a static agent)."""
    ports = {name: free_port() for name in "ABC"}
    processes: dict[str, BrokerProcess] = {}
    try:
        for name, port in ports.items():
            peers = ",".join(f"tcp://127.0.0.1:{p}" for n, p in ports.items() if n != name)
            xml = _PROCESS_XML.format(name=name, peers=peers, port=port, retry=FAST_RETRY)
            processes[name] = BrokerProcess(
                tmp_path / name, name=name, port=port, config_xml=xml, listen=False
            )
        for process in processes.values():
            process.start()
        yield processes
    finally:
        for process in processes.values():
            process.kill()


async def test_example_2_3_a_client_given_one_broker_learns_the_others_and_survives_its_death(
    mesh: dict[str, BrokerProcess],
) -> None:
    a, b, c = mesh["A"], mesh["B"], mesh["C"]
    # Example 2.3: the client names one broker of the cluster.
    client = await connect(f"failover:({a.url})?initialReconnectDelay=100")
    consumer = await connect(b.url)
    try:
        await wait_until(
            lambda: known(client) == {a.port, b.port, c.port}, 30, "the client to learn B and C"
        )
        received: Counter[str] = Counter()
        subscription = await consumer.subscribe("/queue/dynamic", ack="client-individual")

        async def take(count: int) -> None:
            for _ in range(count):
                message = await subscription.get(timeout=30)
                received[message.text] += 1
                await message.ack()

        for i in range(50):
            await client.send("/queue/dynamic", f"before-{i}", persistent=True)
        await take(50)
        a.kill()  # SIGKILL: the broker the client was configured with is gone
        for i in range(50):
            await client.send("/queue/dynamic", f"after-{i}", persistent=True)
        assert port_of(client) in (b.port, c.port)
        await take(50)
        expected = {f"before-{i}" for i in range(50)} | {f"after-{i}" for i in range(50)}
        assert set(received) == expected
        assert set(received.values()) == {1}
    finally:
        await client.close()
        await consumer.close()


async def test_update_cluster_filter_keeps_non_matching_brokers_out(tmp_path: Path) -> None:
    net = BrokerNetwork(tmp_path)
    net.add(
        "Alpha",
        f'<networkConnector uri="static:({{Beta}},{{Gamma}})?{FAST_RETRY}"/>',
        listener=f'{CLUSTER} updateClusterFilter="A.*,B.*"',
    )
    net.add("Beta")
    net.add("Gamma")
    async with net:
        await net.wait_for_bridges()
        async with connect(f"failover:({net.url('Alpha')})") as client:
            assert known(client) == {net.ports["Alpha"], net.ports["Beta"]}


async def test_rebalance_moves_clients_when_a_broker_joins(tmp_path: Path) -> None:
    net = BrokerNetwork(tmp_path)
    net.add(
        "A",
        f'<networkConnector uri="static:({{B}})?{FAST_RETRY}"/>',
        listener=f'{CLUSTER} rebalanceClusterClients="true"',
    )
    net.add("B")
    await net.start("A")
    clients = [await connect(f"failover:({net.url('A')})?initialReconnectDelay=50")]
    try:
        for _ in range(5):
            clients.append(await connect(f"failover:({net.url('A')})?initialReconnectDelay=50"))
        assert {port_of(client) for client in clients} == {net.ports["A"]}
        await net.start("B")

        def spread() -> bool:
            ports = Counter(port_of(client) for client in clients)
            return ports[net.ports["A"]] >= 1 and ports[net.ports["B"]] >= 1

        await wait_until(spread, 30, "the clients to spread over A and B")
        for client in clients:
            assert known(client) == {net.ports["A"], net.ports["B"]}
        # Every moved client works on its new broker.
        for i, client in enumerate(clients):
            await client.send("/queue/rebalanced", f"m{i}", persistent=True)
        assert sum(net.queue_depth(name, "rebalanced") for name in "AB") == len(clients)
    finally:
        for client in clients:
            await client.close()
        await net.stop()


@pytest.mark.parametrize("on_remove", [True, False])
async def test_clients_hear_of_a_broker_leaving_only_with_update_on_remove(
    tmp_path: Path, on_remove: bool
) -> None:
    net = BrokerNetwork(tmp_path)
    flag = f'updateClusterClientsOnRemove="{str(on_remove).lower()}"'
    net.add(
        "A", f'<networkConnector uri="static:({{B}})?{FAST_RETRY}"/>', listener=f"{CLUSTER} {flag}"
    )
    net.add("B")
    async with net:
        await net.wait_for_bridges()
        async with connect(f"failover:({net.url('A')})") as client:
            assert known(client) == {net.ports["A"], net.ports["B"]}
            await net.stop("B")
            cluster = net["A"].service.cluster
            await wait_until(lambda: not cluster.peers, 15, "A to see B leave")
            if on_remove:
                await wait_until(
                    lambda: known(client) == {net.ports["A"]}, 15, "the client to drop B"
                )
            else:
                # Seed 000 Example 2.2's note: clients are not told when a broker leaves.
                await quiet(lambda: known(client) == {net.ports["A"], net.ports["B"]}, "B kept")


async def test_the_remote_side_of_a_duplex_bridge_tells_its_clients_too(tmp_path: Path) -> None:
    net = BrokerNetwork(tmp_path)
    net.add("A", f'<networkConnector uri="static:({{B}})?{FAST_RETRY}" duplex="true"/>')
    net.add("B", listener=CLUSTER)
    async with net:
        await net.wait_for_bridges()
        async with connect(f"failover:({net.url('B')})") as client:
            await wait_until(
                lambda: known(client) == {net.ports["A"], net.ports["B"]}, 15, "B to list A"
            )
