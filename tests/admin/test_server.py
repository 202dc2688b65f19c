from __future__ import annotations

import asyncio
import http.client
import json
from typing import Any

from ferrymq.admin import AdminServer
from tests.admin.conftest import StartServer
from tests.admin.exposition import parse_exposition
from tests.admin.fake_broker import FakeBroker
from tests.admin.wire import close, open_connection, read_response, read_to_end, request


def _get_twice(port: int, first: str, second: str) -> list[tuple[int, bool, Any]]:
    """Two GETs on one ``http.client`` connection; fails if the client had to reconnect."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    results = []
    try:
        connection.request("GET", first)
        response = connection.getresponse()
        results.append((response.status, response.will_close, json.loads(response.read())))
        socket_after_first = connection.sock
        connection.request("GET", second)
        response = connection.getresponse()
        results.append((response.status, response.will_close, json.loads(response.read())))
        assert connection.sock is socket_after_first
    finally:
        connection.close()
    return results


async def test_keep_alive_serves_two_requests_on_one_connection(server: AdminServer) -> None:
    results = await asyncio.to_thread(
        _get_twice, server.port, "/api/v1/broker", "/api/v1/destinations?type=topic"
    )
    (status1, close1, broker), (status2, close2, destinations) = results
    assert (status1, close1, broker["name"]) == (200, False, "amq-east")
    assert (status2, close2) == (200, False)
    assert [d["name"] for d in destinations["destinations"]] == ["orders.events"]


async def test_pipelined_requests_are_answered_in_order(server: AdminServer) -> None:
    reader, writer = await open_connection(server.port)
    writer.write(request("GET", "/api/v1/connections") + request("GET", "/nope"))
    first = await read_response(reader)
    second = await read_response(reader)
    await close(writer)
    assert first.status == 200
    assert first.headers["content-type"] == "application/json"
    assert first.json()["connections"][0]["client_id"] == "shop"
    assert second.status == 404
    assert second.headers["content-type"] == "application/json"
    assert second.json() == {"status": 404, "error": "Not Found", "message": "no resource at /nope"}


async def test_other_methods_are_405_and_the_connection_stays_usable(server: AdminServer) -> None:
    reader, writer = await open_connection(server.port)
    writer.write(request("POST", "/api/v1/broker", "Content-Length: 2") + b"{}")
    refused = await read_response(reader)
    writer.write(request("GET", "/api/v1/broker"))
    served = await read_response(reader)
    await close(writer)
    assert refused.status == 405
    assert refused.headers["allow"] == "GET, HEAD"
    assert refused.json()["error"] == "Method Not Allowed"
    assert served.status == 200


async def test_head_sends_the_get_headers_without_a_body(server: AdminServer) -> None:
    reader, writer = await open_connection(server.port)
    writer.write(request("HEAD", "/api/v1/destinations") + request("GET", "/api/v1/destinations"))
    head = await read_response(reader, head=True)
    get = await read_response(reader)
    await close(writer)
    assert head.status == get.status == 200
    assert head.headers["content-type"] == get.headers["content-type"] == "application/json"
    assert int(head.headers["content-length"]) == len(get.body) > 0
    assert len(get.json()["destinations"]) == 4


async def test_a_malformed_request_is_400_and_others_are_still_served(
    server: AdminServer,
) -> None:
    bad_reader, bad_writer = await open_connection(server.port)
    bad_writer.write(b"THIS IS NOT HTTP\r\n\r\n")
    refused = await read_response(bad_reader)
    rest = await read_to_end(bad_reader)
    await close(bad_writer)
    assert refused.status == 400
    assert refused.headers["connection"] == "close"
    assert refused.json()["error"] == "Bad Request"
    assert rest == b""
    reader, writer = await open_connection(server.port)
    writer.write(request("GET", "/api/v1/broker"))
    served = await read_response(reader)
    await close(writer)
    assert served.status == 200


async def test_a_head_over_the_limit_is_431(start_server: StartServer) -> None:
    server = await start_server(max_head_bytes=1024)
    # Complete in one write (h11 alone would accept it) and never completed (h11's buffer limit).
    for data in (
        request("GET", "/api/v1/broker", "X-Filler: " + "a" * 2000),
        b"GET /api/v1/broker HTTP/1.1\r\nX-Filler: " + b"a" * 2000,
    ):
        reader, writer = await open_connection(server.port)
        writer.write(data)
        refused = await read_response(reader)
        await close(writer)
        assert refused.status == 431
        assert refused.headers["connection"] == "close"


async def test_a_body_over_the_limit_is_413(start_server: StartServer) -> None:
    server = await start_server(max_body_bytes=1024)
    declared = request("GET", "/api/v1/broker", "Content-Length: 5000") + b"x" * 100
    chunked = request("GET", "/api/v1/broker", "Transfer-Encoding: chunked")
    chunked += b"".join(b"200\r\n" + b"y" * 0x200 + b"\r\n" for _ in range(3))
    for data in (declared, chunked):
        reader, writer = await open_connection(server.port)
        writer.write(data)
        refused = await read_response(reader)
        await close(writer)
        assert refused.status == 413
        assert "1024" in refused.json()["message"]


def _send_big_body(port: int, size: int) -> tuple[int, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", "/api/v1/broker", body=b"z" * size)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


async def test_a_refusal_reaches_a_client_still_sending_its_body(
    start_server: StartServer,
) -> None:
    # The client blocks in sendall until its whole body is taken: the server must go on
    # reading (and dropping) it after the 413, or the client's send fails with a reset.
    server = await start_server(max_body_bytes=1024)
    status, body = await asyncio.to_thread(_send_big_body, server.port, 4 * 1024 * 1024)
    assert status == 413
    assert body["error"] == "Request Entity Too Large"


async def test_a_body_within_the_limit_is_read_and_ignored(server: AdminServer) -> None:
    reader, writer = await open_connection(server.port)
    writer.write(request("GET", "/api/v1/broker", "Content-Length: 5") + b"hello")
    writer.write(request("GET", "/api/v1/broker"))
    first = await read_response(reader)
    second = await read_response(reader)
    await close(writer)
    assert first.status == second.status == 200


async def test_an_idle_connection_is_closed_after_the_idle_timeout(
    start_server: StartServer,
) -> None:
    server = await start_server(idle_timeout_s=0.2)
    reader, writer = await open_connection(server.port)
    writer.write(request("GET", "/api/v1/broker"))
    served = await read_response(reader)
    assert await read_to_end(reader) == b""
    await close(writer)
    assert served.status == 200


async def test_a_request_that_never_completes_is_408(start_server: StartServer) -> None:
    server = await start_server(idle_timeout_s=0.2)
    reader, writer = await open_connection(server.port)
    writer.write(b"GET /api/v1/broker HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    refused = await read_response(reader)
    await close(writer)
    assert refused.status == 408
    assert refused.headers["connection"] == "close"


async def test_connections_beyond_the_limit_are_refused_503(start_server: StartServer) -> None:
    server = await start_server(max_connections=1)
    reader, writer = await open_connection(server.port)
    writer.write(request("GET", "/api/v1/broker"))
    assert (await read_response(reader)).status == 200
    extra_reader, extra_writer = await open_connection(server.port)
    refused = await read_response(extra_reader)
    await close(extra_writer)
    writer.write(request("GET", "/api/v1/broker"))
    still_served = await read_response(reader)
    await close(writer)
    assert refused.status == 503
    assert still_served.status == 200


async def test_stop_closes_open_keep_alive_connections(broker: FakeBroker) -> None:
    server = AdminServer(broker, port=0)
    await server.start()
    reader, writer = await open_connection(server.port)
    writer.write(request("GET", "/api/v1/broker"))
    assert (await read_response(reader)).status == 200
    await server.stop()
    assert await read_to_end(reader) == b""
    await close(writer)
    refused = await asyncio.gather(open_connection(server.port), return_exceptions=True)
    assert isinstance(refused[0], ConnectionRefusedError)


async def test_a_failing_source_is_500_and_the_connection_survives(
    broker: FakeBroker, server: AdminServer
) -> None:
    broker.failure = RuntimeError("store gone")
    reader, writer = await open_connection(server.port)
    writer.write(request("GET", "/api/v1/destinations") + request("GET", "/api/v1/broker"))
    failed = await read_response(reader)
    served = await read_response(reader)
    await close(writer)
    assert failed.status == 500
    assert "store gone" not in failed.body.decode()
    assert served.status == 200


async def test_metrics_over_http(server: AdminServer) -> None:
    reader, writer = await open_connection(server.port)
    writer.write(request("GET", "/metrics"))
    response = await read_response(reader)
    await close(writer)
    assert response.status == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    families = parse_exposition(response.body.decode())
    assert families["ferrymq_store_commits_total"].value() == 7
    assert families["ferrymq_destination_in_flight"].value(type="queue", name="orders.in") == 2


async def test_an_http_10_client_gets_its_answer_and_a_close(server: AdminServer) -> None:
    reader, writer = await open_connection(server.port)
    writer.write(b"GET /api/v1/broker HTTP/1.0\r\n\r\n")
    raw = await read_to_end(reader)
    await close(writer)
    assert raw.startswith(b"HTTP/1.1 200 OK\r\n")
    assert raw.endswith(b"\n")
    assert json.loads(raw.split(b"\r\n\r\n", 1)[1])["id"] == "host-1-42-18f"


async def test_port_zero_picks_distinct_free_ports(start_server: StartServer) -> None:
    first = await start_server()
    second = await start_server()
    assert first.port != 0
    assert second.port != 0
    assert first.port != second.port
    assert first.url == f"http://127.0.0.1:{first.port}"
