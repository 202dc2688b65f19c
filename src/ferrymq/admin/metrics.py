"""``/metrics``: the broker's figures in Prometheus' text exposition format 0.0.4.

prometheus_client writes the format (escaping, HELP and TYPE lines, Go float literals): a
``BrokerCollector`` turns one snapshot of ``AdminSource`` into metric families (its "custom
collector" API), and ``render_metrics`` exposes them with the client's process and platform
collectors on a private registry, never the library's global one, so two brokers in one process
do not mix their figures.  Every family is present even without samples, so a dashboard can
tell "no queue yet" from "metric missing".  Metric names are part of the user interface
(dashboards and alerts use them): rename none.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

from ferrymq.admin.broker_connections import broker_connection_families
from ferrymq.admin.health import ROLES, assess
from ferrymq.admin.network_metrics import network_bridge_families
from ferrymq.admin.source import ConnectionStatistics
from ferrymq.core.statistics import DestinationStatistics

CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"
"""What ``generate_latest`` writes (newer Prometheus servers also read format 1.0.0)."""

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
        "Messages not yet acknowledged: waiting, paged out to the store, or in flight.",
        lambda d: d.depth,
    ),
    DestinationMetric(
        "ferrymq_destination_pending",
        GAUGE,
        "Messages not yet dispatched to any consumer (waiting in memory or paged out): how far "
        "the consumers lag behind the producers.",
        lambda d: max(d.depth - d.in_flight, 0),
    ),
    DestinationMetric(
        "ferrymq_destination_paged_out",
        GAUGE,
        "Messages of the destination kept only in the store (memory above the cursor limit).",
        lambda d: d.paged_out,
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
    BrokerMetric(
        "ferrymq_master_terms_total",
        COUNTER,
        "Times this broker became master (or started serving, standalone).",
        ("master_terms",),
    ),
)

MIRROR_TARGET_METRICS: Final = (
    BrokerMetric(
        "ferrymq_mirror_target_sends_total",
        COUNTER,
        "Mirrored sends stored here as another broker's mirror target.",
        ("mirror_target", "sends"),
    ),
    BrokerMetric(
        "ferrymq_mirror_target_duplicates_total",
        COUNTER,
        "Mirrored sends already here (resent, or back round a ring).",
        ("mirror_target", "duplicates"),
    ),
    BrokerMetric(
        "ferrymq_mirror_target_events_total",
        COUNTER,
        "Mirrored queue and address events (create, delete) applied here.",
        ("mirror_target", "events"),
    ),
    BrokerMetric(
        "ferrymq_mirror_target_acks_total",
        COUNTER,
        "Mirrored acks received here.",
        ("mirror_target", "acks"),
    ),
    BrokerMetric(
        "ferrymq_mirror_target_acks_retried_total",
        COUNTER,
        "Mirrored acks tried again: their message was not here yet.",
        ("mirror_target", "acks_retried"),
    ),
    BrokerMetric(
        "ferrymq_mirror_target_acks_given_up_total",
        COUNTER,
        "Mirrored acks dropped: their message never came.",
        ("mirror_target", "acks_given_up"),
    ),
)
"""What other brokers' mirrors applied here (the broker document's ``mirror_target``)."""

DESTINATION_LABELS: Final = ("type", "name")


def family(name: str, type_: str, help_: str, labels: Sequence[str] = ()) -> Metric:
    """An empty family of ``type_``; a counter's name keeps its ``_total`` in the exposition."""
    if type_ == COUNTER:
        return CounterMetricFamily(name, help_, labels=labels)
    return GaugeMetricFamily(name, help_, labels=labels)


def add_sample(metric: Metric, labels: Sequence[str], value: float) -> None:
    if isinstance(metric, CounterMetricFamily | GaugeMetricFamily):
        metric.add_metric(list(labels), value)


class BrokerCollector:
    """A prometheus_client collector over one snapshot of a broker (taken by the caller, so
    every family describes the same moment)."""

    def __init__(
        self,
        statistics: Mapping[str, Any],
        destinations: Iterable[DestinationStatistics],
        connections: Iterable[ConnectionStatistics] = (),
    ) -> None:
        self.statistics = statistics
        self.destinations = sorted(
            destinations, key=lambda d: (d.destination.type.value, d.destination.name)
        )
        self.connections = list(connections)

    def collect(self) -> Iterator[Metric]:
        yield from self._destination_families()
        yield from self._broker_families()
        yield from self._role_families()
        yield self._listener_family()
        yield from self._protocol_families()
        yield from network_bridge_families(self.statistics, self.destinations)
        yield from broker_connection_families(self.statistics)

    def _destination_families(self) -> Iterator[Metric]:
        for metric in DESTINATION_METRICS:
            found = family(metric.name, metric.type, metric.help, DESTINATION_LABELS)
            for stats in self.destinations:
                labels = (stats.destination.type.value, stats.destination.name)
                add_sample(found, labels, metric.value(stats))
            yield found

    def _broker_families(self) -> Iterator[Metric]:
        for metric in (*BROKER_METRICS, *MIRROR_TARGET_METRICS):
            found = family(metric.name, metric.type, metric.help)
            value = _lookup(self.statistics, metric.path)
            if value is not None:
                add_sample(found, (), value * metric.scale)
            yield found

    def _role_families(self) -> Iterator[Metric]:
        health = assess(self.statistics)
        role = GaugeMetricFamily(
            "ferrymq_role",
            "The broker's master/slave role: 1 for the current one, 0 for the others.",
            labels=["role"],
        )
        for known in sorted({*ROLES, health.role}):
            role.add_metric([known], 1 if known == health.role else 0)
        yield role
        yield GaugeMetricFamily(
            "ferrymq_serving",
            "1 while the broker serves clients (GET /health answers 200), else 0.",
            value=1 if health.serving else 0,
        )

    def _listener_family(self) -> Metric:
        listeners = GaugeMetricFamily(
            "ferrymq_listener_connections",
            "Open connections per transport connector (listener), by its name.",
            labels=["listener"],
        )
        counts = Counter(connection.connector for connection in self.connections)
        for listener in self.statistics.get("listeners") or ():
            if isinstance(listener, Mapping) and listener.get("name") is not None:
                counts.setdefault(str(listener["name"]), 0)
        for name in sorted(counts):
            listeners.add_metric([name], counts[name])
        return listeners

    def _protocol_families(self) -> Iterator[Metric]:
        connections = GaugeMetricFamily(
            "ferrymq_protocol_connections",
            "Open connections by wire protocol (STOMP, AMQP).",
            labels=["protocol"],
        )
        counts = Counter(connection.protocol for connection in self.connections)
        for name in sorted(counts):
            connections.add_metric([name], counts[name])
        yield connections
        links = GaugeMetricFamily(
            "ferrymq_links",
            "Open links (AMQP 1.0) by protocol and the broker's role: sender (a consumer's "
            "link) or receiver (a producer's, or the transaction coordinator's).",
            labels=["protocol", "role"],
        )
        roles = Counter(
            (connection.protocol, link.role)
            for connection in self.connections
            for link in connection.links
        )
        for (protocol, role), count in sorted(roles.items()):
            links.add_metric([protocol, role], count)
        yield links


PROCESS_COLLECTOR: Final = ProcessCollector(registry=None)
"""``process_*``: CPU seconds, resident and virtual memory, open file descriptors, start time."""
PLATFORM_COLLECTOR: Final = PlatformCollector(registry=None)
"""``python_info``: the interpreter's version and implementation."""


def render_metrics(
    statistics: Mapping[str, Any],
    destinations: Iterable[DestinationStatistics],
    connections: Iterable[ConnectionStatistics] = (),
    *,
    process: bool = True,
) -> str:
    """The exposition text for one snapshot (``process``: with this process's own metrics)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(BrokerCollector(statistics, destinations, connections))
    if process:
        registry.register(PROCESS_COLLECTOR)
        registry.register(PLATFORM_COLLECTOR)
    return generate_latest(registry).decode()


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
