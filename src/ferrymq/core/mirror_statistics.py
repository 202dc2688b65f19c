"""What the target side of Artemis's mirror applied, per broker (``RegionBroker``).

The AMQP adapter's mirror links count into it (``adapters.amqp.mirror_target``) and the admin
API reads it (``GET /api/v1/broker`` under ``mirror_target``, ``/metrics``), so it lives below
both. A broker that never served a mirror link has none (``peek`` is None): a plain broker's
document and metrics do not grow a section it cannot fill.
"""

from __future__ import annotations

import weakref
from dataclasses import asdict, dataclass

from ferrymq.core.region import RegionBroker

__all__ = ["MirrorStatistics", "peek", "statistics_for"]


@dataclass(slots=True)
class MirrorStatistics:
    sends: int = 0
    """Mirrored sends stored."""
    duplicates: int = 0
    """Mirrored sends already here (a resend after a reconnect, or back round a ring)."""
    events: int = 0
    """Queue and address events (create, delete)."""
    acks: int = 0
    """Acks received (``postAck``)."""
    acks_retried: int = 0
    """Acks that found no message at first and were tried again."""
    acks_given_up: int = 0
    """Acks dropped after their retries found no message (Artemis warns only when asked)."""

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


_STATISTICS: weakref.WeakKeyDictionary[RegionBroker, MirrorStatistics] = weakref.WeakKeyDictionary()


def statistics_for(region: RegionBroker) -> MirrorStatistics:
    """The counters of ``region``'s mirror links since the broker started (made on first use)."""
    statistics = _STATISTICS.get(region)
    if statistics is None:
        statistics = _STATISTICS[region] = MirrorStatistics()
    return statistics


def peek(region: RegionBroker) -> MirrorStatistics | None:
    """The counters, if a mirror link ever attached to this broker."""
    return _STATISTICS.get(region)
