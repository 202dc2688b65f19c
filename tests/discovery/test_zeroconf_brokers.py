"""Zeroconf discovery with real brokers: issue 6's scenario over mDNS (``tests.discovery.brokers``:
three ``ferrymq broker`` processes advertise with ``discoveryUri="zeroconf://..."``, a
``discovery:(zeroconf://...)`` client fails over among them as they are SIGKILLed and stops
using one that fell silent, losing and duplicating nothing), the seeds' pairing of a broker's
``multicast://NEGroup`` with clients of ``zeroconf://NEGroup``, and which agents a broker runs
for each kind of ``discoveryUri``.

Loopback only: a fresh group per test, every agent pinned to ``lo``.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from ferrymq.broker import Broker
from ferrymq.client import DiscoveryAgent, connect
from ferrymq.discovery import DiscoveryAdvertiser, DiscoveryAdvertiserError
from ferrymq.discovery.advertiser import twin_for
from ferrymq.discovery.multicast import MulticastDiscoveryAgent
from ferrymq.discovery.multicast_options import multicast_options
from ferrymq.discovery.zeroconf import ZeroconfDiscoveryAgent
from ferrymq.discovery.zeroconf_options import twin_options
from ferrymq.testing import BrokerProcess, broker_config, free_port, running_broker
from ferrymq.util.uri import parse_uri
from tests.discovery.brokers import advertising_brokers, fail_over_among_advertised_brokers
from tests.discovery.test_zeroconf_agent import fresh_agent_uri, fresh_group

QUEUE = "/queue/zeroconf"

_SEED_EXAMPLE_2_19 = """<beans><broker xmlns="http://activemq.apache.org/schema/core"
  brokerName="{name}" brokerId="{name}">
<transportConnectors>
  <transportConnector name="openwire"
    uri="tcp://127.0.0.1:{port}"
    discoveryUri="multicast://{group}?networkInterface=lo" />
</transportConnectors>
</broker></beans>"""
"""Seed 000 Example 2.19 (seed 001 Example 8.10) on a free port, its group made unique and its
agent pinned to ``lo``."""


@pytest.fixture
def agent_uri() -> str:
    return fresh_agent_uri()


@pytest.fixture
def brokers(tmp_path: Path, agent_uri: str) -> Iterator[dict[str, BrokerProcess]]:
    with advertising_brokers(tmp_path, agent_uri) as started:
        yield started


@pytest.mark.slow
async def test_a_discovery_client_fails_over_among_zeroconf_brokers_and_drops_a_silent_one(
    brokers: dict[str, BrokerProcess], agent_uri: str
) -> None:
    await fail_over_among_advertised_brokers(brokers, agent_uri, ZeroconfDiscoveryAgent)


@pytest.mark.slow
async def test_seed_000_example_2_19_broker_is_found_by_example_2_20_zeroconf_client(
    tmp_path: Path,
) -> None:
    """Seed 000 §2.2.2.5 (seed 001 §8.1.5): a broker configured as in Example 2.19
    (``discoveryUri="multicast://NEGroup"``) is discoverable by a client of Example 2.20,
    ``discovery:(zeroconf://NEGroup)``; multicast clients of the group still find it too."""
    group = "NEGroup-" + fresh_group()
    port = free_port()
    xml = _SEED_EXAMPLE_2_19.format(name="NE", port=port, group=group)
    with BrokerProcess(tmp_path / "NE", name="NE", port=port, config_xml=xml, listen=False) as ne:
        assert ne.wait_for_state("master"), "".join(ne.output[-40:])
        for agent in (f"zeroconf://{group}", f"multicast://{group}"):
            url = f"discovery:({agent}?networkInterface=lo)?maxReconnectAttempts=0"
            client = await connect(url, connect_timeout=5.0)
            try:
                assert client.remote_url.startswith(f"tcp://127.0.0.1:{port}")
                subscription = await client.subscribe(QUEUE)
                await client.send(QUEUE, f"through {agent}", persistent=True)
                message = await subscription.get(timeout=10.0)
                assert message.text == f"through {agent}"
            finally:
                await client.close()


def _advertising_agents(broker: Broker) -> list[DiscoveryAgent]:
    (advertising,) = [a for a in broker.service.attachments if hasattr(a, "advertiser")]
    agents: list[DiscoveryAgent] = advertising.advertiser.agents
    return agents


@pytest.mark.parametrize(
    ("discovery_uri", "kinds"),
    [
        pytest.param(
            "multicast://{group}?networkInterface=lo",
            [MulticastDiscoveryAgent, ZeroconfDiscoveryAgent],
            id="multicast-and-its-mdns-twin",
        ),
        pytest.param(
            "multicast://{group}?networkInterface=lo&amp;zeroconf=false",
            [MulticastDiscoveryAgent],
            id="multicast-alone",
        ),
        pytest.param(
            "zeroconf://{group}?networkInterface=lo", [ZeroconfDiscoveryAgent], id="zeroconf"
        ),
    ],
)
async def test_a_broker_advertises_over_mdns_beside_multicast_and_alone(
    tmp_path: Path, discovery_uri: str, kinds: list[type[DiscoveryAgent]]
) -> None:
    xml = f"""<beans><broker xmlns="http://activemq.apache.org/schema/core">
      <transportConnectors>
        <transportConnector name="stomp" uri="stomp://127.0.0.1:0"
          discoveryUri="{discovery_uri.format(group=fresh_group())}"/>
      </transportConnectors></broker></beans>"""
    async with running_broker(broker_config(tmp_path / "data", xml=xml)) as broker:
        assert [type(agent) for agent in _advertising_agents(broker)] == kinds


@pytest.mark.parametrize("zeroconf", ["", "&zeroconf=true"])
async def test_an_mdns_twin_that_cannot_start_costs_a_warning_unless_required(
    zeroconf: str, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"multicast://{fresh_group()}?networkInterface=lo{zeroconf}"
    multicast = MulticastDiscoveryAgent(multicast_options(parse_uri(url), url=url), name=url)
    twin = ZeroconfDiscoveryAgent(replace(twin_options(multicast.options), interface="nosuch0"))
    advertiser = DiscoveryAdvertiser(list)
    try:
        if zeroconf:
            with pytest.raises(DiscoveryAdvertiserError, match="no interface named 'nosuch0'"):
                await advertiser._start_twin("test.xml:3", twin, required=True)
        else:
            with caplog.at_level(logging.WARNING):
                assert not await advertiser._start_twin("test.xml:3", twin, required=False)
            assert "advertising by multicast only" in caplog.text
        assert advertiser.agents == []
    finally:
        await twin.stop()


def test_without_python_zeroconf_a_multicast_broker_advertises_by_multicast_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """python-zeroconf is the ``zeroconf`` extra: a broker installed without it keeps its
    multicast advertising (the twin is skipped), unless the URI asks for ``zeroconf=true``."""
    monkeypatch.setitem(sys.modules, "ferrymq.discovery.zeroconf", None)  # import fails
    url = f"multicast://{fresh_group()}?networkInterface=lo"
    agent = MulticastDiscoveryAgent(multicast_options(parse_uri(url), url=url), name=url)
    assert twin_for(agent, "stomp://127.0.0.1:9101") is None
    url += "&zeroconf=true"
    agent = MulticastDiscoveryAgent(multicast_options(parse_uri(url), url=url), name=url)
    with pytest.raises(ValueError, match="zeroconf=true needs python-zeroconf"):
        twin_for(agent, "stomp://127.0.0.1:9101")
