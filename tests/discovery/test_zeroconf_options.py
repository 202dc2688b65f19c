"""``zeroconf://GROUP`` and ``rendezvous://GROUP`` agent URIs (seed 000 Example 2.18, reference
§3.5), read strictly: every bad option or value is refused naming itself; the mDNS names a
group and a service get; the mDNS side of a multicast-advertised broker."""

from __future__ import annotations

import pytest

from ferrymq.client import BrokerURLError, connect
from ferrymq.client.discovery import agent_for
from ferrymq.discovery.multicast_options import multicast_options
from ferrymq.discovery.zeroconf import ZeroconfDiscoveryAgent
from ferrymq.discovery.zeroconf_options import (
    ZeroconfOptions,
    check_service,
    twin_options,
    zeroconf_options,
)
from ferrymq.util.uri import parse_uri


def options(url: str) -> ZeroconfOptions:
    return zeroconf_options(parse_uri(url), url=url)


def test_the_host_is_the_group_and_the_defaults_are_activemqs() -> None:
    read = options("zeroconf://NEGroup")  # seed 000 Example 2.20
    assert read == ZeroconfOptions(group="NEGroup")
    assert (read.weight, read.priority, read.interface, read.ttl_s) == (0, 0, None, 120)
    assert (read.initial_reconnect_delay_ms, read.max_reconnect_delay_ms) == (5000, 30_000)
    assert (read.use_exponential_back_off, read.max_reconnect_attempts) == (False, 0)
    assert read.group_type == "_negroup._sub._activemq._tcp.local."  # DNS ignores case
    assert read.expiry_ms == 120_000
    assert options("rendezvous://NEGroup") == read  # ActiveMQ 4's name for the agent


def test_every_option_is_read() -> None:
    read = options(
        "zeroconf://g?group=other&weight=5&priority=7&networkInterface=lo&ttl=2"
        "&initialReconnectDelay=10&maxReconnectDelay=20&useExponentialBackOff=true"
        "&backOffMultiplier=3&maxReconnectAttempts=4"
    )
    assert read == ZeroconfOptions(
        group="other",  # group= wins over the host, as for multicast
        weight=5,
        priority=7,
        interface="lo",
        ttl_s=2,
        initial_reconnect_delay_ms=10,
        max_reconnect_delay_ms=20,
        use_exponential_back_off=True,
        back_off_multiplier=3.0,
        max_reconnect_attempts=4,
    )
    for name in ("interface", "networkInterface", "localhost"):
        assert options(f"zeroconf://g?{name}=127.0.0.1").interface == "127.0.0.1"
    assert options("zeroconf://g?interface=lo&localhost=lo").interface == "lo"


@pytest.mark.parametrize(
    ("url", "part", "words"),
    [
        ("zeroconf://g?bogusOption=1", "bogusOption", "unknown zeroconf agent option"),
        ("zeroconf://g?wieght=1", "wieght", "did you mean weight?"),
        ("zeroconf://g?type=ActiveMQ-5.", "type", "unknown zeroconf agent option"),
        ("zeroconf://g?weight=65536", "weight", "at most 65535"),
        ("zeroconf://g?priority=-1", "priority", "at least 0"),
        ("zeroconf://g?ttl=1", "ttl", "at least 2"),
        ("zeroconf://g?ttl=soon", "ttl", "whole number"),
        ("zeroconf://g?group=", "group", "cannot be empty"),
        ("zeroconf://g?group=a.b", "group", "cannot contain '.'"),
        ("zeroconf://g?group=" + "x" * 63, "group", "at most 62 bytes"),
        ("zeroconf://g?networkInterface=", "networkInterface", "interface name"),
        ("zeroconf://g?interface=lo&localhost=eth0", "localhost", "either interface or localhost"),
        ("zeroconf://g?backOffMultiplier=0.5", "backOffMultiplier", "at least 1"),
        ("zeroconf://g:5353", "5353", "not an address"),
        ("zeroconf://g/x", "/x", "no path"),
        ("zeroconf://", "zeroconf", "names a group"),
        ("rendezvous://", "rendezvous", "rendezvous://GROUP"),
    ],
)
def test_bad_agent_uris_are_refused_naming_the_part(url: str, part: str, words: str) -> None:
    with pytest.raises(BrokerURLError) as caught:
        options(url)
    assert caught.value.part == part
    assert words in str(caught.value)
    assert url in str(caught.value)


def test_the_entry_points_build_the_agent_and_check_it_at_once() -> None:
    for scheme in ("zeroconf", "rendezvous"):
        url = f"{scheme}://g?networkInterface=lo&ttl=2"
        agent = agent_for(parse_uri(url), url=url)
        assert isinstance(agent, ZeroconfDiscoveryAgent)
        assert (agent.options.group, agent.options.ttl_s, agent.name) == ("g", 2, url)
    bad = "discovery:(zeroconf://g?bogusOption=1)?initialReconnectDelay=10"
    with pytest.raises(BrokerURLError) as caught:
        connect(bad)
    assert caught.value.part == "bogusOption"
    assert bad in str(caught.value)


def test_a_service_uri_must_fit_one_dns_label() -> None:
    assert check_service("stomp://127.0.0.1:61613") == "stomp://127.0.0.1:61613"
    with pytest.raises(ValueError, match="at most 63"):
        check_service("stomp://broker.example.com:61613?" + "x" * 40)
    with pytest.raises(ValueError, match="cannot be a DNS-SD instance name"):
        check_service("stomp://a..b:1")


def test_a_multicast_agents_twin_has_its_group_interface_and_expiry() -> None:
    url = "multicast://NEGroup?networkInterface=lo&keepAliveInterval=700&initialReconnectDelay=9"
    twin = twin_options(multicast_options(parse_uri(url), url=url))
    assert (twin.group, twin.interface, twin.initial_reconnect_delay_ms) == ("NEGroup", "lo", 9)
    assert twin.ttl_s == 7  # ten keep-alive intervals, as the multicast agent expires
    url = "multicast://default?joinNetworkInterface=lo&keepAliveInterval=100"
    twin = twin_options(multicast_options(parse_uri(url), url=url))
    assert (twin.group, twin.interface, twin.ttl_s) == ("default", "lo", 2)  # at least 2 s
    url = "multicast://default?group=a.b"
    with pytest.raises(ValueError, match=r"cannot contain '\.'"):
        twin_options(multicast_options(parse_uri(url), url=url))
