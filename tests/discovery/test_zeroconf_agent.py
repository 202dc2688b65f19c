"""The zeroconf agent over real mDNS, pinned to loopback (seed 000 §2.2.2.5, reference §3.5):
agents find each other and never themselves, groups partition discovery, a goodbye removes a
service at once, a broker killed without one expires when its records' TTL runs out, one that
fell silent and came back is found again, ``service_failed`` holds a service back as the
multicast agent does, what is published is ordinary DNS-SD, and a host where mDNS cannot work
says so, naming the agent.

Every test has its own group, so parallel runs never hear each other; every agent is pinned to
``lo`` with the test TTL of 2 s.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import re
import signal
from contextlib import AbstractAsyncContextManager

import pytest
from zeroconf import IPVersion
from zeroconf.asyncio import AsyncZeroconf

from ferrymq.client import DiscoveryListener
from ferrymq.client.discovery import agent_for
from ferrymq.discovery.advertiser import twin_for
from ferrymq.discovery.multicast import MulticastDiscoveryAgent
from ferrymq.discovery.multicast_options import multicast_options
from ferrymq.discovery.zeroconf import ZeroconfDiscoveryAgent, mdns_twin
from ferrymq.discovery.zeroconf_options import SERVICE_TYPE, zeroconf_options
from ferrymq.util.uri import parse_uri
from tests.discovery import agents
from tests.discovery.agents import Recorder, advertising_process

TTL_S = 2
log = logging.getLogger(__name__)
_tests = itertools.count()


def fresh_group() -> str:
    """A group name no other test, or test run, shares."""
    return f"ferrymq-test-{os.getpid()}-{next(_tests)}"


def fresh_agent_uri(*, ttl_s: int = TTL_S, extra: str = "", group: str | None = None) -> str:
    """A zeroconf agent URI of a fresh group, pinned to ``lo``."""
    group = group if group is not None else fresh_group()
    return f"zeroconf://{group}?networkInterface=lo&ttl={ttl_s}{extra}"


def running_agent(
    uri: str, *services: str, listener: DiscoveryListener | None = None
) -> AbstractAsyncContextManager[ZeroconfDiscoveryAgent]:
    return agents.running_agent(ZeroconfDiscoveryAgent, uri, *services, listener=listener)


async def test_two_agents_discover_each_other_and_never_themselves() -> None:
    first, latency = await agents.find_each_other(ZeroconfDiscoveryAgent, fresh_agent_uri())
    log.info("discovered each other %.3f s after B's start began", latency)
    assert [what for what, _, _ in first.events] == ["add", "remove"]  # B's goodbye


async def test_three_brokers_and_a_client_that_only_listens() -> None:
    await agents.listen_to_three(ZeroconfDiscoveryAgent, fresh_agent_uri())


async def test_groups_partition_discovery_and_ignore_case() -> None:
    group = fresh_group()
    ours, theirs = Recorder(), Recorder()
    async with (
        running_agent(fresh_agent_uri(group=group.upper()), listener=ours),
        running_agent(fresh_agent_uri(), listener=theirs),
        running_agent(fresh_agent_uri(), "stomp://127.0.0.1:3002"),
        running_agent(fresh_agent_uri(group=group), "stomp://127.0.0.1:3001"),
    ):
        await ours.wait_for(lambda: bool(ours.services), "our group's broker")
        await asyncio.sleep(0.5)  # time enough to hear any other group's broker too
        assert ours.services == {"stomp://127.0.0.1:3001"}  # FERRYMQ-TEST-... is ferrymq-test-...
    assert theirs.events == []


async def test_a_goodbye_removes_the_service_long_before_it_could_expire() -> None:
    uri = fresh_agent_uri(ttl_s=60)
    listener = Recorder()
    async with running_agent(uri, listener=listener) as agent:
        async with running_agent(uri, "stomp://127.0.0.1:4001"):
            await listener.wait_for(lambda: bool(listener.services), "the broker")
            stopping = asyncio.get_running_loop().time()
        await listener.wait_for(lambda: not listener.services, "its goodbye")
        log.info(
            "removed %.3f s after stop()",
            listener.last("remove", "stomp://127.0.0.1:4001") - stopping,
        )
        assert agent.statistics().services == ()


async def test_an_advertising_process_killed_with_sigkill_expires_with_its_records() -> None:
    uri = fresh_agent_uri()
    service = "stomp://127.0.0.1:6001"
    listener = Recorder()
    async with running_agent(uri, listener=listener):
        async with advertising_process(uri, service) as process:
            await listener.wait_for(lambda: bool(listener.services), "the other process")
            await asyncio.sleep(2 * TTL_S)  # its records were asked for again, and answered
            assert listener.services == {service}
            process.kill()
            killed = asyncio.get_running_loop().time()
        await listener.wait_for(lambda: not listener.services, "the killed process to expire")
    log.info(
        "expired %.3f s after SIGKILL (ttl %d s)", listener.last("remove", service) - killed, TTL_S
    )
    assert [what for what, _, _ in listener.events] == ["add", "remove"]


async def test_a_silent_advertiser_expires_and_is_found_again_when_it_answers() -> None:
    uri = fresh_agent_uri()
    service = "stomp://127.0.0.1:6501"
    listener = Recorder()
    async with running_agent(uri, listener=listener), advertising_process(uri, service) as process:
        await listener.wait_for(lambda: bool(listener.services), "the other process")
        process.send_signal(signal.SIGSTOP)
        try:
            await listener.wait_for(lambda: not listener.services, "the paused process to expire")
        finally:
            process.send_signal(signal.SIGCONT)
        resumed = asyncio.get_running_loop().time()
        await listener.wait_for(lambda: bool(listener.services), "the resumed process")
    log.info("found again %.3f s after SIGCONT", listener.last("add", service) - resumed)
    assert [what for what, _, _ in listener.events] == ["add", "remove", "add"]


async def test_a_failed_service_is_held_back_then_announced_again() -> None:
    uri = fresh_agent_uri(extra="&initialReconnectDelay=300")
    await agents.held_back_then_announced(ZeroconfDiscoveryAgent, uri, 0.3)


async def test_what_a_broker_publishes_is_ordinary_dns_sd() -> None:
    """Another mDNS querier (python-zeroconf on its own) resolves the instance ActiveMQ's way:
    named by the service URI, with its port, weight and priority in the SRV record."""
    uri = fresh_agent_uri(extra="&weight=5&priority=7")
    group_type = zeroconf_options(parse_uri(uri), url=uri).group_type
    service = "stomp://127.0.0.1:8001"
    async with running_agent(uri, service):
        querier = AsyncZeroconf(interfaces=["127.0.0.1"], ip_version=IPVersion.V4Only)
        try:
            info = await querier.async_get_service_info(group_type, f"{service}.{SERVICE_TYPE}")
        finally:
            await querier.async_close()
    assert info is not None
    assert (info.port, info.weight, info.priority) == (8001, 5, 7)
    assert info.parsed_addresses() == ["127.0.0.1"]


@pytest.mark.parametrize(
    ("interface", "words"),
    [
        ("interface=198.51.100.77", "cannot use mDNS on interface 198.51.100.77"),
        ("networkInterface=nosuch0", "no interface named 'nosuch0'"),
        ("localhost=nosuch0", "no interface named 'nosuch0'"),
    ],
)
async def test_a_host_where_mdns_cannot_work_is_a_clear_error(interface: str, words: str) -> None:
    uri = fresh_agent_uri().replace("networkInterface=lo", interface)
    agent = agent_for(parse_uri(uri), url=uri)
    with pytest.raises(OSError, match=re.escape(words)) as caught:
        await agent.start(Recorder())
    assert uri in str(caught.value)
    await agent.stop()
    await agent.stop()


async def test_an_agent_starts_once_and_takes_services_before() -> None:
    uri = fresh_agent_uri()
    agent = agent_for(parse_uri(uri), url=uri)
    with pytest.raises(ValueError, match=re.escape(uri) + ": .* at most 63"):
        agent.register_service("stomp://127.0.0.1:1?" + "x" * 60)
    await agent.start(None)
    with pytest.raises(RuntimeError, match="starts once"):
        await agent.start(None)
    with pytest.raises(RuntimeError, match="before starting"):
        agent.register_service("stomp://127.0.0.1:1")
    await agent.stop()
    await agent.stop()
    agent.service_failed("stomp://127.0.0.1:1")  # after stop: nothing to do


def test_a_multicast_agent_has_an_mdns_twin_unless_it_cannot_or_is_told_not_to(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def multicast(url: str) -> MulticastDiscoveryAgent:
        return MulticastDiscoveryAgent(multicast_options(parse_uri(url), url=url), name=url)

    service = "stomp://127.0.0.1:9001"
    twin = mdns_twin(multicast("multicast://NEGroup?networkInterface=lo"), service)
    assert twin is not None
    assert (twin.options.group, twin.options.interface, twin.options.ttl_s) == ("NEGroup", "lo", 5)
    assert "(its mDNS twin)" in twin.name
    assert twin_for(multicast("multicast://NEGroup?zeroconf=false"), service) is None
    assert twin_for(agent_for(parse_uri(fresh_agent_uri()), url="z"), service) is None
    with caplog.at_level(logging.WARNING):
        assert mdns_twin(multicast("multicast://default?group=a.b"), service) is None
    assert "not advertised over mDNS" in caplog.text
    with pytest.raises(ValueError, match="zeroconf=true"):
        mdns_twin(multicast("multicast://default?group=a.b&zeroconf=true"), service)
