"""A broker's listeners made discoverable: ``<transportConnector discoveryUri="...">``.

ActiveMQ's ``TransportConnector`` registers its publishable address with the agent its
``discoveryUri`` names and starts that agent with no listener (reference §2, §3.4): it only
advertises, and a network connector that wants to find brokers runs an agent of its own. Each
connector gets its own agent, so different connectors can use different agents or none (seed
000 §2.2.2.1).

A listener advertised through ``multicast://...`` is also registered over mDNS, by a zeroconf
agent run beside the multicast one (``zeroconf.mdns_twin``): seed 000 Example 2.19 advertises a
broker with ``discoveryUri="multicast://NEGroup"`` and Example 2.20 finds it with
``discovery:(zeroconf://NEGroup)``. The URI option ``zeroconf=false`` leaves the twin out;
unless it says ``zeroconf=true``, a twin that cannot work here only costs a warning.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from ferrymq.client import ClientError, DiscoveryAgent
from ferrymq.client.discovery import agent_for
from ferrymq.discovery.multicast import MulticastDiscoveryAgent
from ferrymq.util.uri import AnyURI

log = logging.getLogger(__name__)

Advertised = tuple[str, AnyURI, str]
"""(where it is configured, the agent URI, the URL to advertise)."""


def twin_for(agent: DiscoveryAgent, url: str) -> DiscoveryAgent | None:
    """The mDNS twin advertising ``url`` beside ``agent`` (``zeroconf.mdns_twin``), or None.
    python-zeroconf is the ``zeroconf`` extra: without it a multicast broker advertises by
    multicast alone, as before twins existed, unless its URI says ``zeroconf=true``."""
    if not isinstance(agent, MulticastDiscoveryAgent) or agent.options.zeroconf is False:
        return None
    try:
        from ferrymq.discovery.zeroconf import mdns_twin  # python-zeroconf: only when installed
    except ImportError as exc:
        if agent.options.zeroconf:
            raise ValueError(f"{agent.name}: zeroconf=true needs python-zeroconf: {exc}") from None
        log.info(
            "%s: %s is not advertised over mDNS (no python-zeroconf: %s)", agent.name, url, exc
        )
        return None
    return mdns_twin(agent, url)


def _twin_required(agent: DiscoveryAgent) -> bool:
    return isinstance(agent, MulticastDiscoveryAgent) and agent.options.zeroconf is True


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
            name = agent_uri.raw or str(agent_uri)
            try:
                agent = agent_for(agent_uri, url=name)
                agent.register_service(url)
                twin = twin_for(agent, url)
            except (ClientError, ValueError) as exc:
                raise DiscoveryAdvertiserError(f"{where}: discoveryUri: {exc}") from None
            await self._start(where, agent)
            if twin is not None and not await self._start_twin(
                where, twin, required=_twin_required(agent)
            ):
                twin = None
            log.info("advertising %s through %s%s", url, name, "" if twin is None else " and mDNS")

    async def _start(self, where: str, agent: DiscoveryAgent) -> None:
        try:
            await agent.start(None)
        except OSError as exc:
            raise DiscoveryAdvertiserError(f"{where}: discoveryUri: {exc}") from None
        self.agents.append(agent)

    async def _start_twin(self, where: str, twin: DiscoveryAgent, *, required: bool) -> bool:
        """Start a multicast agent's mDNS twin; False (with a warning) if mDNS cannot work
        here and the URI did not ask for it with ``zeroconf=true``, which keeps a broker that
        advertised by multicast alone before starting as it did."""
        try:
            await self._start(where, twin)
        except DiscoveryAdvertiserError as exc:
            if required:
                raise
            log.warning("%s; advertising by multicast only", exc)
            return False
        return True

    async def stop(self) -> None:
        agents, self.agents = self.agents, []
        for agent in reversed(agents):
            try:
                await agent.stop()
            except Exception:
                log.exception("stopping discovery agent %r failed", agent)
