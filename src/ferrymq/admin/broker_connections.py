"""The AMQP broker connections as the admin API shows them, starts and stops them.

The broker passes each connection's ``AmqpBrokerConnection.statistics()`` record through
``AdminSource.statistics()`` under ``broker_connections`` as plain data (this package imports
no runtime). Management follows ActiveMQ Artemis's ``startBrokerConnection`` and
``stopBrokerConnection`` (documentation, "Broker Connections": an ``auto-start="false"``
connection waits for the former): ``POST /api/v1/broker-connections/{name}/start`` and
``.../stop``, which answer with the connection's record. Metrics: the state (one sample per
state), the attempt counter, connection attempts all told, and each element's numbers.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final, Protocol, runtime_checkable

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from ferrymq.admin.operations import JSON
from ferrymq.admin.routing import POST, HttpError, Request, Response, Route, json_response
from ferrymq.admin.source import AdminSource
from ferrymq.core.errors import BrokerError

STATISTICS_KEY: Final = "broker_connections"
STATES: Final = ("stopped", "connecting", "connected", "retrying", "failed")


class BrokerConnectionControl(Protocol):
    """``ferrymq.connections.service.BrokerConnections``, as far as management goes."""

    async def start_connection(self, name: str) -> Mapping[str, object]: ...

    async def stop_connection(self, name: str) -> Mapping[str, object]: ...


@runtime_checkable
class ConnectionControlSource(Protocol):
    """An ``AdminSource`` that can start and stop broker connections (``AdminView``)."""

    def broker_connection_control(self) -> BrokerConnectionControl:
        """``ManagementError`` (not serving) on a slave."""
        ...


def broker_connection_documents(statistics: Mapping[str, Any]) -> list[dict[str, Any]]:
    records: Iterable[Mapping[str, Any]] = statistics.get(STATISTICS_KEY) or ()
    return sorted((dict(record) for record in records), key=lambda r: str(r.get("name")))


def list_broker_connections(source: AdminSource, request: Request) -> Response:
    documents = broker_connection_documents(source.statistics())
    return json_response({"broker_connections": documents})


def get_broker_connection(source: AdminSource, request: Request) -> Response:
    name = request.params["name"]
    for document in broker_connection_documents(source.statistics()):
        if document.get("name") == name:
            return json_response(document)
    raise HttpError(404, f"no broker connection named {name!r}")


def _control(source: AdminSource, request: Request) -> BrokerConnectionControl:
    media_type = (request.content_type or "").split(";", 1)[0].strip().lower()
    if media_type != JSON:
        raise HttpError(415, f"a {request.method} needs Content-Type: {JSON}")
    if not isinstance(source, ConnectionControlSource):
        raise HttpError(501, "this admin API has no broker connections to manage")
    try:
        return source.broker_connection_control()
    except BrokerError as exc:
        raise HttpError(503, exc.message) from None


async def _manage(source: AdminSource, request: Request, *, start: bool) -> Response:
    control = _control(source, request)
    name = request.params["name"]
    try:
        if start:
            record = await control.start_connection(name)
        else:
            record = await control.stop_connection(name)
    except KeyError:
        raise HttpError(404, f"no broker connection named {name!r}") from None
    return json_response(dict(record))


async def start_broker_connection(source: AdminSource, request: Request) -> Response:
    return await _manage(source, request, start=True)


async def stop_broker_connection(source: AdminSource, request: Request) -> Response:
    return await _manage(source, request, start=False)


BROKER_CONNECTION_ROUTES: Final = (
    Route("/api/v1/broker-connections", list_broker_connections),
    Route("/api/v1/broker-connections/{name}", get_broker_connection),
    Route("/api/v1/broker-connections/{name}/start", start_broker_connection, POST),
    Route("/api/v1/broker-connections/{name}/stop", stop_broker_connection, POST),
)


def broker_connection_families(statistics: Mapping[str, Any]) -> Iterator[Metric]:
    documents = broker_connection_documents(statistics)
    state = GaugeMetricFamily(
        "ferrymq_broker_connection_state",
        "An AMQP broker connection's state: 1 for the current one, 0 for the others.",
        labels=["connection", "state"],
    )
    attempts = GaugeMetricFamily(
        "ferrymq_broker_connection_attempts",
        "Failed attempts since the connection was last fully set up (reconnect-attempts "
        "counts these).",
        labels=["connection"],
    )
    connects = CounterMetricFamily(
        "ferrymq_broker_connection_connects",
        "Connection attempts of an AMQP broker connection since the broker started.",
        labels=["connection"],
    )
    element = GaugeMetricFamily(
        "ferrymq_broker_connection_element",
        "A number an element (mirror, sender, receiver, peer, federation) reports.",
        labels=["connection", "element", "type", "figure"],
    )
    for document in documents:
        name = str(document.get("name"))
        current = str(document.get("state"))
        for known in sorted({*STATES, current}):
            state.add_metric([name, known], 1 if known == current else 0)
        attempts.add_metric([name], _number(document.get("attempts")))
        connects.add_metric([name], _number(document.get("connects")))
        elements: Sequence[Mapping[str, Any]] = document.get("elements") or ()
        for record in elements:
            labels = [name, str(record.get("name")), str(record.get("type"))]
            for figure, value in sorted(record.items()):
                if isinstance(value, int | float) and not isinstance(value, bool):
                    element.add_metric([*labels, figure], value)
    yield from (state, attempts, connects, element)


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 0.0
