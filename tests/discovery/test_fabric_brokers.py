"""Issue 6's fabric scenario, end to end (``tests.discovery.brokers``): three ``ferrymq broker``
processes advertise with ``discoveryUri="fabric://nwBrokers?..."``, registering in a PostgreSQL
registry that ``FERRYMQ_FABRIC_REGISTRY`` names (as Fuse Fabric's brokers found ZooKeeper through
``zookeeper.url``); a ``discovery:(fabric://nwBrokers?...)`` client (seed 000 Example 2.12) finds
them, fails over among them as they are SIGKILLed, and stops using one whose lease lapsed
(SIGSTOPped) until it renews it; no receipted persistent message is lost or duplicated.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ferrymq.discovery.fabric import FabricDiscoveryAgent
from ferrymq.discovery.fabric_options import REGISTRY_ENV
from ferrymq.testing import BrokerProcess
from tests.discovery.brokers import advertising_brokers, fail_over_among_advertised_brokers
from tests.discovery.fabric_registry import FAST, registry_schema
from tests.postgres import PostgresDatabase


@pytest.fixture
def agent_uri(postgres_database: PostgresDatabase, monkeypatch: pytest.MonkeyPatch) -> str:
    """``fabric://nwBrokers`` with the test timings (a 1 s lease); the registry, password
    included, in ``FERRYMQ_FABRIC_REGISTRY`` for this process and the brokers it starts."""
    registry = registry_schema(postgres_database, monkeypatch)
    monkeypatch.setenv(REGISTRY_ENV, registry.url(password=True))
    return "fabric://nwBrokers?" + "&".join(f"{k}={v}" for k, v in FAST.items())


@pytest.fixture
def brokers(tmp_path: Path, agent_uri: str) -> Iterator[dict[str, BrokerProcess]]:
    with advertising_brokers(tmp_path, agent_uri) as started:
        yield started


@pytest.mark.slow
async def test_a_discovery_client_fails_over_among_registered_brokers_and_drops_a_lapsed_one(
    brokers: dict[str, BrokerProcess], agent_uri: str
) -> None:
    await fail_over_among_advertised_brokers(brokers, agent_uri, FabricDiscoveryAgent)
