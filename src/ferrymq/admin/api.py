"""The admin API's resources: JSON documents built from snapshots, and the routing table.

Adding an endpoint is one ``Route`` in ``ROUTES`` plus its handler.  Handlers read through
``AdminSource`` only; anything that changes the broker must go through a ``BrokerService``
method (DESIGN.md, the ``admin`` row).
"""

from __future__ import annotations

from typing import Any, Final

from ferrymq.admin.broker_connections import BROKER_CONNECTION_ROUTES
from ferrymq.admin.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from ferrymq.admin.metrics import render_metrics
from ferrymq.admin.network_bridges import STATISTICS_KEY, network_bridge_documents
from ferrymq.admin.operations import WRITE_ROUTES
from ferrymq.admin.routing import HttpError, Request, Response, Route, json_response
from ferrymq.admin.source import (
    AdminSource,
    ConnectionStatistics,
    LinkStatistics,
    SubscriptionStatistics,
)
from ferrymq.core.destination import Destination, DestinationType
from ferrymq.core.statistics import DestinationStatistics

DESTINATION_TYPES: Final = tuple(t.value for t in DestinationType)


def destination_ref(destination: Destination) -> dict[str, str]:
    return {"type": destination.type.value, "name": destination.name}


def destination_document(stats: DestinationStatistics) -> dict[str, Any]:
    return {
        **destination_ref(stats.destination),
        "depth": stats.depth,
        "enqueued": stats.enqueued,
        "dequeued": stats.dequeued,
        "dispatched": stats.dispatched,
        "expired": stats.expired,
        "in_flight": stats.in_flight,
        "consumers": stats.consumers,
        "paged_out": stats.paged_out,
    }


def subscription_document(subscription: SubscriptionStatistics) -> dict[str, Any]:
    return {
        "id": subscription.subscription_id,
        "destination": destination_ref(subscription.destination),
        "ack_mode": subscription.ack_mode,
        "prefetch": subscription.prefetch,
        "outstanding": subscription.outstanding,
        "selector": subscription.selector,
    }


def connection_document(connection: ConnectionStatistics) -> dict[str, Any]:
    return {
        "id": connection.connection_id,
        "client_id": connection.client_id,
        "user": connection.user,
        "groups": list(connection.groups),
        "remote_address": connection.remote_address,
        "connector": connection.connector,
        "connected": connection.connected,
        "protocol": connection.protocol,
        "version": connection.version or connection.stomp_version,
        "stomp_version": connection.stomp_version,
        "connected_at_ms": connection.connected_at_ms,
        "bytes_in": connection.bytes_in,
        "bytes_out": connection.bytes_out,
        "messages_sent": connection.messages_sent,
        "messages_delivered": connection.messages_delivered,
        "subscriptions": [subscription_document(s) for s in connection.subscriptions],
        "links": [link_document(link) for link in connection.links],
    }


def link_document(link: LinkStatistics) -> dict[str, Any]:
    return {
        "name": link.name,
        "role": link.role,
        "address": link.address,
        "credit": link.credit,
        "unsettled": link.unsettled,
    }


def _sorted(destinations: list[DestinationStatistics]) -> list[DestinationStatistics]:
    return sorted(destinations, key=lambda d: (d.destination.type.value, d.destination.name))


def _destination_type(value: str, status: int) -> str:
    if value not in DESTINATION_TYPES:
        choices = ", ".join(DESTINATION_TYPES)
        raise HttpError(status, f"unknown destination type {value!r}; use one of {choices}")
    return value


# -- handlers -------------------------------------------------------------------------------


def get_broker(source: AdminSource, request: Request) -> Response:
    statistics = dict(source.statistics())
    if STATISTICS_KEY in statistics:
        statistics[STATISTICS_KEY] = network_bridge_documents(statistics)
    return json_response(statistics)


def list_destinations(source: AdminSource, request: Request) -> Response:
    selected = list(source.destination_statistics())
    type_filter = request.query.get("type")
    if type_filter is not None:
        _destination_type(type_filter, 400)
        selected = [d for d in selected if d.destination.type.value == type_filter]
    prefix = request.query.get("name")
    if prefix:
        selected = [d for d in selected if d.destination.name.startswith(prefix)]
    return json_response({"destinations": [destination_document(d) for d in _sorted(selected)]})


def get_destination(source: AdminSource, request: Request) -> Response:
    type_ = _destination_type(request.params["type"], 404)
    name = request.params["name"]
    for stats in source.destination_statistics():
        if stats.destination.type.value == type_ and stats.destination.name == name:
            return json_response(destination_document(stats))
    raise HttpError(404, f"no {type_} named {name!r}")


def list_connections(source: AdminSource, request: Request) -> Response:
    connections = sorted(source.connection_statistics(), key=lambda c: c.connection_id)
    return json_response({"connections": [connection_document(c) for c in connections]})


def list_network_bridges(source: AdminSource, request: Request) -> Response:
    return json_response({"network_bridges": network_bridge_documents(source.statistics())})


def get_metrics(source: AdminSource, request: Request) -> Response:
    text = render_metrics(
        source.statistics(), source.destination_statistics(), source.connection_statistics()
    )
    return Response(200, text.encode(), METRICS_CONTENT_TYPE)


ROUTES: Final = (
    Route("/api/v1/broker", get_broker),
    Route("/api/v1/destinations", list_destinations),
    Route("/api/v1/destinations/{type}/{name}", get_destination),
    Route("/api/v1/connections", list_connections),
    Route("/api/v1/network-bridges", list_network_bridges),
    Route("/metrics", get_metrics),
    *WRITE_ROUTES,
    *BROKER_CONNECTION_ROUTES,
)
