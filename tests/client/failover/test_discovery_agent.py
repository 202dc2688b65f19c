"""The static discovery agent (reference §3.2) and the discovery transport over it."""

from __future__ import annotations

import asyncio

from ferrymq.client import StaticDiscoveryAgent, connect
from ferrymq.client.failover import StaticAgentOptions
from ferrymq.testing import wait_until
from tests.client.failover.conftest import Brokers


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.changed = asyncio.Event()

    def on_service_add(self, uri: str) -> None:
        self.events.append(("add", uri))
        self.changed.set()

    def on_service_remove(self, uri: str) -> None:
        self.events.append(("remove", uri))
        self.changed.set()

    async def until(self, count: int) -> None:
        await wait_until(
            lambda: len(self.events) >= count, 5, f"{count} event(s)", changed=self.changed
        )


async def test_static_agent_announces_at_start_and_again_after_a_failure() -> None:
    options = StaticAgentOptions(initial_reconnect_delay_ms=20, min_connect_time_ms=60_000)
    agent = StaticDiscoveryAgent(["tcp://a:1", "tcp://b:2"], options)
    recorder = Recorder()
    await agent.start(recorder)
    assert recorder.events == [("add", "tcp://a:1"), ("add", "tcp://b:2")]
    loop = asyncio.get_running_loop()
    failed_at = loop.time()
    agent.service_failed("tcp://a:1")
    agent.service_failed("tcp://a:1")  # already being retried: no second announcement
    await recorder.until(4)
    assert recorder.events[2:] == [("remove", "tcp://a:1"), ("add", "tcp://a:1")]
    assert loop.time() - failed_at >= 0.020 - 0.005
    await agent.stop()


def test_static_agent_back_off_grows_for_quick_failures() -> None:
    agent = StaticDiscoveryAgent([], StaticAgentOptions(max_reconnect_delay_ms=5000))
    assert [agent.delay_ms(n) for n in range(1, 6)] == [1000, 2000, 4000, 5000, 5000]
    flat = StaticDiscoveryAgent([], StaticAgentOptions(use_exponential_back_off=False))
    assert {flat.delay_ms(n) for n in range(1, 6)} == {1000}


async def test_static_agent_gives_a_service_up_after_max_reconnect_attempts() -> None:
    options = StaticAgentOptions(
        initial_reconnect_delay_ms=1, max_reconnect_attempts=1, min_connect_time_ms=60_000
    )
    agent = StaticDiscoveryAgent(["tcp://a:1"], options)
    recorder = Recorder()
    await agent.start(recorder)
    agent.service_failed("tcp://a:1")
    await recorder.until(3)  # removed and announced again once
    agent.service_failed("tcp://a:1")
    await recorder.until(4)
    await agent.stop()
    assert recorder.events == [
        ("add", "tcp://a:1"),
        ("remove", "tcp://a:1"),
        ("add", "tcp://a:1"),
        ("remove", "tcp://a:1"),
    ]


async def test_discovery_fails_over_between_discovered_brokers(brokers: Brokers) -> None:
    a = await brokers.start("a")
    b = await brokers.start("b")
    url = f"discovery:(static:({a.url},{b.url}))?randomize=false&initialReconnectDelay=10"
    connection = await connect(url)
    assert connection.remote_url == a.url
    resumed = asyncio.Event()
    unregister = connection.on_resumed(resumed.set)
    subscription = await connection.subscribe("/queue/discovered")
    a.kill()
    async with asyncio.timeout(10):
        await resumed.wait()
    unregister()
    assert connection.remote_url == b.url
    await connection.send("/queue/discovered", "on b", receipt=True)
    assert (await subscription.get(timeout=5)).text == "on b"
    await connection.disconnect()
