"""The admin API's write operations: what ActiveMQ's web console and JMX beans let an operator do.

Purge a queue, delete a queue or topic, move or copy messages between queues (by selector),
retry dead letters, remove a durable subscription, close a connection, send a test message.
Each handler asks the source for its ``BrokerOperations`` (the service's ``BrokerManagement``:
the admin layer changes the broker only through service methods, DESIGN.md) and answers once
the change is durable.  A source without operations (a test's fake) answers 501; a broker that
is not serving (a slave) answers 503, and every refusal has the one error shape.

A write must carry ``Content-Type: application/json``, body or not: a web page can make a
browser send a form POST to the loopback admin port, but not one with that type (it would
need a CORS preflight, which this server never grants).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, Protocol, runtime_checkable

from ferrymq.admin.routing import (
    DELETE,
    POST,
    HttpError,
    Request,
    Response,
    Route,
    json_response,
)
from ferrymq.admin.source import AdminSource
from ferrymq.core.destination import Destination, DestinationError, DestinationType
from ferrymq.core.errors import BrokerError
from ferrymq.core.management import ManagementError, Refusal

JSON: Final = "application/json"

STATUS: Final[Mapping[Refusal, int]] = {
    Refusal.NOT_FOUND: 404,
    Refusal.IN_USE: 409,
    Refusal.INVALID: 400,
    Refusal.NOT_SERVING: 503,
}


class BrokerOperations(Protocol):
    """``ferrymq.service.management.BrokerManagement``: each call returns once durable."""

    async def purge(self, queue: str) -> int: ...

    async def remove_destination(self, destination: Destination) -> int: ...

    async def move(
        self,
        source: str,
        target: str,
        selector: str | None = None,
        limit: int | None = None,
        *,
        copy: bool = False,
    ) -> int: ...

    async def retry(
        self, queue: str, selector: str | None = None, limit: int | None = None
    ) -> int: ...

    async def destroy_durable(self, client_id: str, subscription_name: str) -> int: ...

    async def send(
        self, destination: Destination, body: bytes, headers: Mapping[str, str]
    ) -> str: ...

    def close_connection(self, connection_id: str) -> None: ...


@runtime_checkable
class OperableSource(Protocol):
    """An ``AdminSource`` that can also change the broker (``ferrymq.admin_view.AdminView``)."""

    def operations(self) -> BrokerOperations:
        """The serving broker's operations; ``ManagementError`` (not serving) on a slave."""
        ...


def _operations(source: AdminSource) -> BrokerOperations:
    if not isinstance(source, OperableSource):
        raise HttpError(501, "this admin API is read-only: it has no broker to change")
    try:
        return source.operations()
    except BrokerError as exc:
        raise _http_error(exc) from None


def _http_error(exc: BrokerError) -> HttpError:
    reason = exc.reason if isinstance(exc, ManagementError) else Refusal.INVALID
    return HttpError(STATUS[reason], exc.message)


def _document(request: Request) -> dict[str, Any]:
    """The request's JSON object (``{}`` for no body); refuses anything but JSON."""
    media_type = (request.content_type or "").split(";", 1)[0].strip().lower()
    if media_type != JSON:
        raise HttpError(415, f"a {request.method} needs Content-Type: {JSON}")
    if not request.body.strip():
        return {}
    try:
        document = json.loads(request.body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise HttpError(400, f"the request body is not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise HttpError(400, "the request body must be a JSON object")
    return document


def _text(document: Mapping[str, Any], name: str, *, required: bool = False) -> str | None:
    value = document.get(name)
    if value is None or value == "":
        if required:
            raise HttpError(400, f"the request body needs {name!r} (a string)")
        return None
    if not isinstance(value, str):
        raise HttpError(400, f"{name!r} must be a string, got {json.dumps(value)}")
    return value


def _limit(document: Mapping[str, Any]) -> int | None:
    value = document.get("max")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise HttpError(400, f"'max' must be a whole number of at least 1, got {value!r}")
    return value


def _destination(type_: str, name: str) -> Destination:
    try:
        kind = DestinationType(type_)
    except ValueError:
        choices = ", ".join(t.value for t in DestinationType)
        raise HttpError(404, f"unknown destination type {type_!r}; use one of {choices}") from None
    try:
        return Destination(kind, name)
    except DestinationError as exc:
        raise HttpError(400, str(exc)) from None


async def _call(operation: Any, *args: Any, **kwargs: Any) -> Any:
    """Await an operation, its refusal as the HTTP error it stands for."""
    try:
        return await operation(*args, **kwargs)
    except BrokerError as exc:
        raise _http_error(exc) from None
    except DestinationError as exc:
        raise HttpError(400, str(exc)) from None


# -- handlers -------------------------------------------------------------------------------


async def purge_queue(source: AdminSource, request: Request) -> Response:
    _document(request)
    name = request.params["name"]
    purged = await _call(_operations(source).purge, name)
    return json_response({"queue": name, "purged": purged})


async def delete_destination(source: AdminSource, request: Request) -> Response:
    destination = _destination(request.params["type"], request.params["name"])
    removed = await _call(_operations(source).remove_destination, destination)
    document = {"type": destination.type.value, "name": destination.name}
    return json_response({"deleted": document, "messages": removed})


async def move_messages(source: AdminSource, request: Request) -> Response:
    document = _document(request)
    name = request.params["name"]
    target = _text(document, "to", required=True)
    copy = document.get("copy", False)
    if not isinstance(copy, bool):
        raise HttpError(400, f"'copy' must be true or false, got {json.dumps(copy)}")
    operations = _operations(source)
    selector, limit = _text(document, "selector"), _limit(document)
    count = await _call(operations.move, name, target, selector, limit, copy=copy)
    return json_response({"queue": name, "to": target, "copied" if copy else "moved": count})


async def retry_messages(source: AdminSource, request: Request) -> Response:
    document = _document(request)
    name = request.params["name"]
    operations = _operations(source)
    selector, limit = _text(document, "selector"), _limit(document)
    retried = await _call(operations.retry, name, selector, limit)
    return json_response({"queue": name, "retried": retried})


async def delete_durable_subscription(source: AdminSource, request: Request) -> Response:
    client_id, name = request.params["client_id"], request.params["name"]
    dropped = await _call(_operations(source).destroy_durable, client_id, name)
    return json_response({"client_id": client_id, "subscription": name, "messages": dropped})


async def close_connection(source: AdminSource, request: Request) -> Response:
    connection_id = request.params["id"]
    try:
        _operations(source).close_connection(connection_id)
    except BrokerError as exc:
        raise _http_error(exc) from None
    return json_response({"closed": connection_id})


async def send_message(source: AdminSource, request: Request) -> Response:
    document = _document(request)
    destination = _destination(request.params["type"], request.params["name"])
    body = (_text(document, "body") or "").encode()
    headers = document.get("headers") or {}
    if not isinstance(headers, dict) or not all(
        isinstance(k, str) and isinstance(v, str | int | bool) for k, v in headers.items()
    ):
        raise HttpError(400, "'headers' must be an object of names to strings or numbers")
    as_text = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in headers.items()}
    message_id = await _call(_operations(source).send, destination, body, as_text)
    target = {"type": destination.type.value, "name": destination.name}
    return json_response({"sent": target, "message_id": message_id})


WRITE_ROUTES: Final = (
    Route("/api/v1/queues/{name}/purge", purge_queue, POST),
    Route("/api/v1/queues/{name}/move", move_messages, POST),
    Route("/api/v1/queues/{name}/retry", retry_messages, POST),
    Route("/api/v1/destinations/{type}/{name}", delete_destination, DELETE),
    Route("/api/v1/destinations/{type}/{name}/messages", send_message, POST),
    Route("/api/v1/durable-subscriptions/{client_id}/{name}", delete_durable_subscription, DELETE),
    Route("/api/v1/connections/{id}", close_connection, DELETE),
)
