"""The network bridges' metric families: state, messages forwarded, and the backlog behind them.

They read the same plain bridge records as ``network_bridges`` (camelCase, under
``network_bridges`` in ``AdminSource.statistics()``).  A bridge is named by its connector and
the remote URI, since one connector (``static:(a,b)``, discovery) makes one bridge per broker.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from ferrymq.admin.network_bridges import STATISTICS_KEY
from ferrymq.core.destination import Destination, DestinationError, DestinationPattern
from ferrymq.core.statistics import DestinationStatistics

BRIDGE_STATES: Final = ("connecting", "started", "stopped")
"""``NetworkBridge.state`` values; a value not listed here still gets its own sample."""
OUTBOUND: Final = "outbound"
"""The direction that takes this broker's messages to the remote broker."""


def network_bridge_families(
    statistics: Mapping[str, Any], destinations: Sequence[DestinationStatistics]
) -> Iterator[Metric]:
    records: Iterable[Mapping[str, Any]] = statistics.get(STATISTICS_KEY) or ()
    bridges = sorted(records, key=lambda r: (str(r.get("name")), str(r.get("uri"))))
    state = GaugeMetricFamily(
        "ferrymq_network_bridge_state",
        "A network bridge's state: 1 for the current one, 0 for the others.",
        labels=["connector", "uri", "state"],
    )
    forwarded = CounterMetricFamily(
        "ferrymq_network_bridge_forwarded",
        "Messages a network bridge forwarded, per direction (inbound only for a duplex bridge).",
        labels=["connector", "uri", "direction"],
    )
    demand = GaugeMetricFamily(
        "ferrymq_network_bridge_demand_subscriptions",
        "Demand subscriptions of a network bridge direction (remote consumers it forwards for).",
        labels=["connector", "uri", "direction"],
    )
    lag = GaugeMetricFamily(
        "ferrymq_network_bridge_lag_messages",
        "Messages not yet acknowledged on this broker's destinations that the bridge has "
        "demand for (local consumers' messages included): the backlog the bridge works off.",
        labels=["connector", "uri"],
    )
    for bridge in bridges:
        name, uri = str(bridge.get("name")), str(bridge.get("uri"))
        current = str(bridge.get("state"))
        for known in sorted({*BRIDGE_STATES, current}):
            state.add_metric([name, uri, known], 1 if known == current else 0)
        directions: Iterable[Mapping[str, Any]] = bridge.get("directions") or ()
        for direction in directions:
            labels = [name, uri, str(direction.get("direction"))]
            forwarded.add_metric(labels, direction.get("forwarded", 0))
            demand.add_metric(labels, len(direction.get("demandSubscriptions") or ()))
        lag.add_metric([name, uri], _backlog(directions, destinations))
    yield from (state, forwarded, demand, lag)


def _backlog(
    directions: Iterable[Mapping[str, Any]], destinations: Sequence[DestinationStatistics]
) -> int:
    """The depth of every local destination an outbound demand subscription matches (a
    wildcard demand matches many), each counted once."""
    patterns: list[DestinationPattern] = []
    for direction in directions:
        if direction.get("direction") != OUTBOUND:
            continue
        for subscription in direction.get("demandSubscriptions") or ():
            try:
                patterns.append(
                    DestinationPattern(
                        Destination.parse_qualified(str(subscription.get("destination")))
                    )
                )
            except DestinationError:
                continue
    return sum(
        stats.depth
        for stats in destinations
        if any(pattern.matches(stats.destination) for pattern in patterns)
    )
