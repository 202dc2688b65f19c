"""A ``<networkConnector>``: a discovery agent, and a bridge to every broker it announces.

ActiveMQ's ``DiscoveryNetworkConnector`` (reference §4.2, §4.6): the connector's URI is a
discovery agent (``static:(tcp://a,tcp://b)``, ``multicast://default`` and the other agents of
``ferrymq.discovery``, or one service such as ``masterslave:(tcp://m,tcp://s)`` or
``failover:(...)?maxReconnectAttempts=0`` that follows a master/slave group's master). For
each announced URI it opens a ``NetworkBridge``; when a bridge fails it tells the agent, which
announces the URI again after its back-off, and a brand-new bridge (fresh subscriptions, full
demand replay) takes over. A URI that is one of this broker's
own listeners is never bridged, and a remote broker with this broker's id ends the bridge for
good (a loop back to itself).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import replace

from ferrymq.client import ClientError, DiscoveryAgent, StaticDiscoveryAgent
from ferrymq.client.discovery import agent_for
from ferrymq.client.failover.options import static_agent_options
from ferrymq.config.network import NetworkConnectorConfig
from ferrymq.network.bridge import BridgeFailedError
from ferrymq.network.link import LocalBroker, NetworkBridge, NetworkLoopError
from ferrymq.network.routes import RouteRegistry
from ferrymq.util.uri import URI, CompositeURI, URIError, parse_uri, redact_url

log = logging.getLogger(__name__)


class NetworkConnectorError(ValueError):
    """A connector that cannot start as configured; the message names it and why."""


SERVICE_SCHEMES = frozenset({"failover", "tcp", "stomp", "ssl", "stomp+ssl"})
"""A connector URI that names one service rather than an agent (ActiveMQ accepts these too)."""


def discovery_agent(config: NetworkConnectorConfig) -> DiscoveryAgent:
    uri = config.parsed_uri
    scheme = uri.scheme.lower()
    if scheme not in ("static", "simple", "masterslave", *SERVICE_SCHEMES):
        try:
            return agent_for(uri, url=uri.raw or str(uri))
        except ClientError as exc:
            raise NetworkConnectorError(f"networkConnector {config.name}: {exc}") from None
    if scheme in ("static", "simple", "masterslave"):
        assert isinstance(uri, CompositeURI)
        raw = uri.raw or str(uri)
        try:
            options = static_agent_options(uri.options, url=raw)
        except ClientError as exc:
            raise NetworkConnectorError(f"networkConnector {config.name}: {exc}") from None
        if scheme == "masterslave":
            # ActiveMQ's MasterSlaveDiscoveryAgent is a static agent (reference §3.3): the query
            # is its back-off, not an option of the one failover service it announces.
            return StaticDiscoveryAgent([replace(uri, options={}).render(nested=False)], options)
        members = [
            m.render(nested=True) if isinstance(m, CompositeURI) else str(m) for m in uri.components
        ]
        return StaticDiscoveryAgent(members, options)
    # One service that follows a group's master, or one broker.
    text = uri.render(nested=False) if isinstance(uri, CompositeURI) else str(uri)
    return StaticDiscoveryAgent([text])


class NetworkConnector:
    def __init__(
        self,
        config: NetworkConnectorConfig,
        local: LocalBroker,
        routes: RouteRegistry,
        own_urls: Callable[[], list[str]],
    ) -> None:
        self.config = config
        self.local = local
        self.routes = routes
        self._own_urls = own_urls
        self.agent = discovery_agent(config)
        self.bridges: dict[str, NetworkBridge] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._removed: set[str] = set()
        """Services withdrawn while their bridge ran: it is not retried. A flag, not
        ``cancelling()``: 3.11's TaskGroup can leave a failed bridge's task counted as
        cancelled, or let its failure win over the cancel."""
        self._stopping = False

    @property
    def name(self) -> str:
        return self.config.name

    async def start(self) -> None:
        await self.agent.start(self)

    async def stop(self) -> None:
        self._stopping = True
        await self.agent.stop()
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()
        self.bridges.clear()

    # -- the agent's listener -----------------------------------------------------------------

    def on_service_add(self, uri: str) -> None:
        if self._stopping or uri in self._tasks:
            return
        if _same_endpoint(uri, self._own_urls()):
            log.info(
                "network connector %s: %s is this broker, not bridged", self.name, redact_url(uri)
            )
            return
        bridge = NetworkBridge(self.config, self.local, uri, self.routes)
        self.bridges[uri] = bridge
        task = asyncio.get_running_loop().create_task(
            self._run_bridge(uri, bridge), name=f"ferrymq-bridge {self.name} {bridge.shown_uri}"
        )
        self._tasks[uri] = task

    def on_service_remove(self, uri: str) -> None:
        task = self._tasks.get(uri)
        if task is not None and task is not asyncio.current_task():
            self._removed.add(uri)
            task.cancel()

    async def _run_bridge(self, uri: str, bridge: NetworkBridge) -> None:
        retry = True
        try:
            await bridge.run()
        except asyncio.CancelledError:
            if uri in self._removed or self._stopping:
                retry = False
                raise
            # Not a cancellation of this task (its owner sets one of those flags first): a
            # bridge that failed, built again like any other.
            log.warning(
                "network connector %s: bridge to %s ended by a stray cancellation",
                self.name,
                bridge.shown_uri,
            )
        except NetworkLoopError as exc:
            log.error("network connector %s: %s", self.name, exc)
            retry = False
        except (BridgeFailedError, ClientError, OSError) as exc:
            log.warning(
                "network connector %s: bridge to %s failed: %s", self.name, bridge.shown_uri, exc
            )
        finally:
            self._tasks.pop(uri, None)
            if uri in self._removed:
                self._removed.discard(uri)
                retry = False
            if self.bridges.get(uri) is bridge and not retry:
                del self.bridges[uri]
        if retry and not self._stopping:
            self.agent.service_failed(uri)

    def statistics(self) -> list[dict[str, object]]:
        return [bridge.statistics() for bridge in self.bridges.values()]


def _same_endpoint(uri: str, own: list[str]) -> bool:
    """Whether ``uri`` names one of this broker's listeners (loopback and wildcard hosts
    compare equal)."""
    try:
        parsed = parse_uri(uri)
    except URIError:
        return False
    if not isinstance(parsed, URI):
        return False
    local_hosts = {"127.0.0.1", "localhost", "0.0.0.0", "::", "::1"}
    for text in own:
        mine = parse_uri(text)
        if not isinstance(mine, URI) or mine.port != parsed.port:
            continue
        if mine.host == parsed.host or (mine.host in local_hosts and parsed.host in local_hosts):
            return True
    return False
