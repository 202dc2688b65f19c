"""The network bridges of a broker as the admin API shows them (issue 5 "Observability").

The broker passes each bridge's ``NetworkBridge.statistics()`` record through
``AdminSource.statistics()`` under ``network_bridges`` as plain data, the way it passes its
master/slave role, so this package needs no import of the network layer.  Those records use
ActiveMQ's camelCase names (``remoteBrokerId``, ``demandSubscriptions``); the documents built
here use the admin API's own snake_case and its ``{"type", "name"}`` destination references.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from ferrymq.core.destination import Destination, DestinationError

STATISTICS_KEY: Final = "network_bridges"
"""Where ``AdminSource.statistics()`` carries the bridge records."""


def _destination(qualified: str) -> dict[str, str]:
    try:
        destination = Destination.parse_qualified(qualified)
    except DestinationError:
        return {"type": "unknown", "name": qualified}
    return {"type": destination.type.value, "name": destination.name}


def demand_document(demand: Mapping[str, Any]) -> dict[str, Any]:
    """One demand subscription: the remote consumers of one destination (one per consumer
    without conduitSubscriptions) that the bridge forwards for."""
    return {
        "destination": _destination(str(demand["destination"])),
        "selector": demand.get("selector"),
        "consumers": demand.get("consumers", 0),
        "priority": demand.get("priority", 0),
        "static": bool(demand.get("static", False)),
        "broker_path": list(demand.get("brokerPath", ())),
        "forwarded": demand.get("forwarded", 0),
    }


def direction_document(direction: Mapping[str, Any]) -> dict[str, Any]:
    """One way of a bridge (``outbound``: this broker to the remote one; ``inbound``: the
    reverse way of a duplex bridge)."""
    return {
        "direction": direction["direction"],
        "from": direction["from"],
        "to": direction["to"],
        "forwarded": direction.get("forwarded", 0),
        "demand_subscriptions": [
            demand_document(d) for d in direction.get("demandSubscriptions", ())
        ],
    }


def network_bridge_document(bridge: Mapping[str, Any]) -> dict[str, Any]:
    directions = [direction_document(d) for d in bridge.get("directions", ())]
    started_at = bridge.get("startedAt")
    return {
        "connector": bridge["name"],
        "uri": bridge.get("uri"),
        "state": bridge.get("state"),
        "duplex": bool(bridge.get("duplex", False)),
        # "remote": the other broker's duplex connector opened it (this broker has no
        # connector of its own for it).
        "initiated_by": bridge.get("initiatedBy", "local"),
        "local_broker": {"name": bridge.get("localBrokerName"), "id": bridge.get("localBrokerId")},
        "remote_broker": {
            "name": bridge.get("remoteBrokerName"),
            "id": bridge.get("remoteBrokerId"),
        },
        "started_at_ms": round(started_at * 1000) if started_at is not None else None,
        "forwarded": sum(d["forwarded"] for d in directions),
        "directions": directions,
    }


def network_bridge_documents(statistics: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every bridge in a broker's statistics, sorted by connector name and URI."""
    records: Sequence[Mapping[str, Any]] = statistics.get(STATISTICS_KEY) or ()
    documents = [network_bridge_document(r) for r in records]
    return sorted(documents, key=lambda d: (str(d["connector"]), str(d["uri"])))
