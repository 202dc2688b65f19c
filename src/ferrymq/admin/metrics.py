"""Prometheus text exposition format 0.0.4, rendered from a statistics snapshot.

``render_metrics`` is a pure function of what ``AdminSource`` returns, so the output can be
checked without a server.  Format rules from Prometheus' "Exposition formats" page, section
"Text format details": one ``# HELP`` and one ``# TYPE`` line per metric family, before its
samples; label values escape backslash, double quote and line feed; HELP text escapes backslash
and line feed; values are Go float literals (``+Inf``, ``-Inf``, ``NaN``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from ferrymq.core.statistics import DestinationStatistics

CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"

GAUGE: Final = "gauge"
COUNTER: Final = "counter"


@dataclass(frozen=True, slots=True)
class BrokerMetric:
    name: str
    type: str
    help: str
    path: tuple[str, ...]
    """Where the value sits in ``BrokerService.statistics()``."""
    scale: float = 1.0
    """Multiplier to the metric's base unit (milliseconds to seconds is 0.001)."""


@dataclass(frozen=True, slots=True)
class DestinationMetric:
    name: str
    type: str
    help: str
    value: Callable[[DestinationStatistics], int]


DESTINATION_METRICS: Final = (
    DestinationMetric(
        "ferrymq_destination_depth",
        GAUGE,
        "Messages waiting on the destination, in memory or paged out to the store.",
        lambda d: d.depth,
    ),
    DestinationMetric(
        "ferrymq_destination_enqueued_total",
        COUNTER,
        "Messages sent to the destination.",
        lambda d: d.enqueued,
    ),
    DestinationMetric(
        "ferrymq_destination_dequeued_total",
        COUNTER,
        "Messages acknowledged by consumers (removed from the destination).",
        lambda d: d.dequeued,
    ),
    DestinationMetric(
        "ferrymq_destination_dispatched_total",
        COUNTER,
        "Messages dispatched to consumers, redeliveries included.",
        lambda d: d.dispatched,
    ),
    DestinationMetric(
        "ferrymq_destination_expired_total",
        COUNTER,
        "Messages that expired before they were consumed.",
        lambda d: d.expired,
    ),
    DestinationMetric(
        "ferrymq_destination_consumers",
        GAUGE,
        "Consumers subscribed to the destination.",
        lambda d: d.consumers,
    ),
    DestinationMetric(
        "ferrymq_destination_in_flight",
        GAUGE,
        "Messages dispatched and not yet acknowledged.",
        lambda d: d.in_flight,
    ),
)

BROKER_METRICS: Final = (
    BrokerMetric("ferrymq_connections", GAUGE, "Open client connections.", ("connections",)),
    BrokerMetric(
        "ferrymq_memory_used_bytes", GAUGE, "Memory used by messages.", ("memory", "used")
    ),
    BrokerMetric(
        "ferrymq_memory_limit_bytes", GAUGE, "The memory usage limit.", ("memory", "limit")
    ),
    BrokerMetric(
        "ferrymq_store_used_bytes", GAUGE, "Persistent store space used.", ("store", "used")
    ),
    BrokerMetric(
        "ferrymq_store_limit_bytes", GAUGE, "The persistent store limit.", ("store", "limit")
    ),
    BrokerMetric("ferrymq_temp_used_bytes", GAUGE, "Temporary store space used.", ("temp", "used")),
    BrokerMetric(
        "ferrymq_temp_limit_bytes", GAUGE, "The temporary store limit.", ("temp", "limit")
    ),
    BrokerMetric(
        "ferrymq_store_commits_total",
        COUNTER,
        "Store commits (one commit serves every write that arrived meanwhile).",
        ("store", "commits"),
    ),
    BrokerMetric(
        "ferrymq_store_commit_seconds_total",
        COUNTER,
        "Wall time spent in store commits, fsync included.",
        ("store", "total_commit_ms"),
        0.001,
    ),
    BrokerMetric(
        "ferrymq_store_last_commit_seconds",
        GAUGE,
        "Wall time of the most recent store commit, fsync included.",
        ("store", "last_commit_ms"),
        0.001,
    ),
    BrokerMetric(
        "ferrymq_duplicates_suppressed_total",
        COUNTER,
        "Messages recognised as duplicates and not stored again.",
        ("duplicates_suppressed",),
    ),
    BrokerMetric(
        "ferrymq_uptime_seconds", GAUGE, "Seconds since the broker started.", ("uptime_s",)
    ),
)


def escape_label_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)


def render_metrics(
    statistics: Mapping[str, Any], destinations: Iterable[DestinationStatistics]
) -> str:
    """The exposition text for one snapshot; every family is present, even without samples."""
    lines: list[str] = []
    ordered = sorted(destinations, key=lambda d: (d.destination.type.value, d.destination.name))
    labels = [
        f'{{type="{d.destination.type.value}",name="{escape_label_value(d.destination.name)}"}}'
        for d in ordered
    ]
    for metric in DESTINATION_METRICS:
        _family_header(lines, metric.name, metric.type, metric.help)
        for label, stats in zip(labels, ordered, strict=True):
            lines.append(f"{metric.name}{label} {format_value(metric.value(stats))}")
    for broker_metric in BROKER_METRICS:
        _family_header(lines, broker_metric.name, broker_metric.type, broker_metric.help)
        value = _lookup(statistics, broker_metric.path)
        if value is not None:
            if broker_metric.scale != 1.0:
                value = value * broker_metric.scale
            lines.append(f"{broker_metric.name} {format_value(value)}")
    lines.append("")
    return "\n".join(lines)


def _family_header(lines: list[str], name: str, type_: str, help_: str) -> None:
    lines.append(f"# HELP {name} {escape_help(help_)}")
    lines.append(f"# TYPE {name} {type_}")


def _lookup(statistics: Mapping[str, Any], path: tuple[str, ...]) -> float | None:
    """The number at ``path``; None when absent (a source without that figure omits the sample)."""
    value: Any = statistics
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value
