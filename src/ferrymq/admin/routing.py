"""Requests to handlers: a routing table, without I/O.

``Router.dispatch(source, method, target)`` is the whole of the admin API's logic: it matches
the request-target against the table, runs the handler and returns a ``Response`` (status, body,
content type).  The server only moves bytes.  A route is one ``Route(pattern, handler)``; a
pattern is a path whose ``{name}`` segments capture one percent-decoded path segment each.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from http import HTTPStatus
from typing import Final
from urllib.parse import parse_qsl, unquote, urlsplit

from ferrymq.admin.source import AdminSource

log = logging.getLogger(__name__)

JSON_CONTENT_TYPE: Final = "application/json"
READ_METHODS: Final = frozenset({"GET", "HEAD"})
POST: Final = frozenset({"POST"})
DELETE: Final = frozenset({"DELETE"})


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    params: Mapping[str, str] = field(default_factory=dict)
    """Captured ``{name}`` path segments, percent-decoded."""
    query: Mapping[str, str] = field(default_factory=dict)
    """Query parameters; the last of repeated names wins."""
    body: bytes = b""
    content_type: str | None = None
    """The request's ``Content-Type`` (a write must say ``application/json``)."""
    identified: bool = True
    """False for a request that reached an open path (``/health``) without a login while the
    broker has users: it gets only what a stranger may know."""


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    body: bytes
    content_type: str = JSON_CONTENT_TYPE
    headers: tuple[tuple[str, str], ...] = ()
    """Extra headers (``Allow`` on a 405); framing headers are the server's business."""


Handler = Callable[[AdminSource, Request], Response | Awaitable[Response]]
"""A read answers at once; a write (``admin.operations``) awaits the broker's store."""


class HttpError(Exception):
    """Raised by a handler to answer with an error status; the client's fault unless 5xx."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(status, message)
        self.status = status
        self.message = message

    def __str__(self) -> str:
        return f"{self.status}: {self.message}"


def json_response(document: object, status: int = 200) -> Response:
    body = json.dumps(document, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return Response(status, body.encode() + b"\n")


def error_response(
    status: int, message: str, headers: tuple[tuple[str, str], ...] = ()
) -> Response:
    """The one error shape: ``{"status": 404, "error": "Not Found", "message": "..."}``."""
    document = {"status": status, "error": HTTPStatus(status).phrase, "message": message}
    response = json_response(document, status)
    return Response(response.status, response.body, response.content_type, headers)


@dataclass(frozen=True, slots=True)
class Route:
    pattern: str
    handler: Handler
    methods: frozenset[str] = READ_METHODS
    segments: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.pattern.startswith("/"):
            raise ValueError(f"route pattern {self.pattern!r} must start with /")
        object.__setattr__(self, "segments", tuple(self.pattern.split("/")[1:]))

    @property
    def allow(self) -> str:
        """The ``Allow`` header value, GET before HEAD as servers usually list them."""
        return ", ".join(sorted(self.methods, key=lambda m: (m != "GET", m)))

    def match(self, segments: tuple[str, ...]) -> dict[str, str] | None:
        if len(segments) != len(self.segments):
            return None
        params: dict[str, str] = {}
        for expected, actual in zip(self.segments, segments, strict=True):
            if expected.startswith("{") and expected.endswith("}"):
                if not actual:
                    return None
                params[expected[1:-1]] = actual
            elif expected != actual:
                return None
        return params


class Router:
    def __init__(self, routes: Iterable[Route] = ()) -> None:
        self.routes: list[Route] = list(routes)

    def add(self, pattern: str, handler: Handler, methods: frozenset[str] = READ_METHODS) -> None:
        self.routes.append(Route(pattern, handler, methods))

    def dispatch(self, source: AdminSource, method: str, target: str) -> Response:
        """Answer one read request; never raises (a failing handler is a 500)."""
        found = self._resolve(method, target)
        if isinstance(found, Response):
            return found
        handler, request = found
        try:
            response = handler(source, request)
        except HttpError as exc:
            return error_response(exc.status, exc.message)
        except Exception:
            log.exception("admin handler for %s %s failed", method, request.path)
            return error_response(500, f"the handler for {request.path} failed; see the broker log")
        if isinstance(response, Response):
            return response
        _close(response)
        return error_response(405, f"{method} {request.path} needs the admin server")

    async def respond(
        self,
        source: AdminSource,
        method: str,
        target: str,
        body: bytes = b"",
        content_type: str | None = None,
        *,
        identified: bool = True,
    ) -> Response:
        """Answer one request, awaiting a write's handler; never raises (a failure is a 500)."""
        found = self._resolve(method, target, body, content_type)
        if isinstance(found, Response):
            return found
        handler, request = found
        if not identified:
            request = replace(request, identified=False)
        try:
            response = handler(source, request)
            return response if isinstance(response, Response) else await response
        except HttpError as exc:
            return error_response(exc.status, exc.message)
        except Exception:
            log.exception("admin handler for %s %s failed", method, request.path)
            return error_response(500, f"the handler for {request.path} failed; see the broker log")

    def _resolve(
        self, method: str, target: str, body: bytes = b"", content_type: str | None = None
    ) -> tuple[Handler, Request] | Response:
        """The handler and request for a target, or the error answer (404, 405)."""
        try:
            path, segments, query = _split_target(target)
        except HttpError as exc:
            return error_response(exc.status, exc.message)
        allowed: set[str] = set()
        for route in self.routes:
            params = route.match(segments)
            if params is None:
                continue
            if method in route.methods:
                return route.handler, Request(method, path, params, query, body, content_type)
            allowed |= route.methods
        if allowed:
            allow = ", ".join(sorted(allowed, key=lambda m: (m != "GET", m != "HEAD", m)))
            return error_response(405, f"{method} is not allowed on {path}", (("Allow", allow),))
        return error_response(404, f"no resource at {path}")


def _close(awaitable: Awaitable[Response]) -> None:
    close = getattr(awaitable, "close", None)
    if close is not None:
        close()


def _split_target(target: str) -> tuple[str, tuple[str, ...], dict[str, str]]:
    """Path, its decoded segments and the query of an origin- or absolute-form target."""
    # RFC 9112 "Request Target": origin-form, or absolute-form (which a server must accept).
    parts = urlsplit(target)
    path = parts.path
    if not path.startswith("/"):
        raise HttpError(404, f"no resource at {target}")
    try:
        segments = tuple(unquote(s, errors="strict") for s in path.split("/")[1:])
    except UnicodeDecodeError as exc:
        raise HttpError(400, f"the path is not UTF-8 once percent-decoded: {exc.reason}") from None
    return path, segments, dict(parse_qsl(parts.query, keep_blank_values=True))
