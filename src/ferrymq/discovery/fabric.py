"""``fabric://GROUP``: brokers register under a group in a shared registry and clients list the
group (seed 000 §2.2.2.2 "Fuse Fabric Discovery Agent", seed 001 §8.1.2), with a PostgreSQL
database standing in for Fuse Fabric's ZooKeeper (docs/discovery.md says why).

A broker's agent (``register_service``, then ``start(None)``) writes one row per advertised
listener with a lease and renews it every ``keepAliveInterval``; a clean stop deletes the rows
at once, and a broker that dies (SIGKILL, power loss) or hangs (SIGSTOP) drops out when its
lease ends, ``leaseDuration`` after its last renewal by the database's clock. A listening agent
(a ``discovery:`` client, a network connector) LISTENs to its group's channel, so it hears a
registration or a clean stop when it commits, and reads the whole group every ``pollInterval``
to see leases that lapsed and anything a lost notification missed. What it knows of the
services is the multicast agent's table (``multicast_services``): a service listed or notified
is "alive", one deregistered or missing from a listing is "dead", and ``service_failed`` holds
one back by the same rules. An agent never announces its own services.

The registry may go away: the agent keeps what its listener knows, retries with back-off (at
most ``keepAliveInterval`` apart), and when the registry answers again it registers its services
anew and removes nobody for one lease, the time the live brokers need to renew theirs. Only an
unreachable registry at ``start`` is an error (``OSError``, naming the agent and the registry,
never the password). Everything runs on the event loop through psycopg's async connection.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
from dataclasses import dataclass
from typing import Final

import psycopg

from ferrymq.client import DiscoveryListener
from ferrymq.discovery.fabric_options import FabricOptions, fabric_options
from ferrymq.discovery.fabric_registry import Notification, RegistryConnection
from ferrymq.discovery.multicast import hold_back, tell
from ferrymq.discovery.multicast_services import Heard, RemoteServices
from ferrymq.util.backoff import ExponentialBackOff
from ferrymq.util.uri import AnyURI

log = logging.getLogger(__name__)

REGISTRY_ERRORS: Final = (psycopg.Error, OSError, TimeoutError)
"""What an unreachable, failing or too slow registry raises."""
FIRST_RETRY_MS: Final = 100
"""The first wait after the registry failed; it doubles up to ``keepAliveInterval``."""
SWEEP_AFTER_LEASES: Final = 10
"""A registrant deletes rows of its group that expired this many leases ago (once a lease)."""
OUTAGE_REMINDER_S: Final = 60.0
"""While the registry keeps failing, a warning says so this often (the attempts in between are
logged at debug level)."""
STOP_WAIT_S: Final = 2.0
"""How long ``stop`` waits for the keeper before closing the registry connection under it."""


@dataclass(frozen=True, slots=True)
class FabricStatistics:
    registry: str
    """``postgresql://user@host:port/db``, no password."""
    connected: bool
    registered: tuple[str, ...]
    """This agent's own services."""
    services: tuple[str, ...]
    """The remote services announced now (not those held back after ``service_failed``)."""
    outages: int
    """How many times the registry went away (or could not be reached, while retrying)."""
    notifications: int
    polls: int


class FabricDiscoveryAgent:
    """A registry-backed agent (Fuse Fabric's ``FabricDiscoveryAgent``) on PostgreSQL."""

    def __init__(self, options: FabricOptions, *, name: str | None = None) -> None:
        self.options = options
        self.name = name if name is not None else options.uri
        """For messages: ``fabric://GROUP`` (they name the registry where it matters)."""
        self.registrant = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        """This agent's name in the registry's ``registrant`` column."""
        self._own: dict[str, None] = {}
        self._services = RemoteServices(options, self._own.keys())
        self._listener: DiscoveryListener | None = None
        self._registry: RegistryConnection | None = None
        self._keeper: asyncio.Task[None] | None = None
        self._started = self._stopped = False
        self._renew_at = self._poll_at = self._sweep_at = self._settled_at = 0.0
        self._contested: set[str] = set()
        self._outage_since: float | None = None
        self._outage_reported = 0.0
        self._failures = 0
        """Failed attempts in a row (connecting, or a round of work)."""
        self._outages = self._notifications = self._polls = 0

    # ---- DiscoveryAgent ----

    def register_service(self, uri: str) -> None:
        """Advertise ``uri`` (called after ``start``: at the agent's next round)."""
        self._own[uri] = None
        self._renew_at = 0.0

    async def start(self, listener: DiscoveryListener | None) -> None:
        if self._started or self._stopped:
            raise RuntimeError(f"{self.name}: an agent starts once")
        self._started = True
        self._listener = listener
        try:
            async with asyncio.timeout(self._timeout_s):
                self._registry = await self._open()
                await self._work(self._registry)
        except REGISTRY_ERRORS as exc:
            await self._drop()
            raise OSError(
                f"{self.name}: cannot use the registry {self.options.registry}: {_reason(exc)}"
            ) from None
        self._keeper = asyncio.get_running_loop().create_task(
            self._keep(), name=f"ferrymq-fabric {self.name}"
        )
        log.info(
            "%s: %s group %r on %s%s",
            self.name,
            "listening to" if listener is not None else "registered in",
            self.options.group,
            self.options.registry,
            f" ({', '.join(self._own)})" if self._own else "",
        )

    async def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._listener = None
        keeper, self._keeper = self._keeper, None
        try:
            if keeper is not None:
                keeper.cancel()
                await asyncio.wait([keeper], timeout=STOP_WAIT_S)
                if not keeper.done():  # stuck in the driver: pull the connection from under it
                    await self._drop()
                    await asyncio.wait([keeper])
            if self._own and self._started:
                await self._deregister()
        finally:
            await self._drop()

    def service_failed(self, uri: str) -> None:
        if not self._stopped and self._started:
            hold_back(self._services, self._listener, uri, name=self.name)

    def statistics(self) -> FabricStatistics:
        return FabricStatistics(
            registry=self.options.registry,
            connected=self._registry is not None and not self._registry.closed,
            registered=tuple(self._own),
            services=tuple(self._services.announced()),
            outages=self._outages,
            notifications=self._notifications,
            polls=self._polls,
        )

    # ---- the keeper ----

    @property
    def _timeout_s(self) -> float:
        """How long one exchange with the registry may take: a lease (slower is no use)."""
        return self.options.lease_duration_ms / 1000

    async def _open(self) -> RegistryConnection:
        return await RegistryConnection.open(
            self.options.conninfo,
            self.options.group,
            application_name=f"ferrymq fabric {self.options.group}",
            timeout_ms=self.options.lease_duration_ms,
            listen=self._listener is not None,
        )

    async def _keep(self) -> None:
        """Renew, poll and listen for ever; through outages, reconnect with back-off."""
        loop = asyncio.get_running_loop()
        while True:
            try:
                if self._registry is None:
                    async with asyncio.timeout(self._timeout_s):
                        self._registry = await self._open()
                    self._reconnected(loop.time())
                await self._serve(self._registry)
            except REGISTRY_ERRORS as exc:
                self._failures += 1
                self._outage(exc, loop.time())
                await self._drop()
                back_off = ExponentialBackOff(FIRST_RETRY_MS, self._retry_cap_ms)
                await asyncio.sleep(back_off.delay_ms(self._failures) / 1000)

    @property
    def _retry_cap_ms(self) -> int:
        return max(FIRST_RETRY_MS, self.options.keep_alive_interval_ms)

    async def _serve(self, registry: RegistryConnection) -> None:
        loop = asyncio.get_running_loop()
        while True:
            async with asyncio.timeout(self._timeout_s):
                await self._work(registry)
            if self._outage_since is not None:
                self._recovered(loop.time())
            wait_s = max(0.0, self._next_due() - loop.time())
            if self._listener is None:
                await asyncio.sleep(wait_s)
                continue
            for notification in await registry.notifications(wait_s):
                self._notified(notification)

    def _next_due(self) -> float:
        due = [self._renew_at] if self._own else []
        if self._listener is not None:
            due.append(self._poll_at)
        return min(due, default=asyncio.get_running_loop().time() + self._retry_cap_ms / 1000)

    async def _work(self, registry: RegistryConnection) -> None:
        """What is due: renew (or register) the own services, read the group."""
        now = asyncio.get_running_loop().time()
        if self._own and now >= self._renew_at:
            self._renew_at = now + self.options.keep_alive_interval_ms / 1000
            await self._renew(registry, now)
        if self._listener is not None and now >= self._poll_at:
            self._poll_at = now + self.options.poll_interval_ms / 1000
            alive = await registry.alive(self.options.group)
            self._polls += 1
            self._listed(alive, asyncio.get_running_loop().time())

    async def _renew(self, registry: RegistryConnection, now: float) -> None:
        options = self.options
        own = list(self._own)
        renewed = await registry.renew(
            options.group, own, self.registrant, options.lease_duration_ms
        )
        missing = [uri for uri in own if uri not in renewed]
        if missing:
            registered, holders = await registry.register(
                options.group, missing, self.registrant, options.lease_duration_ms
            )
            for uri in sorted(registered):
                log.info(
                    "%s: registered %s (lease %d ms)", self.name, uri, options.lease_duration_ms
                )
            for uri, holder in holders.items():
                if uri not in self._contested:
                    log.warning(
                        "%s: %s is registered by %s, whose lease is alive; taking it over when "
                        "that lease ends",
                        self.name,
                        uri,
                        holder,
                    )
            self._contested = set(holders)
        if now >= self._sweep_at:
            self._sweep_at = now + options.lease_duration_ms / 1000
            await registry.sweep(options.group, SWEEP_AFTER_LEASES * options.lease_duration_ms)

    async def _deregister(self) -> None:
        """Delete the own rows (notifying the listeners), on the open connection or a new one;
        if the registry cannot be reached, they expire with their leases."""
        try:
            async with asyncio.timeout(self._timeout_s):
                registry = self._registry
                if registry is None or not registry.usable:
                    await self._drop()
                    registry = self._registry = await self._open()
                gone = await registry.deregister(self.options.group, self._own, self.registrant)
        except REGISTRY_ERRORS as exc:
            log.warning(
                "%s: cannot deregister %s (%s); listeners drop them when their leases end, "
                "within %d ms",
                self.name,
                ", ".join(self._own),
                _reason(exc),
                self.options.lease_duration_ms,
            )
            return
        log.info("%s: deregistered %s", self.name, ", ".join(gone) or "nothing (expired)")

    def _listed(self, alive: list[str], now: float) -> None:
        """A full listing of the group's live services: announce the new and the recovered
        ones and, once the view has settled (``_reconnected``), drop the ones it lacks."""
        for uri in alive:
            self._alive(uri, now)
        if now >= self._settled_at:
            for uri in [uri for uri in self._services.services if uri not in alive]:
                self._gone(uri)

    def _notified(self, notification: Notification) -> None:
        self._notifications += 1
        if notification.kind == "add":
            self._alive(notification.uri, asyncio.get_running_loop().time())
        else:
            self._gone(notification.uri)

    def _alive(self, uri: str, now: float) -> None:
        heard = self._services.alive(uri, now)
        if heard in (Heard.NEW, Heard.RECOVERED):
            again = " again" if heard is Heard.RECOVERED else ""
            log.info("%s: announcing %s%s", self.name, uri, again)
            tell(self._listener, uri, added=True, name=self.name)

    def _gone(self, uri: str) -> None:
        if self._services.dead(uri):
            log.info("%s: %s left the registry (deregistered, or its lease ended)", self.name, uri)
            tell(self._listener, uri, added=False, name=self.name)

    def _outage(self, exc: BaseException, now: float) -> None:
        """Log the first failure of an outage, and a reminder now and then while it lasts."""
        reason = _reason(exc)
        if self._outage_since is None:
            self._outage_since = self._outage_reported = now
            self._outages += 1
            log.warning(
                "%s: the registry %s failed: %s; retrying every %d ms at most (the brokers "
                "known stay known; own leases lapse after %d ms)",
                self.name,
                self.options.registry,
                reason,
                self._retry_cap_ms,
                self.options.lease_duration_ms,
            )
        elif now - self._outage_reported >= OUTAGE_REMINDER_S:
            self._outage_reported = now
            log.warning(
                "%s: the registry %s still fails after %.0f s (%d attempts): %s",
                self.name,
                self.options.registry,
                now - self._outage_since,
                self._failures,
                reason,
            )
        else:
            log.debug("%s: registry attempt %d failed: %s", self.name, self._failures, reason)

    def _reconnected(self, now: float) -> None:
        """A new connection after a failure: work at once, and since every lease may have
        lapsed meanwhile, remove nobody until the live brokers had a lease to renew theirs."""
        self._settled_at = now + self.options.lease_duration_ms / 1000
        self._renew_at = self._poll_at = now

    def _recovered(self, now: float) -> None:
        """The first round that worked after an outage."""
        since, self._outage_since = self._outage_since, None
        self._failures = 0
        if since is not None:
            log.info(
                "%s: the registry %s is back after %.1f s",
                self.name,
                self.options.registry,
                now - since,
            )

    async def _drop(self) -> None:
        registry, self._registry = self._registry, None
        if registry is not None:
            try:
                await registry.close()
            except REGISTRY_ERRORS as exc:
                log.debug("%s: closing the registry connection: %s", self.name, exc)


def _reason(exc: BaseException) -> str:
    """An error on one line (libpq's run over several); never the conninfo or a password."""
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def create_agent(agent_uri: AnyURI, url: str) -> FabricDiscoveryAgent:
    """The ``ferrymq.discovery_agents`` entry point for ``fabric``."""
    return FabricDiscoveryAgent(fabric_options(agent_uri, url=url, environ=os.environ))
