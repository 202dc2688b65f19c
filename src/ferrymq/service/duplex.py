"""The remote side of a duplex bridge, as this broker lists it among its network bridges.

A duplex network connector is configured on one broker only; the other broker (the responder)
learns of it from the bridge's CONNECT.  ActiveMQ shows the responder's side too (JMX
``connector=duplexNetworkConnectors``), so an operator looking at either broker sees the
bridge.  The records have the shape of ``NetworkBridge.statistics()``; the counts are the
connection's own: what this broker delivered to the bridge's demand subscriptions went out over
it (advisories the bridge reads are not forwarded messages), what the bridge sent came in.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ferrymq.core.connection import ConnectionState
from ferrymq.core.region import RegionBroker
from ferrymq.service.connection import BrokerConnection


def duplex_bridge_records(
    connections: Iterable[BrokerConnection], region: RegionBroker
) -> list[dict[str, Any]]:
    """One record per live duplex bridge that another broker opened to this one."""
    records: list[dict[str, Any]] = []
    for connection in connections:
        peer = connection.duplex_peer
        state = region.connections.get(connection.connection_id)
        if peer is None or state is None:
            continue
        transport = connection.transport
        local_id = region.broker_id
        records.append(
            {
                "name": connection.network_bridge,
                "uri": transport.remote_address if transport is not None else None,
                "state": "started" if connection.connected else "stopped",
                "duplex": True,
                "initiatedBy": "remote",
                "localBrokerName": region.broker_name,
                "localBrokerId": local_id,
                "remoteBrokerName": peer.broker_name,
                "remoteBrokerId": peer.broker_id,
                "startedAt": state.connected_at / 1000 if state.connected_at else None,
                "directions": [
                    _direction("outbound", local_id, peer.broker_id, _demand(state)),
                    _direction("inbound", peer.broker_id, local_id, [], state.messages_sent),
                ],
            }
        )
    return records


def _demand(state: ConnectionState) -> list[dict[str, Any]]:
    """The bridge's demand subscriptions here: what it forwards from this broker."""
    return [
        {
            "destination": consumer.destination.qualified,
            "selector": consumer.selector.text if consumer.selector is not None else None,
            "priority": consumer.priority,
            "consumers": len(consumer.network_consumer_ids) or 1,
            "static": False,
            "brokerPath": list(consumer.broker_path),
            "forwarded": consumer.dispatched,
        }
        for consumer in state.consumers.values()
        if consumer.network
    ]


def _direction(
    name: str,
    source: str,
    target: str,
    demand: list[dict[str, Any]],
    forwarded: int | None = None,
) -> dict[str, Any]:
    return {
        "direction": name,
        "from": source,
        "to": target,
        "forwarded": sum(d["forwarded"] for d in demand) if forwarded is None else forwarded,
        "demandSubscriptions": demand,
    }
