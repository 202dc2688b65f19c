"""What the agent tests share: a listener that records what it is told, an agent that stops
when the test ends, and an advertising agent in a process of its own (to SIGKILL or SIGSTOP).
Every agent is built from its URI through ``agent_for``, as a client or a broker builds it."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Protocol, TypeVar

from ferrymq.client import DiscoveryAgent, DiscoveryListener
from ferrymq.client.discovery import agent_for
from ferrymq.testing import wait_until
from ferrymq.util.uri import parse_uri

WAIT_S = 15.0
AgentT = TypeVar("AgentT", bound=DiscoveryAgent)


class _Known(Protocol):
    @property
    def services(self) -> tuple[str, ...]: ...


class ListingAgent(DiscoveryAgent, Protocol):
    """An agent whose statistics list the services it announced (multicast, zeroconf...)."""

    def statistics(self) -> _Known: ...


ListingT = TypeVar("ListingT", bound=ListingAgent)


class Recorder:
    """A discovery listener that keeps what it was told, with the event loop's time."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, float]] = []
        self._changed = asyncio.Event()

    def on_service_add(self, uri: str) -> None:
        self._record("add", uri)

    def on_service_remove(self, uri: str) -> None:
        self._record("remove", uri)

    def _record(self, what: str, uri: str) -> None:
        self.events.append((what, uri, asyncio.get_running_loop().time()))
        self._changed.set()

    @property
    def services(self) -> set[str]:
        known: set[str] = set()
        for what, uri, _ in self.events:
            (known.add if what == "add" else known.discard)(uri)
        return known

    def last(self, what: str, uri: str) -> float:
        return max(at for kind, service, at in self.events if (kind, service) == (what, uri))

    async def wait_for(self, predicate: Callable[[], bool], what: str) -> None:
        """Until ``predicate`` holds, woken by each event; fails after ``WAIT_S``."""
        await wait_until(
            predicate, WAIT_S, what, changed=self._changed, detail=lambda: f"{self.events}"
        )


@asynccontextmanager
async def running_agent(
    kind: type[AgentT], uri: str, *services: str, listener: DiscoveryListener | None = None
) -> AsyncIterator[AgentT]:
    """The agent ``uri`` names (which must be a ``kind``), advertising ``services``."""
    agent = agent_for(parse_uri(uri), url=uri)
    assert isinstance(agent, kind)
    for service in services:
        agent.register_service(service)
    await agent.start(listener)
    try:
        yield agent
    finally:
        await agent.stop()


async def find_each_other(kind: type[ListingT], uri: str) -> tuple[Recorder, float]:
    """Two agents of one group, each advertising a service, find each other's and never their
    own. Returns what the first was told (the second has stopped by then) and how long after
    the second began to start both had been told."""
    a, b = Recorder(), Recorder()
    mine, theirs = "stomp://127.0.0.1:1001", "stomp://127.0.0.1:1002"
    async with running_agent(kind, uri, mine, listener=a) as first:
        started = asyncio.get_running_loop().time()
        async with running_agent(kind, uri, theirs, listener=b):
            await a.wait_for(lambda: a.services == {theirs}, "A to find B")
            await b.wait_for(lambda: b.services == {mine}, "B to find A")
            latency = max(a.last("add", theirs), b.last("add", mine)) - started
            assert first.statistics().services == (theirs,)
    return a, latency


async def listen_to_three(kind: type[ListingT], uri: str) -> ListingT:
    """An agent that only listens finds three advertising agents of its group; returned (all
    stopped by then) for more checks of its statistics."""
    client = Recorder()
    services = {f"stomp://127.0.0.1:{port}" for port in (2001, 2002, 2003)}
    async with AsyncExitStack() as stack:
        for service in sorted(services):
            await stack.enter_async_context(running_agent(kind, uri, service))
        agent = await stack.enter_async_context(running_agent(kind, uri, listener=client))
        await client.wait_for(lambda: client.services == services, "all three")
        assert set(agent.statistics().services) == services
        return agent


async def held_back_then_announced(kind: type[ListingT], uri: str, delay_s: float) -> None:
    """``service_failed`` removes a service at once and only once, ignores one never heard of,
    and the service is announced again no sooner than ``delay_s`` (the URI's
    ``initialReconnectDelay``) later."""
    service = "stomp://127.0.0.1:7001"
    listener = Recorder()
    async with (
        running_agent(kind, uri, listener=listener) as agent,
        running_agent(kind, uri, service),
    ):
        await listener.wait_for(lambda: listener.services == {service}, "the broker")
        agent.service_failed(service)
        failed_at = asyncio.get_running_loop().time()
        assert listener.services == set()  # removed at once
        agent.service_failed(service)  # already removed: nothing more
        agent.service_failed("stomp://127.0.0.1:1")  # never heard of: nothing
        await listener.wait_for(lambda: listener.services == {service}, "its recovery")
        assert listener.last("add", service) - failed_at >= delay_s
        assert [what for what, _, _ in listener.events] == ["add", "remove", "add"]


AGENT_PROCESS = """
import asyncio, sys
from ferrymq.client import DiscoveryListener
from ferrymq.client.discovery import agent_for
from ferrymq.util.uri import parse_uri

async def main():
    url, service = sys.argv[1], sys.argv[2]
    agent = agent_for(parse_uri(url), url=url)
    agent.register_service(service)
    await agent.start(None)
    print("advertising", flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""
"""A program that advertises ``argv[2]`` through the agent ``argv[1]`` until it is killed."""


@asynccontextmanager
async def advertising_process(uri: str, service: str) -> AsyncIterator[asyncio.subprocess.Process]:
    """``AGENT_PROCESS`` advertising ``service``, killed (if still alive) when the test ends."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", AGENT_PROCESS, uri, service, stdout=asyncio.subprocess.PIPE
    )
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), WAIT_S)
        assert line == b"advertising\n"
        yield process
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()
