"""``fabric://GROUP`` agent URIs (seed 000 Example 2.11, seed 001 Example 8.2), read strictly:
the group, the registry from ``registry=`` or ``FERRYMQ_FABRIC_REGISTRY``, the lease and
hold-back options, and never a password in a message."""

from __future__ import annotations

import pytest
from psycopg.conninfo import conninfo_to_dict

from ferrymq.client import BrokerURLError, connect
from ferrymq.client.discovery import agent_for
from ferrymq.discovery.fabric import FabricDiscoveryAgent
from ferrymq.discovery.fabric_options import (
    PASSWORD_ENV,
    REGISTRY_ENV,
    FabricOptions,
    fabric_options,
)
from ferrymq.util.uri import parse_uri

REGISTRY = "postgresql://ferry@db.example:5433/registry"
ENV = {REGISTRY_ENV: REGISTRY}


def options(url: str, environ: dict[str, str] | None = None) -> FabricOptions:
    return fabric_options(parse_uri(url), url=url, environ=ENV if environ is None else environ)


def refused(url: str, environ: dict[str, str] | None = None) -> BrokerURLError:
    with pytest.raises(BrokerURLError) as caught:
        options(url, environ)
    return caught.value


def test_the_seeds_uri_names_the_group_and_the_environment_names_the_registry() -> None:
    read = options("fabric://nwBrokers")
    assert (read.group, read.registry, read.uri) == (
        "nwBrokers",
        "postgresql://ferry@db.example:5433/registry",
        "fabric://nwBrokers",
    )
    assert conninfo_to_dict(read.conninfo) == {
        "host": "db.example",
        "port": "5433",
        "user": "ferry",
        "dbname": "registry",
    }
    assert (read.keep_alive_interval_ms, read.lease_duration_ms, read.poll_interval_ms) == (
        1000,
        5000,
        1000,
    )
    assert (read.initial_reconnect_delay_ms, read.max_reconnect_delay_ms) == (5000, 30_000)
    assert (read.use_exponential_back_off, read.max_reconnect_attempts) == (False, 0)


def test_every_option_is_read_and_registry_wins_over_the_environment() -> None:
    read = options(
        "fabric://g?registry=postgresql://other@10.0.0.9/reg&keepAliveInterval=100"
        "&leaseDuration=700&pollInterval=50&initialReconnectDelay=10&maxReconnectDelay=40"
        "&useExponentialBackOff=true&backOffMultiplier=3&maxReconnectAttempts=4"
    )
    assert read == FabricOptions(
        group="g",
        registry="postgresql://other@10.0.0.9/reg",
        conninfo=read.conninfo,
        keep_alive_interval_ms=100,
        lease_duration_ms=700,
        poll_interval_ms=50,
        initial_reconnect_delay_ms=10,
        max_reconnect_delay_ms=40,
        use_exponential_back_off=True,
        back_off_multiplier=3.0,
        max_reconnect_attempts=4,
    )
    assert conninfo_to_dict(read.conninfo)["host"] == "10.0.0.9"
    assert read.expiry_ms == 700  # what the services table would expire by: the lease


def test_libpq_settings_work_too_and_the_password_variable_is_added() -> None:
    read = options(
        "fabric://g",
        {REGISTRY_ENV: "host=127.0.0.1 port=6000 dbname=r user=u", PASSWORD_ENV: "s3cret"},
    )
    assert conninfo_to_dict(read.conninfo)["password"] == "s3cret"
    assert read.registry == "postgresql://u@127.0.0.1:6000/r"
    assert "s3cret" not in repr(read)


def test_a_password_in_the_environments_url_is_used_but_never_shown() -> None:
    read = options("fabric://g", {REGISTRY_ENV: "postgresql://u:hunter2@h/db"})
    assert conninfo_to_dict(read.conninfo)["password"] == "hunter2"
    assert "hunter2" not in read.registry
    assert "hunter2" not in repr(read)


@pytest.mark.parametrize(
    "registry",
    [
        "postgresql://u:hunter2@h/db",
        "postgresql://u@h/db%3Fpassword%3Dhunter2",
        "host%3Dh+password%3Dhunter2",
    ],
)
async def test_a_password_in_the_uri_is_refused_without_showing_it(registry: str) -> None:
    error = refused(f"fabric://g?registry={registry}&leaseDuration=9000")
    assert "hunter2" not in str(error)
    assert error.part == "registry"
    assert PASSWORD_ENV in str(error)
    with pytest.raises(BrokerURLError) as caught:
        await connect(f"discovery:(fabric://g?registry={registry})?initialReconnectDelay=5")
    assert "hunter2" not in str(caught.value)
    assert "registry=<hidden>" in str(caught.value)


def test_without_a_registry_the_message_says_where_to_give_one() -> None:
    error = refused("fabric://g", {})
    assert "registry=postgresql://" in str(error)
    assert REGISTRY_ENV in str(error)
    assert "empty" in str(refused("fabric://g?registry=", {}))


@pytest.mark.parametrize(
    ("url", "part", "words"),
    [
        ("fabric:g", "fabric", "fabric://GROUP"),
        ("fabric://g:2181", "g", "group name only"),
        ("fabric://g/path", "/path", "takes no path"),
        ("fabric://g?bogus=1", "bogus", "unknown fabric discovery agent option"),
        ("fabric://g?leaseDuraton=1", "leaseDuraton", "did you mean leaseDuration?"),
        ("fabric://g?keepAliveInterval=0", "keepAliveInterval", "at least 1"),
        ("fabric://g?pollInterval=x", "pollInterval", "whole number"),
        ("fabric://g?useExponentialBackOff=yes", "useExponentialBackOff", "true or false"),
        ("fabric://g?backOffMultiplier=0.5", "backOffMultiplier", "at least 1"),
        ("fabric://g?leaseDuration=1000", "leaseDuration", "longer than keepAliveInterval"),
        ("fabric://g?registry=zookeeper://zk:2181", "registry", "PostgreSQL"),
        ("fabric://g?registry=jdbc:postgresql://h/db", "registry", "postgresql://"),
        ("fabric://g?registry=nonsense", "registry", "not a valid libpq"),
        ("fabric://g?group=other", "group", "names another"),
    ],
)
def test_bad_uris_are_refused_naming_the_part(url: str, part: str, words: str) -> None:
    error = refused(url)
    assert error.part == part
    assert words in str(error)


async def test_a_discovery_url_and_agent_for_reach_the_agent_through_its_entry_point(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(REGISTRY_ENV, REGISTRY)
    url = "fabric://nwBrokers?leaseDuration=3000"
    agent = agent_for(parse_uri(url), url=url)
    assert isinstance(agent, FabricDiscoveryAgent)
    assert (agent.name, agent.options.lease_duration_ms) == ("fabric://nwBrokers", 3000)
    with pytest.raises(BrokerURLError, match="option pollInteval"):
        await connect("discovery:(fabric://nwBrokers?pollInteval=5)")
    # Seed 002 Table 1.2's group= on the discovery: URL reaches the agent: the same group, or
    # an error.
    assert options("fabric://nwBrokers?group=nwBrokers").group == "nwBrokers"
    with pytest.raises(BrokerURLError, match="group=east names another"):
        await connect("discovery:(fabric://nwBrokers)?group=east")
