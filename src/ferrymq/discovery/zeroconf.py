"""``zeroconf://GROUP`` (and its old name ``rendezvous://GROUP``): brokers that find each other
over multicast DNS with DNS-SD (seed 000 §2.2.2.5, seed 001 §8.1.5, reference §3.5), on
python-zeroconf's asyncio API.

A broker publishes each registered service as a DNS-SD instance named by its URI in the group's
subtype (``zeroconf_options``) and answers queries for it; on a clean stop it sends goodbye
records, which remove it from every cache at once. A listening agent browses the group's
subtype and announces every instance whose SRV record is alive. mDNS itself has no heartbeat,
so the listener keeps the records it relies on fresh, as RFC 6762 §5.2 asks of a querier: it
asks for an SRV record again at 80, 85, 90 and 95 % of its TTL (one answer, multicast, renews
every cache on the link), and drops the service when the record runs out: a broker killed
without its goodbye is gone ``ttl`` seconds after it last answered at most. Every ``ttl``
seconds it also asks for the whole group again, naming the services it holds alive as known
answers (RFC 6762 §7.1) so that only the others answer: a broker that fell silent and came back
(SIGSTOP, a partition that healed) is found again without a new announcement.

What the listener is told follows the multicast agent's table (``multicast_services``), so
``service_failed`` holds a service back the same way, and an agent never announces its own
services: a broker must not discover itself.

A broker whose listener advertises through ``multicast://...`` registers its service here too
(``mdns_twin``): the seeds pair a broker's ``discoveryUri="multicast://NEGroup"`` with clients
of ``discovery:(zeroconf://NEGroup)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import ipaddress
import logging
from dataclasses import dataclass
from typing import Any, Final

import ifaddr
from zeroconf import (
    DNSQuestionType,
    InterfaceChoice,
    IPVersion,
    current_time_millis,
)
from zeroconf._dns import DNSPointer, DNSQuestion, DNSService
from zeroconf._protocol.outgoing import DNSOutgoing
from zeroconf.asyncio import AsyncServiceBrowser, AsyncServiceInfo, AsyncZeroconf

from ferrymq.client import DiscoveryListener
from ferrymq.discovery.multicast import MulticastDiscoveryAgent, hold_back, tell
from ferrymq.discovery.multicast_services import Heard, RemoteServices
from ferrymq.discovery.zeroconf_options import (
    SERVICE_TYPE,
    ZeroconfOptions,
    check_service,
    twin_options,
    zeroconf_options,
)
from ferrymq.util.uri import URI, AnyURI, URIError, parse_uri

log = logging.getLogger(__name__)

CLOSE_TIMEOUT_S: Final = 2.0
"""How long ``stop`` waits for the goodbye records to go out before closing anyway."""
REFRESH_AT: Final = (0.80, 0.85, 0.90, 0.95)
"""When a listener asks for a record again, as fractions of its TTL (RFC 6762 §5.2)."""
TICK_FRACTION: Final = 0.05
"""The keeper wakes this often (as a fraction of the shortest TTL it watches), between
``MIN_TICK_S`` and ``MAX_TICK_S``, so it never misses a refresh step."""
MIN_TICK_S: Final = 0.05
MAX_TICK_S: Final = 1.0
# RFC 1035 §3.2.2-3.2.4 and §4.1.1: the numbers a DNS query is made of.
TYPE_PTR: Final = 12
TYPE_SRV: Final = 33
CLASS_IN: Final = 1
FLAGS_QUERY: Final = 0x0000


@dataclass(frozen=True, slots=True)
class ZeroconfStatistics:
    queries: int
    """Queries this agent sent to keep records fresh or find services again (not counting
    python-zeroconf's own browsing queries)."""
    services: tuple[str, ...]
    """The remote services known now, except those held back after ``service_failed``."""


class ZeroconfDiscoveryAgent:
    """ActiveMQ's ``ZeroconfDiscoveryAgent`` on python-zeroconf, with expiry and hold-back."""

    def __init__(self, options: ZeroconfOptions, *, name: str | None = None) -> None:
        self.options = options
        self.name = name if name is not None else options.uri
        """The agent URI as written, for messages."""
        self._own: dict[str, AsyncServiceInfo] = {}
        self._services = RemoteServices(options, self._own.keys())
        self._listener: DiscoveryListener | None = None
        self._zeroconf: AsyncZeroconf | None = None
        self._browser: AsyncServiceBrowser | None = None
        self._keeper: asyncio.Task[None] | None = None
        self._asked: dict[str, tuple[float, int]] = {}
        """Instance name -> (creation time of the SRV record asked about, questions so far)."""
        self._started = self._stopped = False
        self._queries = 0

    # ---- DiscoveryAgent ----

    def register_service(self, uri: str) -> None:
        if self._started:
            raise RuntimeError(f"{self.name}: register services before starting the agent")
        try:
            check_service(uri)
        except ValueError as exc:
            raise ValueError(f"{self.name}: {exc}") from None
        self._own[uri] = _service_info(uri, self.options)

    async def start(self, listener: DiscoveryListener | None) -> None:
        if self._started or self._stopped:
            raise RuntimeError(f"{self.name}: an agent starts once")
        self._started = True
        interface = self.options.interface
        address = _interface_address(interface, self.name) if interface is not None else None
        try:
            zeroconf = AsyncZeroconf(
                interfaces=[address] if address is not None else InterfaceChoice.Default,
                ip_version=IPVersion.V4Only,
            )
        except OSError as exc:
            on = f"interface {interface}" if interface is not None else "the default interface"
            raise OSError(
                exc.errno, f"{self.name}: cannot use mDNS on {on}: {exc.strerror or exc}"
            ) from exc
        try:
            await zeroconf.zeroconf.async_wait_for_start()
            announced = [
                await zeroconf.async_register_service(info, cooperating_responders=True)
                for info in self._own.values()
            ]
            await asyncio.gather(*announced)
        except BaseException:
            await zeroconf.async_close()
            raise
        self._zeroconf = zeroconf
        if listener is not None:
            self._listener = listener
            self._browser = AsyncServiceBrowser(
                zeroconf.zeroconf,
                [self.options.group_type],
                handlers=[self._on_change],
                question_type=DNSQuestionType.QM,
            )
            self._keeper = asyncio.get_running_loop().create_task(
                self._keep(), name=f"ferrymq-zeroconf {self.name}"
            )
        log.info(
            "%s: %s group %r (%s) on %s",
            self.name,
            "listening to" if listener is not None else "advertising in",
            self.options.group,
            self.options.group_type,
            f"interface {interface}" if interface is not None else "the default interface",
        )

    async def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._listener = None
        keeper, self._keeper = self._keeper, None
        browser, self._browser = self._browser, None
        zeroconf, self._zeroconf = self._zeroconf, None
        try:
            if keeper is not None:
                keeper.cancel()
                await asyncio.wait([keeper])
                if not keeper.cancelled() and keeper.exception() is not None:
                    log.error("%s: keeper task failed", self.name, exc_info=keeper.exception())
            if browser is not None:
                await browser.async_cancel()
        finally:
            if zeroconf is not None:
                await self._close(zeroconf)

    async def _close(self, zeroconf: AsyncZeroconf) -> None:
        """Send the goodbyes (bounded), then close the sockets whatever happened."""
        try:
            if self._own:
                async with asyncio.timeout(CLOSE_TIMEOUT_S):
                    await zeroconf.async_unregister_all_services()
        except TimeoutError:
            log.warning("%s: the goodbye records did not all go out", self.name)
        finally:
            await zeroconf.async_close()

    def service_failed(self, uri: str) -> None:
        if not self._stopped and self._started:
            hold_back(self._services, self._listener, uri, name=self.name)

    def statistics(self) -> ZeroconfStatistics:
        return ZeroconfStatistics(self._queries, tuple(self._services.announced()))

    # ---- what the cache says, and keeping it fresh ----

    def _on_change(self, **_: Any) -> None:
        """python-zeroconf's browser saw the group change (a service added or said goodbye)."""
        if not self._stopped:
            self._reconcile()

    async def _keep(self) -> None:
        loop = asyncio.get_running_loop()
        ask_group_at = loop.time() + self.options.ttl_s
        while True:
            await asyncio.sleep(self._tick_s())
            self._refresh()
            if loop.time() >= ask_group_at:
                ask_group_at = loop.time() + self.options.ttl_s
                self._ask_group()
            self._reconcile()

    def _pointers(self, now_ms: float) -> list[DNSPointer]:
        """The group's unexpired PTR records (python-zeroconf keeps them at least 1125 s)."""
        assert self._zeroconf is not None
        cache = self._zeroconf.zeroconf.cache
        records = cache.get_all_by_details(self.options.group_type, TYPE_PTR, CLASS_IN)
        return [r for r in records if isinstance(r, DNSPointer) and not r.is_expired(now_ms)]

    def _srv(self, instance: str, now_ms: float) -> DNSService | None:
        """The freshest unexpired SRV record of an instance: it alone says a service lives."""
        assert self._zeroconf is not None
        records = self._zeroconf.zeroconf.cache.get_all_by_details(instance, TYPE_SRV, CLASS_IN)
        alive = [r for r in records if isinstance(r, DNSService) and not r.is_expired(now_ms)]
        return max(alive, key=lambda r: r.created, default=None)

    def _alive(self, now_ms: float) -> dict[str, DNSPointer]:
        """Service URI -> its PTR record, for every instance of the group with a live SRV."""
        found: dict[str, DNSPointer] = {}
        for pointer in self._pointers(now_ms):
            uri = _service_uri(pointer.alias)
            if uri is not None and self._srv(pointer.alias, now_ms) is not None:
                found[uri] = pointer
        return found

    def _reconcile(self) -> None:
        """Tell the listener what changed since the cache was last read."""
        now = asyncio.get_running_loop().time()
        alive = self._alive(current_time_millis())
        for uri in alive:
            match self._services.alive(uri, now):
                case Heard.NEW:
                    log.info("%s: discovered %s", self.name, uri)
                    tell(self._listener, uri, added=True, name=self.name)
                case Heard.RECOVERED:
                    log.info("%s: announcing %s again", self.name, uri)
                    tell(self._listener, uri, added=True, name=self.name)
                case Heard.OWN | Heard.KNOWN:
                    pass
        for uri in [uri for uri in self._services.services if uri not in alive]:
            if self._services.dead(uri):
                log.info("%s: %s is gone (goodbye, or its records expired)", self.name, uri)
                tell(self._listener, uri, added=False, name=self.name)

    def _refresh(self) -> None:
        """Ask again for the SRV records of live services that reached a refresh step."""
        now_ms = current_time_millis()
        due: list[str] = []
        watched: dict[str, tuple[float, int]] = {}
        for pointer in self._pointers(now_ms):
            srv = self._srv(pointer.alias, now_ms)
            if srv is None or _service_uri(pointer.alias) in self._own:
                continue
            key = pointer.alias.lower()
            created, asked = self._asked.get(key, (srv.created, 0))
            if created != srv.created:  # answered: a fresh record, a fresh round
                asked = 0
            age = (now_ms - srv.created) / (srv.ttl * 1000)
            if asked < len(REFRESH_AT) and age >= REFRESH_AT[asked]:
                due.append(pointer.alias)
                asked += 1
            watched[key] = (srv.created, asked)
        self._asked = watched
        if due:
            self._send([DNSQuestion(instance, TYPE_SRV, CLASS_IN) for instance in due], [])

    def _ask_group(self) -> None:
        """Ask for the whole group, naming the live services as known answers."""
        now_ms = current_time_millis()
        known = list(self._alive(now_ms).values())
        self._send([DNSQuestion(self.options.group_type, TYPE_PTR, CLASS_IN)], known, now_ms)

    def _send(
        self, questions: list[DNSQuestion], known: list[DNSPointer], now_ms: float = 0.0
    ) -> None:
        assert self._zeroconf is not None
        out = DNSOutgoing(FLAGS_QUERY, multicast=True)
        for question in questions:  # QM questions: the answers are multicast to every cache
            out.add_question(question)
        for answer in known:
            out.add_answer_at_time(answer, now_ms)
        self._zeroconf.zeroconf.async_send(out)
        self._queries += 1

    def _tick_s(self) -> float:
        now_ms = current_time_millis()
        ttls = [self.options.ttl_s]
        for pointer in self._pointers(now_ms):
            srv = self._srv(pointer.alias, now_ms)
            if srv is not None:
                ttls.append(srv.ttl)
        return min(MAX_TICK_S, max(MIN_TICK_S, min(ttls) * TICK_FRACTION))


def _service_uri(instance: str) -> str | None:
    """The service URI an instance name carries (``<uri>._activemq._tcp.local.``)."""
    suffix = "." + SERVICE_TYPE
    if not instance.lower().endswith(suffix) or len(instance) == len(suffix):
        return None
    return instance[: -len(suffix)]


def _service_info(uri: str, options: ZeroconfOptions) -> AsyncServiceInfo:
    """The DNS-SD records of one service: PTR (in the group's subtype), SRV (its port, weight
    and priority), an empty TXT, and an A record when its host is an IPv4 address."""
    port, addresses = 0, []
    with contextlib.suppress(URIError):
        parsed = parse_uri(uri)
        if isinstance(parsed, URI):
            port = parsed.port or 0
            with contextlib.suppress(ValueError):
                address = ipaddress.IPv4Address(parsed.host or "")
                if not address.is_unspecified:
                    addresses.append(str(address))
    # A host name of its own per service: one agent's goodbye never withdraws another's.
    host = "ferrymq-" + hashlib.blake2s(uri.encode(), digest_size=6).hexdigest()
    return AsyncServiceInfo(
        options.group_type,
        f"{uri}.{SERVICE_TYPE}",
        port=port,
        weight=options.weight,
        priority=options.priority,
        properties={},
        server=f"{host}.local.",
        host_ttl=options.ttl_s,
        other_ttl=options.ttl_s,
        parsed_addresses=addresses,
    )


def _interface_address(interface: str, name: str) -> str:
    """The IPv4 address mDNS is pinned to: the option itself, or the first of the interface it
    names; ``OSError`` naming the agent when no interface has it. Checked here because
    python-zeroconf, refused an address, leaks the socket it had already opened."""
    adapters = ifaddr.get_adapters()
    with contextlib.suppress(ValueError):
        address = str(ipaddress.IPv4Address(interface))
        if any(ip.ip == address for adapter in adapters for ip in adapter.ips):
            return address
        raise OSError(
            errno.EADDRNOTAVAIL,
            f"{name}: cannot use mDNS on interface {interface}: no interface has that address",
        )
    for adapter in adapters:
        if interface in (adapter.nice_name, adapter.name):
            for ip in adapter.ips:
                if isinstance(ip.ip, str):
                    return ip.ip
            raise OSError(errno.EADDRNOTAVAIL, f"{name}: interface {interface} has no IPv4 address")
    raise OSError(errno.ENODEV, f"{name}: no interface named {interface!r} on this host")


def mdns_twin(agent: MulticastDiscoveryAgent, service: str) -> ZeroconfDiscoveryAgent | None:
    """The zeroconf agent that also advertises ``service`` for a broker advertising it through
    the multicast ``agent`` (seed 000 Example 2.19/2.20 make a broker's
    ``multicast://NEGroup`` discoverable by ``zeroconf://NEGroup`` clients), or None when the
    group or the service cannot be an mDNS name (with a warning); raises ``ValueError`` then if
    the URI says ``zeroconf=true``. The advertiser decides whether there is to be a twin."""
    try:
        twin = ZeroconfDiscoveryAgent(
            twin_options(agent.options), name=f"{agent.name} (its mDNS twin)"
        )
        twin.register_service(service)
    except ValueError as exc:
        if agent.options.zeroconf:
            raise ValueError(f"{agent.name}: zeroconf=true: {exc}") from None
        log.warning("%s: %s is not advertised over mDNS: %s", agent.name, service, exc)
        return None
    return twin


def create_agent(agent_uri: AnyURI, url: str) -> ZeroconfDiscoveryAgent:
    """The ``ferrymq.discovery_agents`` entry point for ``zeroconf`` and ``rendezvous``."""
    return ZeroconfDiscoveryAgent(
        zeroconf_options(agent_uri, url=url), name=agent_uri.raw or str(agent_uri)
    )
