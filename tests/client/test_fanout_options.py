"""seed 001 Table 8.2: the fanout options, their defaults, the URL forms, and strict refusal."""

from __future__ import annotations

import pytest

from ferrymq.client import BrokerURLError, StaticDiscoveryAgent, connect
from ferrymq.client.commands import ConnectionInfo
from ferrymq.client.fanout import FanoutOptions, FanoutTransport, fanout_options, fanout_transport
from ferrymq.client.fanout.options import OPTION_NAMES
from ferrymq.client.registry import transport_for
from ferrymq.util.uri import parse_uri

URL = "fanout:(static:(tcp://a:1,tcp://b:2))"

TABLE_8_2_DEFAULTS = {
    "initialReconnectDelay": ("initial_reconnect_delay_ms", 10),
    "maxReconnectDelay": ("max_reconnect_delay_ms", 30000),
    "useExponentialBackOff": ("use_exponential_back_off", True),
    "backOffMultiplier": ("back_off_multiplier", 2.0),
    "maxReconnectAttempts": ("max_reconnect_attempts", -1),
    "fanOutQueues": ("fan_out_queues", False),
    "minAckCount": ("min_ack_count", 2),
}


def test_every_table_8_2_option_has_its_documented_default() -> None:
    parsed = fanout_options({}, url=URL)
    assert parsed == FanoutOptions()
    for name, (attribute, default) in TABLE_8_2_DEFAULTS.items():
        assert name in OPTION_NAMES
        assert getattr(parsed, attribute) == default, name
    assert dict(parsed.discovered) == {}


@pytest.mark.parametrize(
    ("name", "value", "attribute", "expected"),
    [
        ("initialReconnectDelay", "100", "initial_reconnect_delay_ms", 100),
        ("maxReconnectDelay", "5000", "max_reconnect_delay_ms", 5000),
        ("useExponentialBackOff", "false", "use_exponential_back_off", False),
        ("backOffMultiplier", "3", "back_off_multiplier", 3.0),
        ("reconnectDelayExponent", "1.5", "back_off_multiplier", 1.5),
        # Table 8.2's -1 and ActiveMQ's (and seed 000's) 0 both mean unlimited.
        ("maxReconnectAttempts", "-1", "max_reconnect_attempts", -1),
        ("maxReconnectAttempts", "0", "max_reconnect_attempts", -1),
        ("maxReconnectAttempts", "3", "max_reconnect_attempts", 3),
        ("fanOutQueues", "TRUE", "fan_out_queues", True),
        ("minAckCount", "1", "min_ack_count", 1),
    ],
)
def test_each_option_is_read(name: str, value: str, attribute: str, expected: object) -> None:
    assert getattr(fanout_options({name: value}, url=URL), attribute) == expected


def test_the_reconnect_policy_is_per_member_with_table_8_2s_back_off() -> None:
    policy = fanout_options({"maxReconnectDelay": "50", "maxReconnectAttempts": "2"}, url=URL)
    decide = policy.reconnect_policy()
    # The first connect is at once, a reconnect waits initialReconnectDelay, then doubles.
    assert decide.delay_before_pass_ms(1, startup=True) == 0
    assert [decide.delay_before_pass_ms(n, startup=False) for n in (1, 2, 3, 4, 5)] == [
        10,
        10,
        20,
        40,
        50,
    ]
    assert not decide.gives_up(1, startup=True)
    assert decide.gives_up(2, startup=True)
    assert decide.gives_up(2, startup=False)
    assert not FanoutOptions().reconnect_policy().gives_up(10**6, startup=False)


def test_other_options_are_injected_into_every_discovered_uri() -> None:
    url = URL + "?connectionTimeout=500&discovered.keepAlive=true&nested.tcpNoDelay=false"
    parsed = fanout_options(parse_uri(url).options, url=url)
    assert dict(parsed.discovered) == {
        "connectionTimeout": "500",
        "keepAlive": "true",
        "tcpNoDelay": "false",
    }


@pytest.mark.parametrize(
    "url",
    [
        "fanout:(static:(tcp://a:1,tcp://b:2))?fanOutQueues=true",
        "fanout://(static://(tcp://a:1,tcp://b:2))?fanOutQueues=true",  # seed 001 Example 8.15
        "fanout:static:(tcp://a:1,tcp://b:2)",  # the NOTE's form without options
        "fanout://static:(tcp://a:1,tcp://b:2)",
        "FANOUT:(simple:(tcp://a:1,stomp://b:2))",
    ],
)
def test_the_url_forms_build_a_fanout_transport_over_the_agent(url: str) -> None:
    transport = transport_for(url, ConnectionInfo())
    assert isinstance(transport, FanoutTransport)
    assert isinstance(transport.agent, StaticDiscoveryAgent)
    assert transport.options.fan_out_queues == ("fanOutQueues" in url)


@pytest.mark.parametrize(
    ("url", "part", "words"),
    [
        (URL + "?minAckCount=0", "minAckCount", "at least 1"),
        (URL + "?minAckCount=two", "minAckCount", "whole number"),
        (URL + "?fanOutQueues=maybe", "fanOutQueues", "true or false"),
        (URL + "?initialReconnectDelay=-5", "initialReconnectDelay", "at least 0"),
        (URL + "?maxReconnectAttempts=-2", "maxReconnectAttempts", "at least -1"),
        (URL + "?backOffMultiplier=0.5", "backOffMultiplier", "at least 1"),
        (URL + "?useExponentialBackOff=yes", "useExponentialBackOff", "true or false"),
        (
            URL + "?backOffMultiplier=2&reconnectDelayExponent=2",
            "reconnectDelayExponent",
            "not both",
        ),
        (URL + "?minAckCont=2", "minAckCont", "did you mean minAckCount?"),
        (URL + "?randomize=false", "randomize", "not a fanout: option"),
        (URL + "?discovered.keepAlive=often", "discovered.keepAlive", "true or false"),
        (URL + "?connectionTimeout=soon", "connectionTimeout", "milliseconds"),
        (URL + "?discovered.=1", "discovered.", "must follow"),
        ("fanout:(static:(tcp://a:1))", "minAckCount", "static: lists 1"),
        ("fanout:(static:(tcp://a:1,tcp://A:1))", "minAckCount", "static: lists 1"),
        ("fanout:(static:(tcp://a:1,tcp://b:2))?minAckCount=3", "minAckCount", "lists 2"),
        ("fanout:(static:(tcp://a:1,tcp://b:2?bogus=1))", "bogus", "unknown option"),
        ("fanout:(static:(tcp://a:1,udp://b:2))", "udp", "not supported here"),
        ("fanout:(tcp://a:1,tcp://b:2)", "fanout", "names one discovery agent"),
        ("fanout:()", "fanout", "names one discovery agent"),
        ("fanout://tcp://a:1", "tcp", "unknown discovery agent"),
        ("fanout:(nosuchagent://x)", "nosuchagent", "unknown discovery agent"),
    ],
)
def test_bad_fanout_urls_are_refused_naming_the_part(url: str, part: str, words: str) -> None:
    with pytest.raises(BrokerURLError) as caught:
        connect(url)
    assert caught.value.part == part
    assert words in str(caught.value)
    assert url in str(caught.value)


def test_the_factory_reads_the_options() -> None:
    url = URL + "?minAckCount=1&fanOutQueues=true&initialReconnectDelay=5&connectionTimeout=100"
    transport = fanout_transport(parse_uri(url), ConnectionInfo())
    assert transport.options.min_ack_count == 1
    assert transport.options.fan_out_queues
    assert transport.options.initial_reconnect_delay_ms == 5
    assert dict(transport.options.discovered) == {"connectionTimeout": "100"}
