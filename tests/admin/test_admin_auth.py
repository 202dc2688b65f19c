"""The admin API's basic auth (issue 16, item 5) over real HTTP: who may read, who may write,
what is open to probes, how a failed login is answered and slowed down."""

from __future__ import annotations

import asyncio
import base64
import logging
import time

import pytest

from ferrymq.admin import AdminServer
from ferrymq.admin.auth import AdminAccess
from ferrymq.security.api import AuthenticationError, Credentials, Subject
from ferrymq.security.throttle import LoginThrottle
from ferrymq.testing import wait_until
from tests.admin.conftest import StartServer
from tests.admin.fake_broker import FakeBroker
from tests.admin.wire import (
    RawResponse,
    close,
    open_connection,
    read_response,
    read_to_end,
    request,
)

PASSWORDS = {"admin": "s3cret-admin", "reader": "s3cret-reader"}
GROUPS = {"admin": frozenset({"admins", "users"}), "reader": frozenset({"users"})}


class UsersTable:
    """The broker's users as the security package hands them over: the admin server sees
    only the ``Authenticator`` protocol (the configured plugins are tested in tests/security)."""

    def authenticate(self, credentials: Credentials) -> Subject:
        login = credentials.login or ""
        if PASSWORDS.get(login) != credentials.passcode:
            raise AuthenticationError(credentials.login)
        return Subject(login, GROUPS[login])


def basic(user: str, password: str) -> str:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return f"Authorization: Basic {token}"


async def exchange(port: int, method: str, target: str, *headers: str) -> RawResponse:
    reader, writer = await open_connection(port)
    extra = list(headers)
    if method in ("POST", "DELETE"):
        extra += ["Content-Type: application/json", "Content-Length: 0"]
    writer.write(request(method, target, *extra))
    try:
        return await read_response(reader, head=method == "HEAD")
    finally:
        await close(writer)


@pytest.fixture
async def secured(start_server: StartServer) -> AdminServer:
    return await start_server(access=AdminAccess(UsersTable()))


async def test_no_login_is_401_with_a_basic_challenge(secured: AdminServer) -> None:
    answer = await exchange(secured.port, "GET", "/api/v1/broker")
    assert answer.status == 401
    assert answer.headers["www-authenticate"].startswith('Basic realm="FerryMQ"')
    assert answer.json()["error"] == "Unauthorized"
    assert "user name and password" in answer.json()["message"]


async def test_wrong_password_and_unknown_user_get_the_same_answer(secured: AdminServer) -> None:
    wrong_password = await exchange(secured.port, "GET", "/api/v1/broker", basic("admin", "guess"))
    unknown_user = await exchange(secured.port, "GET", "/api/v1/broker", basic("nobody", "guess"))
    assert wrong_password.status == unknown_user.status == 401
    assert wrong_password.body == unknown_user.body
    assert wrong_password.headers["www-authenticate"] == unknown_user.headers["www-authenticate"]
    assert "admin" not in wrong_password.body.decode()


@pytest.mark.parametrize(
    "header",
    [
        "Authorization: Basic !!!not-base64",
        "Authorization: Bearer abc",
        "Authorization: Basic " + base64.b64encode(b"no-colon").decode(),
        "Authorization: Basic " + base64.b64encode(b"admin:\xff\xfe").decode(),
        "Authorization: Basic " + base64.b64encode(b":s3cret-admin").decode(),
    ],
    ids=["not-base64", "other-scheme", "no-colon", "not-utf8", "empty-user"],
)
async def test_a_malformed_authorization_header_is_401(secured: AdminServer, header: str) -> None:
    answer = await exchange(secured.port, "GET", "/api/v1/broker", header)
    assert answer.status == 401
    assert answer.headers["www-authenticate"].startswith("Basic")


async def test_any_user_may_read(secured: AdminServer) -> None:
    for user in ("admin", "reader"):
        answer = await exchange(
            secured.port, "GET", "/api/v1/destinations", basic(user, PASSWORDS[user])
        )
        assert answer.status == 200, (user, answer)
        head = await exchange(secured.port, "HEAD", "/api/v1/broker", basic(user, PASSWORDS[user]))
        assert head.status == 200, (user, head)


@pytest.mark.parametrize(
    ("method", "target"),
    [
        ("POST", "/api/v1/queues/orders/purge"),
        ("DELETE", "/api/v1/destinations/queue/orders"),
        ("DELETE", "/api/v1/connections/c1"),
    ],
)
async def test_only_the_admin_group_may_write(
    secured: AdminServer, method: str, target: str
) -> None:
    refused = await exchange(secured.port, method, target, basic("reader", PASSWORDS["reader"]))
    assert refused.status == 403
    assert "reader" in refused.json()["message"]
    assert "admins" in refused.json()["message"]
    allowed = await exchange(secured.port, method, target, basic("admin", PASSWORDS["admin"]))
    # The fake source has no operations: past the access rule, the server says so (501).
    assert allowed.status == 501, allowed


async def test_a_configured_group_replaces_admins(start_server: StartServer) -> None:
    server = await start_server(access=AdminAccess(UsersTable(), admin_group="users"))
    target = "/api/v1/queues/orders/purge"
    answer = await exchange(server.port, "POST", target, basic("reader", PASSWORDS["reader"]))
    assert answer.status == 501


async def test_health_is_open_and_metrics_are_not(secured: AdminServer, broker: FakeBroker) -> None:
    health = await exchange(secured.port, "GET", "/health")
    assert (health.status, health.json()["state"]) == (200, "serving")
    broker.broker["role"] = "failed"  # the probe's answer follows the broker, without a login
    failed = await exchange(secured.port, "GET", "/health")
    assert (failed.status, failed.json()["state"]) == (503, "failed")
    metrics = await exchange(secured.port, "GET", "/metrics")
    assert metrics.status == 401
    scraped = await exchange(secured.port, "GET", "/metrics", basic("reader", "s3cret-reader"))
    assert scraped.status == 200


async def test_metrics_may_be_opened(start_server: StartServer) -> None:
    server = await start_server(access=AdminAccess(UsersTable(), metrics_open=True))
    assert (await exchange(server.port, "GET", "/metrics")).status == 200
    assert (await exchange(server.port, "GET", "/api/v1/broker")).status == 401


async def test_an_encoded_path_does_not_reach_past_the_login(secured: AdminServer) -> None:
    answer = await exchange(secured.port, "GET", "/%6Detrics")
    assert answer.status == 401


async def test_repeated_failures_from_one_address_are_slowed_down(
    start_server: StartServer,
) -> None:
    delay_s = 0.3
    throttle = LoginThrottle(free_failures=2, first_delay_s=delay_s)
    server = await start_server(access=AdminAccess(UsersTable(), throttle=throttle))
    wrong = basic("admin", "guess")

    async def timed(*headers: str) -> tuple[int, float]:
        started = time.monotonic()
        answer = await exchange(server.port, "GET", "/api/v1/broker", *headers)
        return answer.status, time.monotonic() - started

    for _ in range(2):
        assert (await timed(wrong))[0] == 401
    status, took_s = await timed(wrong)
    assert status == 401
    assert took_s >= delay_s, f"the third failure was answered after {took_s:.3f} s"
    assert throttle.failures("127.0.0.1", "admin") == 3
    # The right password waits as long as a wrong one would (nothing learnt from the timing),
    # then forgives that user's failures from this address.
    status, took_s = await timed(basic("admin", PASSWORDS["admin"]))
    assert status == 200
    assert took_s >= delay_s
    assert throttle.failures("127.0.0.1", "admin") == 0


async def test_a_slowed_down_login_does_not_hold_up_others(start_server: StartServer) -> None:
    throttle = LoginThrottle(free_failures=0, first_delay_s=2.0)
    server = await start_server(access=AdminAccess(UsersTable(), throttle=throttle))
    guessing = asyncio.ensure_future(
        exchange(server.port, "GET", "/api/v1/broker", basic("admin", "guess"))
    )
    await asyncio.sleep(0.05)
    health = await exchange(server.port, "GET", "/health")
    assert health.status == 200
    assert not guessing.done(), "the guesser was answered before the others"
    assert (await guessing).status == 401


async def _login_from(port: int, source: str, credentials: str) -> tuple[RawResponse, bytes]:
    """One login from ``source`` (a loopback address), with what followed the response: b""
    when the server closed the connection after it."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
    try:
        writer.write(request("GET", "/api/v1/broker", credentials))
        answer = await read_response(reader)
        writer.write(request("GET", "/health"))  # a kept-alive connection answers this
        after = await asyncio.wait_for(read_to_end(reader), 10) if answer.status == 429 else b"-"
        return answer, after
    finally:
        await close(writer)


async def test_one_host_cannot_fill_the_connection_limit_with_failed_logins(
    start_server: StartServer,
) -> None:
    limit = 4
    throttle = LoginThrottle(free_failures=1, first_delay_s=4.0, max_delay_s=4.0)
    throttle.failed("127.0.0.1", time.monotonic(), "admin")  # the next try waits 4 s
    access = AdminAccess(UsersTable(), throttle=throttle)
    server = await start_server(access=access, max_connections=limit)
    wrong = basic("admin", "guess")
    held = [asyncio.ensure_future(_login_from(server.port, "127.0.0.1", wrong)) for _ in range(2)]
    await wait_until(lambda: access.pending("127.0.0.1") == 2, 10, "two logins held back")
    # Every further login from that host is refused at once, unchecked, and its slot freed.
    for _ in range(2 * limit):
        refused, after = await _login_from(server.port, "127.0.0.1", wrong)
        assert refused.status == 429, refused
        assert refused.headers["connection"] == "close"
        assert "too many logins in progress from 127.0.0.1" in refused.json()["message"]
        assert after == b"", "the connection stays open after a 429"
    assert throttle.failures("127.0.0.1") == 1, "a login was checked before its wait"
    # Another host still gets a slot, and its login is answered at once.
    answer, _ = await _login_from(server.port, "127.0.0.2", basic("admin", PASSWORDS["admin"]))
    assert answer.status == 200, answer
    assert not any(task.done() for task in held), "the held-back answers were sent early"
    assert [(await task)[0].status for task in held] == [401, 401]
    assert throttle.failures("127.0.0.1") == 3


async def test_no_password_reaches_the_log(
    secured: AdminServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    await exchange(secured.port, "GET", "/api/v1/broker", basic("admin", "guess-XYZZY"))
    await exchange(secured.port, "GET", "/api/v1/broker", basic("admin", PASSWORDS["admin"]))
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "guess-XYZZY" not in logged
    assert PASSWORDS["admin"] not in logged
    assert "failed login for user 'admin'" in logged
