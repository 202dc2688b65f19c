"""``discovery:(agentURI)?options``: a failover transport whose broker list an agent supplies.

A ``DiscoveryAgent`` announces brokers to its listener (``on_service_add``/``_remove``), is
told when one failed (``service_failed``), and advertises a broker's own listeners
(``register_service``), as ActiveMQ's ``DiscoveryAgent``/``DiscoveryListener`` (reference §3.1).
This module has the protocol, the static agent (``static:(uri,...)`` and ``simple:(uri,...)``)
and ``agent_for``, which finds the agent for any other scheme by its entry point in the group
``ferrymq.discovery_agents`` (ActiveMQ looks agents up by scheme the same way, in
``META-INF/services``): the multicast, zeroconf and registry agents live in ``ferrymq.discovery``,
a layer above this one, and a third party can add its own.

The ``discovery:`` options are the failover options (Table 2.3's at Table 2.3's defaults);
every option it does not recognise, and every ``discovered.X``, is set on each discovered URI
(seed 000 "Setting options on the discovered transports").
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Protocol

from ferrymq.client.commands import Command, ConnectionInfo
from ferrymq.client.errors import BrokerURLError
from ferrymq.client.failover.options import (
    DiscoveryOptions,
    StaticAgentOptions,
    discovery_options,
    inject,
    static_agent_options,
)
from ferrymq.client.failover.transport import FailoverTransport
from ferrymq.client.failover.urls import check_members
from ferrymq.client.transport import TransportListener, TransportStatistics
from ferrymq.stomp.events import Connected
from ferrymq.util.backoff import ExponentialBackOff
from ferrymq.util.uri import URI, AnyURI, CompositeURI, URIError, parse_uri, redact_url

log = logging.getLogger(__name__)

STATIC_AGENT_SCHEMES = frozenset({"static", "simple"})
PLANNED_AGENT_SCHEMES = frozenset({"http"})
"""ActiveMQ agents FerryMQ has not built yet: refused by name rather than as unknown."""
AGENT_ENTRY_POINTS = "ferrymq.discovery_agents"
"""The entry-point group naming an ``AgentFactory`` per agent scheme (``multicast = ...``)."""


class DiscoveryListener(Protocol):
    def on_service_add(self, uri: str) -> None:
        """A broker is available at ``uri``."""

    def on_service_remove(self, uri: str) -> None:
        """The broker at ``uri`` went away."""


class DiscoveryAgent(Protocol):
    """Finds brokers and tells a listener (ActiveMQ's ``DiscoveryAgent``)."""

    def register_service(self, uri: str) -> None:
        """Advertise ``uri`` (a broker's listener) once started; called before ``start``."""
        ...

    async def start(self, listener: DiscoveryListener | None) -> None:
        """Begin advertising and announcing; services known at once are announced before this
        returns. A broker that only advertises passes no listener. Raises ``OSError`` (with a
        message naming the agent) when the agent cannot work on this host."""
        ...

    async def stop(self) -> None: ...

    def service_failed(self, uri: str) -> None:
        """The user of ``uri`` lost it; the agent removes it and may announce it again."""
        ...


@dataclass(slots=True)
class _Service:
    uri: str
    failures: int = 0
    announced_at: float = 0.0
    retry: asyncio.Task[None] | None = field(default=None, repr=False)


class StaticDiscoveryAgent:
    """``static:(uri,...)`` / ``simple:(uri,...)``: a fixed list, announced at ``start``; a
    failed service is removed and announced again after a back-off (reference §3.2), which is
    how a static network connector retries for ever."""

    def __init__(self, uris: Sequence[str], options: StaticAgentOptions | None = None) -> None:
        self.options = options if options is not None else StaticAgentOptions()
        # SimpleDiscoveryAgent's rule: the first wait is initialReconnectDelay even above the cap.
        self._back_off = ExponentialBackOff.of(self.options)
        self._services = {uri: _Service(uri) for uri in uris}
        self._listener: DiscoveryListener | None = None

    def register_service(self, uri: str) -> None:
        # Nothing to advertise to: a static list lives in its users' URLs (as in ActiveMQ).
        log.info(
            "static discovery: %s is not advertised (a static agent only lists)", redact_url(uri)
        )

    async def start(self, listener: DiscoveryListener | None) -> None:
        self._listener = listener
        if listener is None:
            return
        now = asyncio.get_running_loop().time()
        for service in self._services.values():
            service.announced_at = now
            listener.on_service_add(service.uri)

    async def stop(self) -> None:
        self._listener = None
        tasks = [s.retry for s in self._services.values() if s.retry is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)

    def service_failed(self, uri: str) -> None:
        service = self._services.get(uri)
        listener = self._listener
        if service is None or listener is None or service.retry is not None:
            return
        listener.on_service_remove(uri)
        options = self.options
        now = asyncio.get_running_loop().time()
        if (now - service.announced_at) * 1000 < options.min_connect_time_ms:
            service.failures += 1
        else:
            service.failures = 1
        if options.max_reconnect_attempts and service.failures > options.max_reconnect_attempts:
            log.warning(
                "static discovery: giving up %s after %d failures",
                redact_url(uri),
                service.failures,
            )
            return
        service.retry = asyncio.get_running_loop().create_task(
            self._announce_later(service, self.delay_ms(service.failures) / 1000)
        )

    def delay_ms(self, failures: int) -> int:
        """The wait before announcing a service again after ``failures`` quick failures."""
        return self._back_off.delay_ms(failures)

    async def _announce_later(self, service: _Service, delay_s: float) -> None:
        try:
            await asyncio.sleep(delay_s)
        finally:
            service.retry = None
        if self._listener is not None:
            service.announced_at = asyncio.get_running_loop().time()
            self._listener.on_service_add(service.uri)


class DiscoveryTransport:
    """A ``FailoverTransport`` over what its agent announces."""

    def __init__(
        self, agent: DiscoveryAgent, options: DiscoveryOptions, info: ConnectionInfo, *, url: str
    ) -> None:
        self.agent = agent
        self.discovered_options = {**options.discovered, **options.failover.nested}
        self.failover = FailoverTransport([], options.failover, info, url=url)

    # DiscoveryListener

    def on_service_add(self, uri: str) -> None:
        parsed = _service_uri(uri)
        if parsed is not None:
            self.failover.add_uri(inject(parsed, self.discovered_options))

    def on_service_remove(self, uri: str) -> None:
        parsed = _service_uri(uri)
        if parsed is not None:
            self.failover.remove_uri(parsed)

    # Transport

    @property
    def remote_url(self) -> str:
        return self.failover.remote_url

    @property
    def generation(self) -> int:
        return self.failover.generation

    async def open(self, listener: TransportListener) -> Connected:
        await self.agent.start(self)
        try:
            return await self.failover.open(listener)
        except BaseException:
            await self.agent.stop()
            raise

    async def write(self, command: Command) -> None:
        await self.failover.write(command)

    def abort(self) -> None:
        self.failover.abort()

    async def close(self) -> None:
        await self.failover.close()
        await self.agent.stop()

    def statistics(self) -> TransportStatistics:
        return self.failover.statistics()


def _service_uri(text: str) -> URI | None:
    try:
        parsed = parse_uri(text)
    except URIError as exc:
        log.warning("discovery: ignoring service %s: %s", redact_url(repr(text)), exc)
        return None
    if not isinstance(parsed, URI):
        log.warning("discovery: ignoring service %s: not a broker URI", redact_url(repr(text)))
        return None
    return parsed


AgentFactory = Callable[[AnyURI, str], DiscoveryAgent]
"""What an entry point of ``AGENT_ENTRY_POINTS`` names: ``(agent URI, whole URL) -> agent``;
it checks the agent URI's options and raises ``BrokerURLError`` naming a bad one."""


def agent_schemes() -> dict[str, Callable[[], AgentFactory]]:
    """Agent scheme -> loader of its factory, for every installed agent."""
    found: dict[str, Callable[[], AgentFactory]] = {}
    for entry in entry_points(group=AGENT_ENTRY_POINTS):
        found[entry.name.lower()] = entry.load
    return found


def agent_for(agent_uri: AnyURI, *, url: str) -> DiscoveryAgent:
    """The discovery agent ``agent_uri`` names (``static:(...)``, ``multicast://default``...)."""
    scheme = agent_uri.scheme.lower()
    if scheme in STATIC_AGENT_SCHEMES:
        if not isinstance(agent_uri, CompositeURI):
            raise BrokerURLError(
                f"{scheme}: lists brokers: {scheme}:(tcp://HOST:PORT,...)", url=url, part=scheme
            )
        members = check_members(agent_uri, {}, url=url, what=f"{scheme}:")
        agent_options = static_agent_options(agent_uri.options, url=url)
        return StaticDiscoveryAgent([str(member) for member in members], agent_options)
    known = agent_schemes()
    loader = known.get(scheme)
    if loader is None and scheme in PLANNED_AGENT_SCHEMES:
        raise BrokerURLError(
            f"the {scheme}: discovery agent is not supported yet", url=url, part=scheme
        )
    if loader is None:
        supported = ", ".join(f"{name}:" for name in sorted({*STATIC_AGENT_SCHEMES, *known}))
        raise BrokerURLError(
            f"unknown discovery agent {agent_uri.scheme!r} (supported: {supported})",
            url=url,
            part=agent_uri.scheme,
        )
    try:
        factory = loader()
    except ImportError as exc:  # an entry point whose module or library is missing
        raise BrokerURLError(
            f"the {scheme}: discovery agent cannot be loaded: {exc}", url=url, part=scheme
        ) from None
    return factory(agent_uri, url)


GROUP_OPTION = "group"
"""Seed 002 Table 1.2's ``group``, a ``discovery:`` option that belongs to the agent."""


def _with_group(
    agent_uri: AnyURI, query: Mapping[str, str], *, url: str
) -> tuple[AnyURI, dict[str, str]]:
    """Move ``discovery:(agent)?group=G`` onto the agent (ActiveMQ honours ``group`` only
    inside the agent URI; seed 002 lists it among the discovery options, so both work). The
    agent's own ``group=`` wins; an agent without groups refuses it as its own option."""
    rest = dict(query)
    group = rest.pop(GROUP_OPTION, None)
    if group is None:
        return agent_uri, rest
    if not isinstance(agent_uri, URI):
        raise BrokerURLError(
            f"{GROUP_OPTION}= partitions multicast, zeroconf and fabric discovery; "
            f"a {agent_uri.scheme}: list has no group",
            url=url,
            part=GROUP_OPTION,
        )
    if GROUP_OPTION in agent_uri.query:
        return agent_uri, rest
    return inject(agent_uri, {GROUP_OPTION: group}), rest


def discovery_transport(uri: AnyURI, info: ConnectionInfo) -> DiscoveryTransport:
    """Build the transport for a ``discovery:`` URL, checking all of it first."""
    url = uri.raw or str(uri)
    if not isinstance(uri, CompositeURI) or len(uri.components) != 1:
        raise BrokerURLError(
            "discovery: names one agent: discovery:(multicast://default)?options",
            url=url,
            part=uri.scheme,
        )
    agent_uri, query = _with_group(uri.components[0], uri.options, url=url)
    options = discovery_options(query, url=url)
    if agent_uri.scheme.lower() in STATIC_AGENT_SCHEMES and isinstance(agent_uri, CompositeURI):
        # Check the listed members with what will be injected into them, now.
        check_members(
            agent_uri,
            {**options.discovered, **options.failover.nested},
            url=url,
            what=f"{agent_uri.scheme}:",
        )
    return DiscoveryTransport(agent_for(agent_uri, url=url), options, info, url=url)
