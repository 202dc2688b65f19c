"""What a listening fabric agent has told its listener, reconciled with the registry, decided
without I/O.

The registry says which services hold an unexpired lease in the group: a full listing on every
poll, and a notification whenever one registers or leaves. Each method takes what the agent
learnt (and the time, in monotonic seconds) and returns what to tell the listener. The rules:

* A service listed alive, or notified as registered, is announced, unless it is one of the
  agent's own (a broker never discovers itself) or is held back.
* A service notified as deregistered (a clean stop) is removed at once. One missing from a
  listing (deregistered, or its lease expired) is removed too, but only once the agent's view
  is *settled*: right after the registry came back from an outage, every lease may have lapsed
  meanwhile, and the live brokers need one lease to renew theirs; until then a listing only
  adds, so an outage of the registry never empties a client's broker list or tears down a
  network connector's bridges.
* ``service_failed`` removes the service and holds it back for the recovery delay (the
  multicast agent's rule, ``FabricOptions.hold_back_ms``); the first listing after that,
  if the service is still alive, announces it again. After ``maxReconnectAttempts`` failures
  it stays held until it leaves the registry and comes back. A service that went
  ``FAILURE_MEMORY_S`` without failing starts again from its first failure.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Final

from ferrymq.discovery.fabric_options import FabricOptions

FAILURE_MEMORY_S: Final = 60.0
"""A service listed this long after its last recovery starts again from its first failure
(as the multicast agent, after ActiveMQ's ``updateHeartBeat``)."""


@dataclass(slots=True)
class ListedService:
    uri: str
    held: bool = False
    """Removed after ``service_failed``, not announced again yet."""
    failures: int = 0
    recovery_at: float = 0.0


@dataclass(frozen=True, slots=True)
class Changes:
    """What to tell the listener."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()


class RegistryServices:
    def __init__(self, options: FabricOptions, own: Collection[str]) -> None:
        self.options = options
        self.own = own
        """The agent's registered services (a live view): never announced."""
        self.services: dict[str, ListedService] = {}
        """Every service the registry lists alive, as far as the agent knows, held ones too."""

    def announced(self) -> list[str]:
        """The services the listener has been told about and not told to forget."""
        return [s.uri for s in self.services.values() if not s.held]

    def listed(self, alive: Collection[str], now: float, *, settled: bool) -> Changes:
        """A full listing of the group's unexpired services."""
        added = [uri for uri in alive if self._seen(uri, now)]
        removed: list[str] = []
        if settled:
            for uri in [uri for uri in self.services if uri not in alive]:
                if not self.services.pop(uri).held:
                    removed.append(uri)
        return Changes(tuple(added), tuple(removed))

    def registered(self, uri: str, now: float) -> bool:
        """A notification that ``uri`` registered; True if the listener must hear of it."""
        return self._seen(uri, now)

    def deregistered(self, uri: str) -> bool:
        """A notification that ``uri`` left the registry; True if the listener must forget it."""
        service = self.services.pop(uri, None)
        return service is not None and not service.held

    def failed(self, uri: str, now: float) -> bool:
        """The listener lost ``uri``; True if it must forget it (until it recovers)."""
        service = self.services.get(uri)
        if service is None or service.held:
            return False
        service.held = True
        service.failures += 1
        service.recovery_at = now + self.options.hold_back_ms(service.failures) / 1000
        return True

    def _seen(self, uri: str, now: float) -> bool:
        """``uri`` is alive in the registry; True if the listener must hear of it (again)."""
        if uri in self.own:
            return False
        service = self.services.get(uri)
        if service is None:
            self.services[uri] = ListedService(uri)
            return True
        if not service.held:
            if service.failures and now - service.recovery_at > FAILURE_MEMORY_S:
                service.failures = 0
            return False
        attempts = self.options.max_reconnect_attempts
        if (attempts and service.failures > attempts) or now < service.recovery_at:
            return False
        service.held = False
        return True
