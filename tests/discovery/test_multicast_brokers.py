"""Issue 6's multicast scenario, end to end (``tests.discovery.brokers``): three ``ferrymq
broker`` processes advertise with ``discoveryUri="multicast://..."``; a
``discovery:(multicast://...)`` client finds them, fails over among them as they are SIGKILLed,
and stops using one that stopped advertising; no receipted persistent message is lost or
duplicated.

Loopback only: a fresh group and UDP port, every agent pinned to ``lo``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ferrymq.discovery.multicast import MulticastDiscoveryAgent
from ferrymq.testing import BrokerProcess
from tests.discovery.brokers import advertising_brokers, fail_over_among_advertised_brokers
from tests.discovery.test_multicast_agent import fresh_agent_uri


@pytest.fixture
def agent_uri() -> str:
    return fresh_agent_uri(keep_alive_ms=100)


@pytest.fixture
def brokers(tmp_path: Path, agent_uri: str) -> Iterator[dict[str, BrokerProcess]]:
    with advertising_brokers(tmp_path, agent_uri) as started:
        yield started


@pytest.mark.slow
async def test_a_discovery_client_fails_over_among_advertised_brokers_and_drops_a_silent_one(
    brokers: dict[str, BrokerProcess], agent_uri: str
) -> None:
    await fail_over_among_advertised_brokers(brokers, agent_uri, MulticastDiscoveryAgent)
