"""Seed 000 Table 2.1 and Table 2.3 options: defaults, Java names, strict refusal."""

from __future__ import annotations

from dataclasses import fields

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ferrymq.client import BrokerURLError, connect
from ferrymq.client.commands import ConnectionInfo
from ferrymq.client.discovery import discovery_transport
from ferrymq.client.failover import (
    FailoverOptions,
    discovery_options,
    failover_options,
)
from ferrymq.client.failover.options import OPTION_NAMES, inject, static_agent_options
from ferrymq.client.failover.urls import failover_transport, masterslave_transport
from ferrymq.discovery.multicast import MulticastDiscoveryAgent
from ferrymq.util.uri import URI, parse_uri

URL = "failover:(tcp://a:1,tcp://b:2)"

TABLE_2_1_DEFAULTS = {
    "initialReconnectDelay": ("initial_reconnect_delay_ms", 10),
    "maxReconnectDelay": ("max_reconnect_delay_ms", 30000),
    "useExponentialBackOff": ("use_exponential_back_off", True),
    "backOffMultiplier": ("back_off_multiplier", 2.0),
    "maxReconnectAttempts": ("max_reconnect_attempts", -1),
    "startupMaxReconnectAttempts": ("startup_max_reconnect_attempts", -1),
    "randomize": ("randomize", True),
    "backup": ("backup", False),
    "timeout": ("timeout_ms", -1),
    "trackMessages": ("track_messages", False),
    "maxCacheSize": ("max_cache_size_bytes", 131072),
    "updateURIsSupported": ("update_uris_supported", True),
    "updateURIsURL": ("update_uris_url", None),
    "warnAfterReconnectAttempts": ("warn_after_reconnect_attempts", 10),
    "priorityBackup": ("priority_backup", False),
    "priorityURIs": ("priority_uris", ()),
}


def test_every_table_2_1_option_has_its_documented_default() -> None:
    options = failover_options({}, url=URL)
    for name, (attribute, default) in TABLE_2_1_DEFAULTS.items():
        assert name in OPTION_NAMES
        assert getattr(options, attribute) == default, name
    assert options.backup_pool_size == 1
    assert dict(options.nested) == {}


@pytest.mark.parametrize(
    ("name", "value", "attribute", "expected"),
    [
        ("initialReconnectDelay", "100", "initial_reconnect_delay_ms", 100),
        ("maxReconnectDelay", "5000", "max_reconnect_delay_ms", 5000),
        ("useExponentialBackOff", "FALSE", "use_exponential_back_off", False),
        ("backOffMultiplier", "1.5", "back_off_multiplier", 1.5),
        ("reconnectDelayExponent", "3", "back_off_multiplier", 3.0),
        ("reconnectDelay", "250", "reconnect_delay_ms", 250),
        ("reconnectDelayJitter", "40", "reconnect_delay_jitter_ms", 40),
        ("maxReconnectAttempts", "0", "max_reconnect_attempts", 0),
        ("startupMaxReconnectAttempts", "3", "startup_max_reconnect_attempts", 3),
        ("randomize", "false", "randomize", False),
        ("backup", "true", "backup", True),
        ("backupPoolSize", "2", "backup_pool_size", 2),
        ("timeout", "1000", "timeout_ms", 1000),
        ("trackMessages", "true", "track_messages", True),
        ("maxCacheSize", "1024", "max_cache_size_bytes", 1024),
        ("updateURIsSupported", "false", "update_uris_supported", False),
        ("updateURIsURL", "file:///tmp/x", "update_uris_url", "file:///tmp/x"),
        ("rebalanceUpdateURIs", "false", "rebalance_update_uris", False),
        ("reconnectSupported", "false", "reconnect_supported", False),
        ("warnAfterReconnectAttempts", "0", "warn_after_reconnect_attempts", 0),
        ("priorityBackup", "true", "priority_backup", True),
    ],
)
def test_each_option_is_read(name: str, value: str, attribute: str, expected: object) -> None:
    assert getattr(failover_options({name: value}, url=URL), attribute) == expected


def test_priority_uris_are_a_list_of_broker_uris() -> None:
    url = f"{URL}?priorityURIs=tcp://local1:61616,tcp://local2:61616&priorityBackup=true"
    transport = failover_transport(parse_uri(url), ConnectionInfo())
    assert [str(u) for u in transport.options.priority_uris] == [
        "tcp://local1:61616",
        "tcp://local2:61616",
    ]


def test_track_transaction_producers_true_is_accepted_false_refused() -> None:
    failover_options({"trackTransactionProducers": "true"}, url=URL)
    with pytest.raises(BrokerURLError, match="always replays") as caught:
        failover_options({"trackTransactionProducers": "false"}, url=URL)
    assert caught.value.part == "trackTransactionProducers"


@pytest.mark.parametrize(
    ("query", "part", "words"),
    [
        ("bogus=1", "bogus", "unknown failover: option"),
        ("initialReconectDelay=5", "initialReconectDelay", "did you mean initialReconnectDelay"),
        ("maxPullCacheSize=10", "maxPullCacheSize", "unknown failover: option"),
        ("jms.prefetchPolicy.all=5", "jms.prefetchPolicy.all", "ConnectionFactory"),
        ("randomize=yes", "randomize", "true or false"),
        ("timeout=-5", "timeout", "at least -1"),
        ("initialReconnectDelay=-1", "initialReconnectDelay", "at least 0"),
        ("maxReconnectAttempts=many", "maxReconnectAttempts", "whole number"),
        ("backOffMultiplier=0.5", "backOffMultiplier", "at least 1"),
        ("backOffMultiplier=nan", "backOffMultiplier", "at least 1"),
        ("backOffMultiplier=2&reconnectDelayExponent=3", "reconnectDelayExponent", "not both"),
        ("priorityURIs=tcp://a:1,(x", "(x", "priorityURIs"),
        ("nested.=1", "nested.", "must follow"),
        ("nested.bogus=1", "bogus", "unknown option"),
        ("nested.connectionTimeout=soon", "connectionTimeout", "milliseconds"),
    ],
)
def test_bad_options_name_the_option_and_the_url(query: str, part: str, words: str) -> None:
    url = f"{URL}?{query}"
    with pytest.raises(BrokerURLError) as caught:
        connect(url)
    assert caught.value.part == part
    assert words in str(caught.value)
    assert url in str(caught.value)


@pytest.mark.parametrize(
    ("url", "part", "words"),
    [
        ("failover:()", "failover", "lists no brokers"),
        ("failover:(udp://a:1)", "udp", "not supported here"),
        ("failover:(failover:(tcp://a:1))", "failover:(tcp://a:1)", "not a nested"),
        ("failover:(tcp://a:1?bogus=2)", "bogus", "unknown option"),
        ("masterslave:(tcp://a:1,tcp://b:2)?randomize=true", "randomize", "no options"),
        ("discovery:(static:(tcp://a:1))?bogus=1", "bogus", "unknown option"),
        ("discovery:(static:(tcp://a:1)?minConnectTime=x)", "minConnectTime", "whole number"),
        ("discovery:(static:(tcp://a:1)?color=red)", "color", "static discovery agent"),
        ("discovery:(http://127.0.0.1:8080/discovery)", "http", "not supported yet"),
        ("discovery:(gossip://x)", "gossip", "unknown discovery agent"),
        ("discovery:(static:(tcp://a:1),static:(tcp://b:1))", "discovery", "one agent"),
        ("discovery:(static:(tcp://a:1))?group=g", "group", "has no group"),
    ],
)
def test_bad_composite_urls(url: str, part: str, words: str) -> None:
    with pytest.raises(BrokerURLError) as caught:
        connect(url)
    assert caught.value.part == part
    assert words in str(caught.value)


def test_good_urls_of_every_form_are_accepted() -> None:
    for url in (
        "failover:(tcp://a:1,tcp://b:2)?initialReconnectDelay=100",
        "failover:tcp://a:1,tcp://b:2",
        "failover://(tcp://a:1)",
        "failover:()?updateURIsURL=file:///tmp/brokers.txt",
        "failover:(tcp://h1:61616,tcp://h2:61616,tcp://h3:61616)?"
        "nested.wireFormat.maxInactivityDuration=1000",  # seed 000 Example 2.4
        "failover:(tcp://local:61616,tcp://remote:61616)?randomize=false&priorityBackup=true",
        "discovery:(static://(tcp://a:1,tcp://b:2))?initialReconnectDelay=100",
        "discovery:static:(tcp://a:1)",
        "discovery:(static:(tcp://a:1))?connectionTimeout=10000",  # seed 000 Example 2.9
        "discovery:(simple:(tcp://a:1))?discovered.keepAlive=true",
        "masterslave:(tcp://a:1,tcp://b:2)",
    ):
        connect(url)  # builds and checks the transport; connects only when awaited


def test_nested_options_override_the_members_own() -> None:
    member = parse_uri("tcp://a:1?connectionTimeout=5&keepAlive=true")
    assert isinstance(member, URI)
    injected = inject(member, {"connectionTimeout": "1000"})
    assert dict(injected.query) == {"connectionTimeout": "1000", "keepAlive": "true"}
    assert str(injected) == "tcp://a:1?connectionTimeout=1000&keepAlive=true"
    options = failover_options({"nested.connectionTimeout": "1000"}, url=URL)
    assert dict(options.nested) == {"connectionTimeout": "1000"}


def test_discovery_options_follow_table_2_3_and_inject_the_rest() -> None:
    url = "discovery:(static:(tcp://a:1))"
    options = discovery_options({}, url=url)
    assert options.failover.initial_reconnect_delay_ms == 10
    assert options.failover.max_reconnect_delay_ms == 30000
    assert options.failover.use_exponential_back_off is True
    assert options.failover.back_off_multiplier == 2.0
    assert options.failover.max_reconnect_attempts == -1  # Table 2.3: 0 = unlimited
    zero = discovery_options({"maxReconnectAttempts": "0"}, url=url)
    assert zero.failover.max_reconnect_attempts == -1
    three = discovery_options({"maxReconnectAttempts": "3"}, url=url)
    assert three.failover.max_reconnect_attempts == 3
    mixed = discovery_options(
        {"initialReconnectDelay": "100", "connectionTimeout": "10000", "discovered.keepAlive": "1"},
        url=url,
    )
    assert mixed.failover.initial_reconnect_delay_ms == 100
    assert dict(mixed.discovered) == {"connectionTimeout": "10000", "keepAlive": "1"}


def test_discovery_group_option_goes_to_the_agent() -> None:
    """Seed 002 Table 1.2 lists ``group`` among the discovery options; ActiveMQ reads it only
    in the agent URI, so FerryMQ moves it there, where the agent's own ``group=`` wins."""
    moved = discovery_transport(
        parse_uri(
            "discovery:(multicast://default?networkInterface=lo)?group=east&reconnectDelay=20"
        ),
        ConnectionInfo(),
    )
    assert isinstance(moved.agent, MulticastDiscoveryAgent)
    assert moved.agent.options.group == "east"
    assert moved.failover.options.reconnect_delay_ms == 20
    assert "group" not in moved.discovered_options
    own = discovery_transport(
        parse_uri("discovery:(multicast://default?group=west)?group=east"), ConnectionInfo()
    )
    assert isinstance(own.agent, MulticastDiscoveryAgent)
    assert own.agent.options.group == "west"


def test_static_agent_options_follow_the_reference() -> None:
    defaults = static_agent_options({}, url="static:(tcp://a:1)")
    assert (defaults.initial_reconnect_delay_ms, defaults.max_reconnect_delay_ms) == (1000, 30000)
    assert (defaults.max_reconnect_attempts, defaults.min_connect_time_ms) == (0, 5000)


def test_masterslave_is_an_ordered_failover_without_reconnect() -> None:
    transport = failover_transport(parse_uri("failover:(tcp://a:1,tcp://b:2)"), ConnectionInfo())
    assert transport.options.randomize is True
    ordered = masterslave_transport(
        parse_uri("masterslave:(tcp://a:1,tcp://b:2)"), ConnectionInfo()
    )
    assert ordered.options.randomize is False
    assert ordered.options.max_reconnect_attempts == 0
    assert [str(uri) for uri in ordered.brokers.static] == ["tcp://a:1", "tcp://b:2"]


@given(
    st.dictionaries(
        st.sampled_from(sorted(OPTION_NAMES - {"priorityURIs", "updateURIsURL"})),
        st.text(alphabet="0123456789-.aeflrstux", max_size=6),
        max_size=4,
    )
)
def test_any_query_is_either_read_or_refused_by_name(query: dict[str, str]) -> None:
    refused: BrokerURLError | None = None
    try:
        options = failover_options(query, url=URL)
    except BrokerURLError as exc:
        refused = exc
    if refused is not None:
        assert refused.part in query
        assert URL in str(refused)
    else:
        assert isinstance(options, FailoverOptions)
        assert {f.name for f in fields(options)} >= {"timeout_ms", "randomize"}
