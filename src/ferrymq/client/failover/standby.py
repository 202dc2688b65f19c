"""Standby connections: ``backup`` (+ ``backupPoolSize``) and ``priorityBackup``.

``backup=true`` keeps ``backupPoolSize`` connections to other brokers of the list open, so a
failover takes one and needs no reconnect delay (reference §1.3 step 2). The broker accepts a
client-id only once, and a later network of brokers may enforce that across brokers, so:

* a connection *without* a client-id keeps full STOMP sessions (CONNECT done): a failover
  skips both the delay and the connect round trip;
* a connection *with* a client-id keeps only the TCP socket and sends CONNECT when it promotes
  it. The broker closes a socket that has not sent CONNECT after 30 s, so such a standby is
  replaced every ``refresh_s`` (20 s).

``priorityBackup=true``: while the current broker is not a priority one (``priorityURIs``, else
the first of the list), keep trying the priority brokers in order with the reconnect back-off
(``initialReconnectDelay``, ``backOffMultiplier``, ``maxReconnectDelay``), and as soon as one
accepts a connection ask the transport for a planned move to it (seed 000 §2.1.3). Any priority
broker will do (ActiveMQ's ``isPriority``): the client does not move from one priority broker
to another.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Final, Protocol

from ferrymq.client.errors import BrokerErrorFrame, BrokerURLError, ConnectFailedError
from ferrymq.client.failover.dialer import Dialer
from ferrymq.client.failover.link import Link, Role
from ferrymq.client.failover.policy import broker_key
from ferrymq.util.aio import wait_event

if TYPE_CHECKING:
    from ferrymq.util.uri import URI

log = logging.getLogger(__name__)

STANDBY_SOCKET_REFRESH_S: Final = 20.0
"""Below the broker's 30 s limit for a connection that has not sent CONNECT."""


class StandbyOwner(Protocol):
    """The failover transport, as the standby keeper sees it."""

    @property
    def current(self) -> Link | None:
        """The link writes go to (None while reconnecting): the broker standbys back up."""

    def request_switch(self, target: Link, reason: str) -> None:
        """Move to the standby ``target`` (a priority broker is back)."""


class StandbyKeeper:
    def __init__(self, owner: StandbyOwner, dialer: Dialer) -> None:
        self.owner = owner
        self.dialer = dialer
        self.refresh_s = STANDBY_SOCKET_REFRESH_S
        self._links: list[Link] = []
        self._switching: set[int] = set()
        self._wake = asyncio.Event()

    def __len__(self) -> int:
        return len(self._links)

    def wake(self) -> None:
        """Something changed (the current broker, the list, a standby died): look again."""
        self._wake.set()

    def candidates(self) -> list[Link]:
        """The standbys a failover should try, in order."""
        links = list(self._links)
        if self.dialer.options.randomize:
            self.dialer.rng.shuffle(links)
        return links

    def take(self, link: Link) -> bool:
        """Remove ``link`` from the pool for the caller to use; False if it was not there."""
        if link not in self._links:
            return False
        self._links.remove(link)
        self._switching.discard(id(link))
        self.wake()
        return True

    def drop(self, link: Link) -> None:
        """A standby that died or misbehaved."""
        if self.take(link):
            link.role = Role.RETIRED
            link.transport.abort()

    async def close(self) -> None:
        links, self._links = self._links, []
        for link in links:
            link.role = Role.RETIRED
            await link.transport.close()

    # ---- the keeper's loop, a task of the transport's supervisor ----

    async def run(self) -> None:
        failures = 0
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        while True:
            if task is not None and task.cancelling():
                # A cancellation an awaited library call swallowed (3.11) still ends the keeper.
                raise asyncio.CancelledError
            self._wake.clear()
            timeout: float | None = None
            current = self.owner.current
            if current is not None:
                await self._prune(current, loop.time())
                if await self._fill(current):
                    failures = 0
                    timeout = self._next_refresh(loop.time())
                else:
                    failures += 1
                    timeout = self.dialer.policy.back_off_ms(failures, startup=False) / 1000
            await wait_event(self._wake, timeout)

    async def _prune(self, current: Link, now: float) -> None:
        for link in list(self._links):
            stale = link.connected is None and now - link.opened_at >= self.refresh_s
            if (stale or link.key == current.key or link.lost.is_set()) and self.take(link):
                link.role = Role.RETIRED
                await link.transport.close()

    async def _fill(self, current: Link) -> bool:
        """Open what is missing; True when nothing is."""
        dialer = self.dialer
        policy = dialer.policy
        static = dialer.brokers.static
        complete = True
        if dialer.options.priority_backup and not policy.is_priority(current.uri, static):
            found = next((k for k in self._links if policy.is_priority(k.uri, static)), None)
            for uri in policy.priority_list(static):
                if found is not None:
                    break
                if broker_key(uri) != current.key:
                    found = await self._open(uri)
            if found is None:
                complete = False
            elif id(found) not in self._switching:
                self._switching.add(id(found))
                self.owner.request_switch(found, "a priority broker is back")
        if dialer.options.backup:
            wanted = dialer.options.backup_pool_size
            held = {link.key for link in self._links} | {current.key}
            uris = policy.connect_list(static, dialer.brokers.updated(), None, dialer.rng)
            others = [uri for uri in uris if broker_key(uri) != current.key]
            for uri in others:
                if len(self._links) >= wanted:
                    break
                if broker_key(uri) not in held:
                    held.add(broker_key(uri))
                    await self._open(uri)
            complete = complete and len(self._links) >= min(wanted, len(others))
        return complete

    async def _open(self, uri: URI) -> Link | None:
        socket_only = self.dialer.info.client_id is not None
        try:
            link = await self.dialer.connect_link(uri, socket_only=socket_only)
        except (ConnectFailedError, BrokerErrorFrame, BrokerURLError) as exc:
            log.debug("no standby connection to %s: %s", uri, exc)
            return None
        if link.lost.is_set() or self.owner.current is None:
            await link.transport.close()
            return None
        link.role = Role.STANDBY
        self._links.append(link)
        log.debug("standby connection to %s (socket only: %s)", link.url, socket_only)
        return link

    def _next_refresh(self, now: float) -> float | None:
        due = [link.opened_at + self.refresh_s for link in self._links if link.connected is None]
        return max(min(due) - now, 0.0) if due else None
