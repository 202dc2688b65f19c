"""``GET /health``: whether this broker serves clients, for container and systemd probes.

A probe needs one bit (route clients here or not) and a person needs the reason, so the answer
is both: HTTP 200 only while the broker serves clients, 503 otherwise, and a JSON body with the
state and why.  The state comes from the broker's role (``ferrymq.broker.Role``, passed as its
string value under ``role`` in ``AdminSource.statistics()``).  The admin package may not import
the broker, so each role value is mapped here by name, and a role this table does not know is
reported as ``unknown`` and not serving: a broker that cannot say what it does gets no clients.

A slave is alive and doing its job, yet must not get clients.  ``?slave_ok=1`` answers 200 for
a slave too, so one endpoint serves both questions an orchestrator asks: "send it clients?"
(readiness, plain ``/health``) and "is the process fine, or restart it?" (liveness,
``/health?slave_ok=1``).

A probe needs no login, and a stranger learns only the state: the reason names lock paths,
database hosts and the master's URL, so it is for a logged-in user (or every caller of a broker
without authentication), as is the broker's name and id.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from ferrymq.admin.routing import HttpError, Request, Response, Route, json_response
from ferrymq.admin.source import AdminSource


class HealthState(enum.Enum):
    SERVING = "serving"
    """Standalone or master, started: clients are served."""
    SLAVE = "slave"
    """A healthy slave: waiting for the lock, or replicating its master."""
    STARTING = "starting"
    """On its way to serving: opening its store, or a master waiting for its slave."""
    FAILED = "failed"
    STOPPING = "stopping"
    UNKNOWN = "unknown"
    """A role this version of the admin API does not know; treated as not serving."""


@dataclass(frozen=True, slots=True)
class Health:
    state: HealthState
    role: str
    reason: str

    @property
    def serving(self) -> bool:
        return self.state is HealthState.SERVING

    def passes(self, *, slave_ok: bool) -> bool:
        """Whether a probe passes: serving, or (when the probe accepts one) a healthy slave."""
        return self.serving or (slave_ok and self.state is HealthState.SLAVE)


Assess = Callable[[Mapping[str, Any]], Health]


def _serving(role: str, what: str) -> Assess:
    def assess(statistics: Mapping[str, Any]) -> Health:
        # The service reports an uptime of 0 until its store is open and its listeners bound
        # (a standalone broker has that role while it recovers its store).
        if statistics.get("uptime_s", 1) == 0:
            return Health(HealthState.STARTING, role, "opening its store and listeners")
        return Health(HealthState.SERVING, role, what)

    return assess


def _waiting_for_lock(statistics: Mapping[str, Any]) -> Health:
    role = "waiting for lock"
    lock = statistics.get("lock") or {}
    resource = lock.get("resource") or "its store"
    if lock.get("held"):
        reason = f"holds the lock on {resource} and is opening its store"
        return Health(HealthState.STARTING, role, reason)
    holder = lock.get("current_holder")
    held_by = f" (held by {holder})" if holder else ""
    reason = f"waiting for the lock on {resource}{held_by}; takes over when the master goes"
    return Health(HealthState.SLAVE, role, reason)


def _replicating(statistics: Mapping[str, Any]) -> Health:
    replication = statistics.get("replication") or {}
    master = replication.get("master") or "its master"
    link = "attached" if replication.get("attached") else "connecting"
    reason = f"replicating from {master} ({link}); takes over when the master goes"
    return Health(HealthState.SLAVE, "replicating", reason)


def _fixed(state: HealthState, role: str, reason: str) -> Assess:
    def assess(statistics: Mapping[str, Any]) -> Health:
        failure = statistics.get("failure")
        return Health(state, role, failure if isinstance(failure, str) and failure else reason)

    return assess


ROLES: Final[Mapping[str, Assess]] = {
    "standalone": _serving("standalone", "serving clients (no master/slave group)"),
    "master": _serving("master", "serving clients as the master of its group"),
    "waiting for lock": _waiting_for_lock,
    "replicating": _replicating,
    "waiting for slave": _fixed(
        HealthState.STARTING,
        "waiting for slave",
        "waiting for its slave to be in sync (waitForSlave); clients are refused until then",
    ),
    "starting": _fixed(HealthState.STARTING, "starting", "starting"),
    "failed": _fixed(HealthState.FAILED, "failed", "the broker failed; see its log"),
    "stopping": _fixed(HealthState.STOPPING, "stopping", "the broker is stopping"),
    "stopped": _fixed(HealthState.STOPPING, "stopped", "the broker is stopping"),
}
"""Every role value of ``ferrymq.broker.Role``, by name (a test keeps the two in step)."""


def assess(statistics: Mapping[str, Any]) -> Health:
    """The health of the broker whose statistics these are.  A source without a role is a
    plain broker service, which has no master/slave group: standalone."""
    role = str(statistics.get("role", "standalone"))
    found = ROLES.get(role)
    if found is None:
        reason = f"the broker reports role {role!r}, which this admin API does not know"
        return Health(HealthState.UNKNOWN, role, reason)
    return found(statistics)


def health_document(statistics: Mapping[str, Any], health: Health) -> dict[str, Any]:
    return {
        "broker": statistics.get("name"),
        "id": statistics.get("id"),
        "state": health.state.value,
        "serving": health.serving,
        "role": health.role,
        "reason": health.reason,
    }


_TRUE: Final = frozenset({"1", "true", "yes"})
_FALSE: Final = frozenset({"0", "false", "no", ""})


def _flag(query: Mapping[str, str], name: str) -> bool:
    value = query.get(name)
    if value is None or value.lower() in _FALSE:
        return False
    if value.lower() in _TRUE:
        return True
    raise HttpError(400, f"{name}={value!r}: use {name}=1 or {name}=0")


def get_health(source: AdminSource, request: Request) -> Response:
    slave_ok = _flag(request.query, "slave_ok")
    statistics = source.statistics()
    health = assess(statistics)
    status = 200 if health.passes(slave_ok=slave_ok) else 503
    if not request.identified:
        return json_response({"state": health.state.value, "serving": health.serving}, status)
    return json_response(health_document(statistics, health), status)


HEALTH_ROUTE: Final = Route("/health", get_health)
