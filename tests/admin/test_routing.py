from __future__ import annotations

import json
from typing import Any

import pytest

from ferrymq.admin.api import ROUTES
from ferrymq.admin.routing import (
    HttpError,
    Request,
    Response,
    Route,
    Router,
    json_response,
)
from ferrymq.admin.source import AdminSource
from tests.admin.fake_broker import FakeBroker


def api(broker: FakeBroker, target: str, method: str = "GET") -> tuple[int, Any]:
    response = Router(ROUTES).dispatch(broker, method, target)
    assert response.content_type == "application/json"
    return response.status, json.loads(response.body)


def echo(source: AdminSource, request: Request) -> Response:
    return json_response({"params": dict(request.params), "query": dict(request.query)})


# -- the routing table ------------------------------------------------------------------------


def test_a_pattern_captures_one_decoded_segment_per_placeholder() -> None:
    route = Route("/things/{kind}/{name}", echo)
    assert route.match(("things", "queue", "a/b")) == {"kind": "queue", "name": "a/b"}
    assert route.match(("things", "queue")) is None
    assert route.match(("things", "queue", "")) is None
    assert route.match(("other", "queue", "x")) is None
    with pytest.raises(ValueError, match="must start with /"):
        Route("things", echo)


def test_adding_an_endpoint_is_one_registration() -> None:
    router = Router()
    router.add("/api/v1/things/{name}", echo)
    response = router.dispatch(FakeBroker(), "GET", "/api/v1/things/caf%C3%A9%2Fx?a=1&a=2&b=")
    assert response.status == 200
    assert json.loads(response.body) == {"params": {"name": "café/x"}, "query": {"a": "2", "b": ""}}


def test_an_absolute_form_target_routes_by_its_path() -> None:
    router = Router([Route("/x", echo)])
    assert router.dispatch(FakeBroker(), "GET", "http://broker:8161/x?q=1").status == 200


def test_unknown_paths_are_404_in_the_error_shape() -> None:
    for target in ("/nope", "/api/v1/broker/extra", "*", "/api/v1/destinations/"):
        status, body = api(FakeBroker(), target)
        assert status == 404
        assert body["status"] == 404
        assert body["error"] == "Not Found"
        assert body["message"]


def test_other_methods_are_405_with_allow() -> None:
    router = Router(ROUTES)
    for method in ("POST", "PUT", "DELETE", "OPTIONS", "PATCH"):
        response = router.dispatch(FakeBroker(), method, "/api/v1/broker")
        assert response.status == 405
        assert ("Allow", "GET, HEAD") in response.headers
        assert json.loads(response.body)["error"] == "Method Not Allowed"


def test_a_path_that_is_not_utf8_is_400() -> None:
    status, body = api(FakeBroker(), "/api/v1/destinations/queue/%FF")
    assert status == 400
    assert "UTF-8" in body["message"]


def test_a_failing_handler_is_a_500_not_an_exception() -> None:
    status, body = api(FakeBroker(failure=RuntimeError("boom")), "/api/v1/destinations")
    assert status == 500
    assert body["error"] == "Internal Server Error"


def test_a_handler_can_refuse_with_http_error() -> None:
    def teapot(source: AdminSource, request: Request) -> Response:
        raise HttpError(418, "short and stout")

    response = Router([Route("/pot", teapot)]).dispatch(FakeBroker(), "GET", "/pot")
    assert response.status == 418
    assert json.loads(response.body)["message"] == "short and stout"


# -- the resources ----------------------------------------------------------------------------


def test_broker_is_the_statistics_document() -> None:
    broker = FakeBroker()
    status, body = api(broker, "/api/v1/broker")
    assert status == 200
    assert body == broker.broker
    assert body["name"] == "amq-east"
    assert body["id"] == "host-1-42-18f"


def test_destinations_list_sorted_by_type_then_name() -> None:
    status, body = api(FakeBroker(), "/api/v1/destinations")
    assert status == 200
    listed = [(d["type"], d["name"]) for d in body["destinations"]]
    assert listed == [
        ("queue", "audit"),
        ("queue", "orders.in"),
        ("temp-queue", "ID:host-1-42-18f-1:1"),
        ("topic", "orders.events"),
    ]
    assert body["destinations"][1] == {
        "type": "queue",
        "name": "orders.in",
        "depth": 5,
        "enqueued": 9,
        "dequeued": 4,
        "dispatched": 6,
        "expired": 1,
        "in_flight": 2,
        "consumers": 1,
        "paged_out": 3,
    }


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("type=queue", ["audit", "orders.in"]),
        ("type=topic", ["orders.events"]),
        ("type=temp-queue", ["ID:host-1-42-18f-1:1"]),
        ("name=orders", ["orders.in", "orders.events"]),
        ("type=queue&name=orders.", ["orders.in"]),
        ("name=zzz", []),
    ],
)
def test_destinations_filter_by_type_and_name_prefix(query: str, expected: list[str]) -> None:
    status, body = api(FakeBroker(), f"/api/v1/destinations?{query}")
    assert status == 200
    assert sorted(d["name"] for d in body["destinations"]) == sorted(expected)


def test_an_unknown_type_filter_is_400() -> None:
    status, body = api(FakeBroker(), "/api/v1/destinations?type=queues")
    assert status == 400
    assert "queues" in body["message"]


def test_one_destination_by_type_and_name() -> None:
    status, body = api(FakeBroker(), "/api/v1/destinations/queue/orders.in")
    assert status == 200
    assert (body["type"], body["name"], body["depth"]) == ("queue", "orders.in", 5)
    status, body = api(FakeBroker(), "/api/v1/destinations/temp-queue/ID%3Ahost-1-42-18f-1%3A1")
    assert (status, body["name"]) == (200, "ID:host-1-42-18f-1:1")


@pytest.mark.parametrize(
    "target",
    [
        "/api/v1/destinations/topic/orders.in",
        "/api/v1/destinations/queue/missing",
        "/api/v1/destinations/queues/orders.in",
    ],
)
def test_an_absent_destination_is_404(target: str) -> None:
    status, body = api(FakeBroker(), target)
    assert status == 404
    assert body["error"] == "Not Found"


def test_connections_document() -> None:
    status, body = api(FakeBroker(), "/api/v1/connections")
    assert status == 200
    assert body == {
        "connections": [
            {
                "id": "ID:host-1-42-18f-1",
                "client_id": "shop",
                "user": "alice",
                "groups": [],
                "remote_address": "127.0.0.1:50123",
                "connector": "stomp",
                "connected": True,
                "protocol": "STOMP",
                "version": "1.2",
                "stomp_version": "1.2",
                "connected_at_ms": 1_700_000_000_000,
                "bytes_in": 300,
                "bytes_out": 900,
                "messages_sent": 4,
                "messages_delivered": 6,
                "subscriptions": [
                    {
                        "id": "sub-0",
                        "destination": {"type": "queue", "name": "orders.in"},
                        "ack_mode": "client",
                        "prefetch": 10,
                        "outstanding": 2,
                        "selector": "color = 'red'",
                    }
                ],
                "links": [],
            }
        ]
    }


def test_metrics_is_prometheus_text() -> None:
    response = Router(ROUTES).dispatch(FakeBroker(), "GET", "/metrics")
    assert response.status == 200
    assert response.content_type.startswith("text/plain; version=0.0.4")
    assert b'ferrymq_destination_depth{name="orders.in",type="queue"} 5.0\n' in response.body
