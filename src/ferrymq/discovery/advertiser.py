"""A broker's listeners made discoverable: ``<transportConnector discoveryUri="...">``.

ActiveMQ's ``TransportConnector`` registers its publishable address with the agent its
``discoveryUri`` names and starts that agent with no listener (reference §2, §3.4): it only
advertises, and a network connector that wants to find brokers runs an agent of its own. Each
connector gets its own agent, so different connectors can use different agents or none (seed
000 §2.2.2.1).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from ferrymq.client import ClientError, DiscoveryAgent
from ferrymq.client.discovery import agent_for
from ferrymq.util.uri import AnyURI

log = logging.getLogger(__name__)

Advertised = tuple[str, AnyURI, str]
"""(where it is configured, the agent URI, the URL to advertise)."""


class DiscoveryAdvertiserError(ValueError):
    """A ``discoveryUri`` that cannot be used; the message says where and why."""


class DiscoveryAdvertiser:
    """Runs one advertising agent per listener that has a ``discoveryUri``; started after the
    listeners (their ports are known then) and stopped before them, so a stopping broker's
    ``dead`` announcement goes out while it can still be reached for nothing new."""

    def __init__(self, services: Callable[[], Sequence[Advertised]]) -> None:
        self._services = services
        self.agents: list[DiscoveryAgent] = []

    async def start(self) -> None:
        for where, agent_uri, url in self._services():
            try:
                agent = agent_for(agent_uri, url=agent_uri.raw or str(agent_uri))
            except ClientError as exc:
                raise DiscoveryAdvertiserError(f"{where}: discoveryUri: {exc}") from None
            agent.register_service(url)
            try:
                await agent.start(None)
            except OSError as exc:
                raise DiscoveryAdvertiserError(f"{where}: discoveryUri: {exc}") from None
            self.agents.append(agent)
            log.info("advertising %s through %s", url, agent_uri.raw or agent_uri)

    async def stop(self) -> None:
        agents, self.agents = self.agents, []
        for agent in reversed(agents):
            try:
                await agent.stop()
            except Exception:
                log.exception("stopping discovery agent %r failed", agent)
