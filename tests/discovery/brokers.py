"""Issue 6's end-to-end scenario, for any agent that advertises brokers: three ``ferrymq broker``
processes advertise their STOMP listener with ``discoveryUri=AGENT``; a ``discovery:(AGENT)``
client finds them, fails over among them as they are SIGKILLed, and stops using one that stopped
advertising (SIGSTOPped: its port still accepts connections, so trying it would hang). Every
persistent message the brokers receipted is found again, exactly once, when the brokers are
drained at the end (the killed ones restarted on their data)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ferrymq.client import Connection, DiscoveryAgent, Subscription, connect
from ferrymq.client.discovery import DiscoveryTransport
from ferrymq.testing import BrokerProcess, free_port, wait_until
from ferrymq.testing.network import receive_all
from tests.discovery.agents import ListingAgent, Recorder, running_agent

QUEUE = "/queue/discovered"
WAIT_S = 15.0

BROKER_XML = """<beans><broker xmlns="http://activemq.apache.org/schema/core"
  brokerName="{name}" brokerId="{name}">
  <transportConnectors>
    <transportConnector name="stomp" uri="stomp://127.0.0.1:{port}" discoveryUri="{agent}"/>
  </transportConnectors>
</broker></beans>"""


@contextmanager
def advertising_brokers(
    tmp_path: Path, agent_uri: str, names: tuple[str, ...] = ("A", "B", "C")
) -> Iterator[dict[str, BrokerProcess]]:
    """Broker processes, each advertising its listener through ``agent_uri``; all killed (and
    resumed first, if paused) at the end."""
    started: dict[str, BrokerProcess] = {}
    try:
        for name in names:
            port = free_port()
            xml = BROKER_XML.format(name=name, port=port, agent=agent_uri.replace("&", "&amp;"))
            started[name] = BrokerProcess(
                tmp_path / name, name=name, port=port, config_xml=xml, listen=False
            ).start(wait=False)
        for process in started.values():
            assert process.wait_for_state("master"), "".join(process.output[-40:])
        yield started
    finally:
        for process in started.values():
            if process.process is not None and process.process.poll() is None:
                process.resume()
            process.kill()


def client_agent(client: Connection) -> DiscoveryAgent:
    """The agent behind a ``discovery:`` connection (the client has no accessor for it)."""
    transport = client._transport
    assert isinstance(transport, DiscoveryTransport)
    return transport.agent


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("?")[0])


async def send_batch(client: Connection, tag: str, count: int, receipted: list[str]) -> set[int]:
    """Persistent sends, each waiting for its receipt; the brokers that took them."""
    used: set[int] = set()
    for n in range(count):
        body = f"{tag}-{n}"
        await client.send(QUEUE, body, persistent=True)
        receipted.append(body)
        used.add(port_of(client.remote_url))
    return used


async def fail_over_among_advertised_brokers(
    brokers: dict[str, BrokerProcess], agent_uri: str, kind: type[ListingAgent]
) -> None:
    """The scenario of the module docstring, with ``kind`` agents on ``agent_uri``."""
    by_port = {process.port: process for process in brokers.values()}
    probe = Recorder()

    def advertised() -> set[int]:
        return {port_of(uri) for uri in probe.services}

    receipted: list[str] = []
    async with running_agent(kind, agent_uri, listener=probe):
        await probe.wait_for(lambda: advertised() == set(by_port), "A, B and C advertised")
        client = await connect(
            f"discovery:({agent_uri})?initialReconnectDelay=20&maxReconnectDelay=200",
            connect_timeout=3.0,
        )
        try:
            (first,) = await send_batch(client, "first", 20, receipted)
            silent, last = (port for port in by_port if port != first)

            by_port[silent].pause()  # stops advertising (and answering)
            agent = client_agent(client)
            assert isinstance(agent, kind)
            await wait_until(
                lambda: f"stomp://127.0.0.1:{silent}" not in agent.statistics().services,
                WAIT_S,
                "the client's agent to expire the paused broker",
            )
            expired_at = asyncio.get_running_loop().time()
            await probe.wait_for(lambda: silent not in advertised(), "the probe to expire it")
            by_port[first].kill()
            assert await send_batch(client, "second", 20, receipted) == {last}
            tried_silent = [
                attempt
                for attempt in client.statistics().transport.connect_attempts
                if port_of(attempt.url) == silent and attempt.started_at >= expired_at
            ]
            assert tried_silent == []

            by_port[silent].resume()  # advertises again: discovered again
            await probe.wait_for(lambda: silent in advertised(), "the resumed broker")
            by_port[last].kill()
            assert await send_batch(client, "third", 20, receipted) == {silent}
            await probe.wait_for(lambda: advertised() == {silent}, "the killed ones to expire")
            assert client.statistics().transport.failovers >= 2
        finally:
            await client.close()

    by_port[first].start()  # on the same data and port
    by_port[last].start()
    assert await drained(list(by_port), len(receipted)) == Counter(
        receipted
    )  # no loss, no duplicate


async def drained(ports: list[int], expected: int) -> Counter[str]:
    """Every message left on ``QUEUE`` of the brokers on ``ports``, counted by body."""
    consumers = [await connect(f"tcp://127.0.0.1:{port}") for port in ports]
    try:
        subscriptions: dict[str, Subscription] = {
            str(port): await consumer.subscribe(QUEUE, ack="client-individual")
            for port, consumer in zip(ports, consumers, strict=True)
        }
        received = await receive_all(subscriptions, expected)
    finally:
        for consumer in consumers:
            await consumer.close()
    return Counter(message.text for messages in received.values() for message in messages)
