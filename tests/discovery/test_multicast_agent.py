"""The multicast agent on real sockets, pinned to loopback (reference §3.4): agents find each
other and never themselves, groups partition the traffic on one address and port, a service
leaves at once on ``dead`` and expires after ten silent keep-alive intervals (also when its
process is SIGKILLed), ``service_failed`` holds a service back until its next heartbeat after
the recovery delay, and a host where the agent cannot work says so, naming the agent.

Every test has its own group name and UDP port, so parallel runs never hear each other.
"""

from __future__ import annotations

import asyncio
import errno
import itertools
import logging
import os
import socket
import struct
import time
from contextlib import AbstractAsyncContextManager

import pytest

from ferrymq.client import DiscoveryListener
from ferrymq.client.discovery import agent_for
from ferrymq.discovery import datagram
from ferrymq.discovery.multicast import MulticastDiscoveryAgent, open_socket
from ferrymq.discovery.multicast_options import multicast_options
from ferrymq.testing import free_port, wait_until
from ferrymq.util.uri import parse_uri
from tests.discovery import agents
from tests.discovery.agents import WAIT_S as WAIT_S  # re-exported: older tests import them here
from tests.discovery.agents import Recorder as Recorder
from tests.discovery.agents import advertising_process

_AGENT_PROCESS = agents.AGENT_PROCESS
_tests = itertools.count()


def fresh_agent_uri(keep_alive_ms: int = 100, extra: str = "") -> str:
    """A multicast agent URI that no other test, or test run, shares, pinned to ``lo``."""
    n = next(_tests)
    group = f"ferrymq-test-{os.getpid()}-{n}"
    address = f"239.255.{43 + n // 250}.{1 + n % 250}"
    return (
        f"multicast://{address}:{free_port(udp=True)}?group={group}&networkInterface=lo"
        f"&keepAliveInterval={keep_alive_ms}{extra}"
    )


def with_group(uri: str, group: str) -> str:
    options = multicast_options(parse_uri(uri), url=uri)
    return uri.replace(f"group={options.group}", f"group={group}")


def running_agent(
    uri: str, *services: str, listener: DiscoveryListener | None = None
) -> AbstractAsyncContextManager[MulticastDiscoveryAgent]:
    return agents.running_agent(MulticastDiscoveryAgent, uri, *services, listener=listener)


def sender_socket(uri: str) -> tuple[socket.socket, tuple[str, int]]:
    """A plain UDP socket sending to the agent's group by ``lo``: another implementation."""
    options = multicast_options(parse_uri(uri), url=uri)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    index = socket.if_nametoindex("lo")
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, struct.pack("=8si", bytes(8), index))
    return sock, (options.address, options.port)


async def test_two_agents_discover_each_other_and_never_themselves() -> None:
    # B advertised at start; A re-advertised on first hearing B: both within a moment.
    first, latency = await agents.find_each_other(MulticastDiscoveryAgent, fresh_agent_uri())
    logging.getLogger(__name__).info("discovery latency %.3f s", latency)
    assert [what for what, _, _ in first.events] == ["add", "remove"]  # B's dead datagram


async def test_three_brokers_and_a_client_that_only_listens() -> None:
    agent = await agents.listen_to_three(MulticastDiscoveryAgent, fresh_agent_uri())
    assert agent.statistics().sent == 0  # a client advertises nothing


async def test_groups_partition_the_traffic_on_one_address_and_port() -> None:
    uri = fresh_agent_uri()
    other = with_group(uri, "someone-else")
    listener, stranger = Recorder(), Recorder()
    async with (
        running_agent(other, "stomp://127.0.0.1:3002", listener=stranger),
        running_agent(uri, listener=listener) as agent,
        running_agent(uri, "stomp://127.0.0.1:3001"),
    ):
        await listener.wait_for(lambda: bool(listener.services), "our group's broker")
        await wait_until(
            lambda: agent.statistics().ignored >= 2, WAIT_S, "the other group's datagrams"
        )
        assert listener.services == {"stomp://127.0.0.1:3001"}
    assert stranger.services == set()
    assert [uri for _, uri, _ in stranger.events] == []


async def test_a_dead_datagram_removes_the_service_long_before_it_could_expire() -> None:
    uri = fresh_agent_uri(keep_alive_ms=2000)  # expiry after 20 s, beyond the wait
    listener = Recorder()
    async with running_agent(uri, listener=listener) as agent:
        async with running_agent(uri, "stomp://127.0.0.1:4001"):
            await listener.wait_for(lambda: bool(listener.services), "the broker")
        await listener.wait_for(lambda: not listener.services, "its dead datagram")
        assert agent.statistics().services == ()


async def test_a_service_that_falls_silent_expires_after_ten_keep_alive_intervals() -> None:
    uri = fresh_agent_uri(keep_alive_ms=100)
    listener = Recorder()
    sock, group = sender_socket(uri)
    loop = asyncio.get_running_loop()
    alive = datagram.alive(multicast_options(parse_uri(uri), url=uri).group, "tcp://h:5001")
    with sock:
        async with running_agent(uri, listener=listener):
            last_sent = loop.time()
            for _ in range(3):  # a broker's heartbeats, then SIGKILL: no dead datagram
                sock.sendto(alive, group)
                last_sent = loop.time()
                await listener.wait_for(lambda: bool(listener.services), "the heartbeat")
            await listener.wait_for(lambda: not listener.services, "the service to expire")
    silence = listener.last("remove", "tcp://h:5001") - last_sent
    logging.getLogger(__name__).info("expired after %.3f s of silence", silence)
    assert silence > 1.0  # never before 10 x 100 ms


async def test_a_stalled_event_loop_does_not_expire_the_agents_sharing_it() -> None:
    """Brokers in one process share one event loop: after it stalled for longer than the
    expiry, an agent must read its peers' next heartbeats before calling them silent."""
    uri = fresh_agent_uri(keep_alive_ms=100)
    listener = Recorder()
    async with (
        running_agent(uri, listener=listener) as agent,
        running_agent(uri, "stomp://127.0.0.1:5501"),
    ):
        await listener.wait_for(lambda: bool(listener.services), "the broker")
        time.sleep(1.5)  # the stall itself (a blocking call on the loop), not a wait  # noqa: ASYNC251
        heard = agent.statistics().received
        await wait_until(lambda: agent.statistics().received >= heard + 3, WAIT_S, "heartbeats")
    assert [what for what, _, _ in listener.events] == ["add", "remove"]  # the remove: dead


async def test_an_advertising_process_killed_with_sigkill_expires() -> None:
    uri = fresh_agent_uri(keep_alive_ms=100)
    listener = Recorder()
    async with running_agent(uri, listener=listener):
        async with advertising_process(uri, "stomp://127.0.0.1:6001") as process:
            await listener.wait_for(lambda: bool(listener.services), "the other process")
            process.kill()
        killed = asyncio.get_running_loop().time()
        await listener.wait_for(lambda: not listener.services, "the killed process to expire")
    assert listener.last("remove", "stomp://127.0.0.1:6001") - killed > 0.8


async def test_a_failed_service_is_announced_again_after_the_delay() -> None:
    uri = fresh_agent_uri(keep_alive_ms=50, extra="&initialReconnectDelay=300")
    await agents.held_back_then_announced(MulticastDiscoveryAgent, uri, 0.3)


async def test_a_listener_that_raises_does_not_stop_the_agent(
    caplog: pytest.LogCaptureFixture,
) -> None:
    uri = fresh_agent_uri()
    told: list[str] = []

    class Failing:
        def on_service_add(self, uri: str) -> None:
            told.append(uri)
            raise RuntimeError("listener bug")

        def on_service_remove(self, uri: str) -> None:
            told.append(uri)
            raise RuntimeError("listener bug")

    recorder = Recorder()
    async with running_agent(uri, listener=Failing()), running_agent(uri, listener=recorder):
        async with running_agent(uri, "stomp://127.0.0.1:8001"):
            await recorder.wait_for(lambda: bool(recorder.services), "the broker")
        await recorder.wait_for(lambda: not recorder.services, "the broker to leave")
    assert told == ["stomp://127.0.0.1:8001", "stomp://127.0.0.1:8001"]
    assert "listener bug" in caplog.text


async def test_malformed_and_oversized_datagrams_are_dropped() -> None:
    uri = fresh_agent_uri(extra="&datagramSize=80")
    options = multicast_options(parse_uri(uri), url=uri)
    listener = Recorder()
    sock, group = sender_socket(uri)
    long_service = "tcp://h:1?" + "x" * 80
    with sock:
        async with running_agent(uri, listener=listener) as agent:
            sock.sendto(f"{options.group}.ActiveMQ-4.alive.tcp://h:1".encode(), group)
            sock.sendto(datagram.alive(options.group, long_service), group)
            sock.sendto(datagram.alive(options.group, "tcp://h:2"), group)
            await listener.wait_for(lambda: bool(listener.services), "the good datagram")
            assert agent.statistics().malformed == 2
    assert listener.services == {"tcp://h:2"}


def test_the_socket_carries_the_ttl_loopback_and_interface_options() -> None:
    uri = fresh_agent_uri(extra="&timeToLive=0&loopBackMode=true")
    options = multicast_options(parse_uri(uri), url=uri)
    with open_socket(options, uri) as sock:
        assert sock.getsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL) == 0
        assert sock.getsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP) == 0  # Java's true
        assert sock.getsockname() == (options.address, options.port)
    uri = fresh_agent_uri(extra="&interface=127.0.0.1")
    options = multicast_options(parse_uri(uri.replace("networkInterface=lo&", "")), url=uri)
    with open_socket(options, uri) as sock:
        assert sock.getsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP) == 1
        assert sock.getsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL) == 1
        sent_by = sock.getsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, 4)
        assert socket.inet_ntoa(sent_by) == "127.0.0.1"


@pytest.mark.parametrize(
    ("interface", "words"),
    [
        ("interface=198.51.100.77", "cannot send to the group on interface 198.51.100.77"),
        ("networkInterface=nosuch0", "no interface named 'nosuch0'"),
        ("joinNetworkInterface=198.51.100.77", "cannot join the group"),
    ],
)
async def test_a_host_where_multicast_cannot_work_is_a_clear_error(
    interface: str, words: str
) -> None:
    uri = fresh_agent_uri().replace("networkInterface=lo", interface)
    agent = agent_for(parse_uri(uri), url=uri)
    with pytest.raises(OSError, match="cannot") as caught:
        await agent.start(Recorder())
    assert uri in str(caught.value)
    assert words in str(caught.value)
    assert caught.value.errno in (errno.EADDRNOTAVAIL, errno.ENODEV)
    await agent.stop()
    await agent.stop()


async def test_a_port_held_without_sharing_is_a_clear_error() -> None:
    uri = fresh_agent_uri()
    options = multicast_options(parse_uri(uri), url=uri)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as hog:
        hog.bind((options.address, options.port))  # no SO_REUSEADDR: nobody may share it
        agent = agent_for(parse_uri(uri), url=uri)
        with pytest.raises(OSError, match=f"cannot bind {options.address}:{options.port}: "):
            await agent.start(None)
        await agent.stop()


async def test_an_agent_starts_once_and_stops_idempotently() -> None:
    uri = fresh_agent_uri()
    agent = agent_for(parse_uri(uri), url=uri)
    await agent.start(None)
    with pytest.raises(RuntimeError, match="starts once"):
        await agent.start(None)
    await agent.stop()
    await agent.stop()
    agent.service_failed("stomp://127.0.0.1:1")  # after stop: nothing to do
