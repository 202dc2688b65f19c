"""``multicast://`` agent URIs read as ActiveMQ reads them (reference §3.4, seed 002 Table 1.3),
strictly: every bad option or value is refused naming itself, through ``discovery:`` URLs,
``agent_for`` and network connectors alike."""

from __future__ import annotations

import logging

import pytest

from ferrymq.client import BrokerURLError, connect
from ferrymq.client.discovery import agent_for
from ferrymq.discovery.multicast import MulticastDiscoveryAgent
from ferrymq.discovery.multicast_options import MulticastOptions, multicast_options
from ferrymq.util.uri import parse_uri


def options(url: str) -> MulticastOptions:
    return multicast_options(parse_uri(url), url=url)


def test_default_is_activemqs_group_address_port_and_settings() -> None:
    read = options("multicast://default")
    assert read == MulticastOptions()
    assert (read.address, read.port, read.group) == ("239.255.2.3", 6155, "default")
    assert (read.time_to_live, read.loop_back_mode, read.keep_alive_interval_ms) == (1, False, 500)
    assert read.expiry_ms == 5000
    assert (read.initial_reconnect_delay_ms, read.max_reconnect_delay_ms) == (5000, 30_000)
    assert (read.use_exponential_back_off, read.back_off_multiplier) == (False, 2.0)
    assert (read.max_reconnect_attempts, read.datagram_size) == (0, 8192)
    assert read.uri == "multicast://239.255.2.3:6155"


def test_every_option_is_read() -> None:
    read = options(
        "multicast://224.1.2.3:6255?group=mygroupname&timeToLive=-1&loopBackMode=true"
        "&datagramSize=4096&keepAliveInterval=100&networkInterface=lo"
        "&joinNetworkInterface=127.0.0.1&initialReconnectDelay=10&maxReconnectDelay=20"
        "&useExponentialBackOff=true&backOffMultiplier=3&maxReconnectAttempts=4"
    )
    assert read == MulticastOptions(
        address="224.1.2.3",
        port=6255,
        group="mygroupname",
        time_to_live=-1,
        loop_back_mode=True,
        datagram_size=4096,
        keep_alive_interval_ms=100,
        interface="lo",
        join_interface="127.0.0.1",
        initial_reconnect_delay_ms=10,
        max_reconnect_delay_ms=20,
        use_exponential_back_off=True,
        back_off_multiplier=3.0,
        max_reconnect_attempts=4,
    )
    assert read.join_on == "127.0.0.1"
    assert options("multicast://default?interface=127.0.0.1").join_on == "127.0.0.1"


def test_the_transport_options_of_seed_002_are_ignored_with_a_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        read = options(
            "multicast://default?minimumWireFormatVersion=0&trace=true&useLocalHost=true"
            "&wireFormat=default&wireFormat.maxInactivityDuration=0"
        )
    assert read == MulticastOptions()
    for name in ("minimumWireFormatVersion", "trace", "useLocalHost", "wireFormat.max"):
        assert name in caplog.text


@pytest.mark.parametrize(
    ("url", "part", "words"),
    [
        ("multicast://default?bogusOption=1", "bogusOption", "unknown multicast"),
        ("multicast://default?keepAliveIntervall=1", "keepAliveIntervall", "keepAliveInterval?"),
        ("multicast://default?group=", "group", "cannot be empty"),
        ("multicast://default?group=a%25b", "group", "cannot contain"),
        ("multicast://default?timeToLive=256", "timeToLive", "at most 255"),
        ("multicast://default?timeToLive=-2", "timeToLive", "at least -1"),
        ("multicast://default?loopBackMode=yes", "loopBackMode", "true or false"),
        ("multicast://default?datagramSize=0", "datagramSize", "at least 1"),
        ("multicast://default?datagramSize=70000", "datagramSize", "at most 65507"),
        ("multicast://default?keepAliveInterval=0", "keepAliveInterval", "at least 1"),
        ("multicast://default?backOffMultiplier=0.5", "backOffMultiplier", "at least 1"),
        ("multicast://default?networkInterface=", "networkInterface", "interface name"),
        (
            "multicast://default?interface=lo&networkInterface=eth0",
            "networkInterface",
            "either interface or networkInterface",
        ),
        ("multicast://10.0.0.1:6155", "10.0.0.1", "not a multicast address"),
        ("multicast://10.0.0.300", "10.0.0.300", "not an IPv4 address"),
        ("multicast://[ff02::1]:6155", "ff02::1", "IPv6 group addresses are not supported"),
        ("multicast://default?zeroconf=maybe", "zeroconf", "true or false"),
        ("multicast://default:0", "0", "port 0"),
        ("multicast://default/x", "/x", "no path"),
    ],
)
def test_bad_agent_uris_are_refused_naming_the_part(url: str, part: str, words: str) -> None:
    with pytest.raises(BrokerURLError) as caught:
        options(url)
    assert caught.value.part == part
    assert words in str(caught.value)
    assert url in str(caught.value)


def test_a_host_that_is_a_name_is_a_group_on_the_default_address() -> None:
    """Seed 000 Example 2.19 (seed 001 Example 8.10): ``multicast://NEGroup``."""
    read = options("multicast://NEGroup")
    assert (read.address, read.port, read.group) == ("239.255.2.3", 6155, "NEGroup")
    assert read == MulticastOptions(group="NEGroup")
    assert options("multicast://NEGroup:6255").port == 6255
    assert options("multicast://NEGroup?group=other").group == "other"  # group= wins
    assert options("multicast://brokers.example.com").group == "brokers.example.com"
    assert options("multicast://default").zeroconf is None  # a twin when it can
    assert options("multicast://default?zeroconf=false").zeroconf is False


def test_the_same_interface_under_both_names_is_accepted() -> None:
    assert options("multicast://default?interface=lo&networkInterface=lo").interface == "lo"


def test_the_entry_point_builds_the_agent_and_checks_it_at_once() -> None:
    url = "multicast://default?group=g&networkInterface=lo"
    agent = agent_for(parse_uri(url), url=url)
    assert isinstance(agent, MulticastDiscoveryAgent)
    assert agent.options.group == "g"
    assert agent.name == url
    bad = "discovery:(multicast://default?bogusOption=1)?initialReconnectDelay=10"
    with pytest.raises(BrokerURLError) as caught:
        connect(bad)
    assert caught.value.part == "bogusOption"
    assert bad in str(caught.value)
