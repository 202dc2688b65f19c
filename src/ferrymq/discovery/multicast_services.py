"""What a multicast (or zeroconf) agent knows about the services it hears, decided without I/O.

ActiveMQ's ``brokersByService`` and ``RemoteBrokerData`` (reference §3.4): a service is
announced when first heard, expires when unheard for ten keep-alive intervals, leaves at once
on a ``dead`` datagram, and after ``service_failed`` is held back until its recovery time, when
its next heartbeat announces it again. Time comes in as an argument (seconds, monotonic), and
each method returns what the agent must tell its listener.

One deliberate difference: with ``useExponentialBackOff`` ActiveMQ waits
``backOffMultiplier ** failures`` *milliseconds* (2, 4, 8 ms... with the defaults: no back-off
at all); FerryMQ waits ``initialReconnectDelay * backOffMultiplier ** (failures - 1)``, the
static agent's and the failover transport's rule. Both cap the wait at ``maxReconnectDelay``
(ActiveMQ only with exponential back-off).

The zeroconf agent keeps its services in the same table, so ``service_failed`` means the same
for both: it reports each service it sees alive as a heartbeat and each one whose mDNS records
went away as ``dead``; its records' TTL does the expiring, so it never calls ``expire``.
"""

from __future__ import annotations

import enum
from collections.abc import Collection
from dataclasses import dataclass
from typing import Final, Protocol

from ferrymq.util.backoff import BackOffOptions, ExponentialBackOff

FAILURE_MEMORY_S: Final = 60.0
"""A service heard this long after its last recovery starts again from its first failure
(ActiveMQ's ``updateHeartBeat``)."""


class HoldBackOptions(BackOffOptions, Protocol):
    """What the table reads of an agent's options (``MulticastOptions``, ``ZeroconfOptions``):
    the back-off's four, and these."""

    @property
    def expiry_ms(self) -> int: ...
    @property
    def max_reconnect_attempts(self) -> int: ...


class Heard(enum.Enum):
    """What an ``alive`` datagram means."""

    OWN = enum.auto()
    """One of this agent's own services: a broker must not discover itself."""
    NEW = enum.auto()
    """First heard: announce it, and advertise our own at once so it hears us soon too."""
    RECOVERED = enum.auto()
    """Failed, and its wait is over: announce it again."""
    KNOWN = enum.auto()
    """Nothing to tell."""


@dataclass(slots=True)
class RemoteService:
    uri: str
    last_heard: float
    failed: bool = False
    """Held back after ``service_failed`` (removed from the listener's view)."""
    failures: int = 0
    recovery_at: float = 0.0


class RemoteServices:
    def __init__(self, options: HoldBackOptions, own: Collection[str]) -> None:
        self.options = options
        # maxReconnectDelay bounds every hold-back: ActiveMQ's agent caps its grown waits at
        # it; FerryMQ caps the first one too, so a failed service is back within it at most.
        self._back_off = ExponentialBackOff.of(options, cap_initial=True)
        self.own = own
        """The agent's registered services (a live view): never announced, never removed."""
        self.services: dict[str, RemoteService] = {}

    def announced(self) -> list[str]:
        """The services the listener has been told about and not told to forget."""
        return [s.uri for s in self.services.values() if not s.failed]

    def alive(self, uri: str, now: float) -> Heard:
        if uri in self.own:
            return Heard.OWN
        service = self.services.get(uri)
        if service is None:
            self.services[uri] = RemoteService(uri, now)
            return Heard.NEW
        service.last_heard = now
        if not service.failed:
            if service.failures and now - service.recovery_at > FAILURE_MEMORY_S:
                service.failures = 0
            return Heard.KNOWN
        attempts = self.options.max_reconnect_attempts
        if (attempts and service.failures > attempts) or now < service.recovery_at:
            return Heard.KNOWN
        service.failed = False
        return Heard.RECOVERED

    def dead(self, uri: str) -> bool:
        """A ``dead`` datagram; True if the listener must forget ``uri``."""
        if uri in self.own:
            return False
        service = self.services.pop(uri, None)
        return service is not None and not service.failed

    def expire(self, now: float) -> list[str]:
        """Forget the services unheard for ten keep-alive intervals; those the listener must
        forget too."""
        deadline = now - self.options.expiry_ms / 1000
        gone = [s for s in self.services.values() if s.last_heard < deadline]
        for service in gone:
            del self.services[service.uri]
        return [s.uri for s in gone if not s.failed]

    def failed(self, uri: str, now: float) -> bool:
        """The listener lost ``uri``; True if it must forget it (until it recovers)."""
        service = self.services.get(uri)
        if service is None or service.failed:
            return False
        service.failed = True
        service.failures += 1
        service.recovery_at = now + self.recovery_delay_ms(service.failures) / 1000
        return True

    def recovery_delay_ms(self, failures: int) -> int:
        """How long a service that failed ``failures`` times in a row is held back."""
        return self._back_off.delay_ms(failures)
