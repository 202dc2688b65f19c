"""``/health`` without a login says what a probe needs and no more (issue 16, review finding 12):
state and serving; the reason (lock paths, hosts, the master's URL, failure text) and the
broker's name and id are for logged-in users, or for everyone when the broker has no users."""

from __future__ import annotations

import pytest

from ferrymq.admin.auth import AdminAccess
from ferrymq.cli.health_command import describe
from tests.admin.conftest import StartServer
from tests.admin.fake_broker import FakeBroker
from tests.admin.test_admin_auth import UsersTable, basic, exchange

LOCK = "/srv/secret-share/amq-east/lock"


@pytest.fixture
def waiting(broker: FakeBroker) -> FakeBroker:
    broker.broker["role"] = "waiting for lock"
    broker.broker["lock"] = {"resource": LOCK, "held": False, "current_holder": "db.internal"}
    return broker


async def test_a_stranger_learns_state_and_serving_only(
    start_server: StartServer, waiting: FakeBroker
) -> None:
    server = await start_server(access=AdminAccess(UsersTable()))
    answer = await exchange(server.port, "GET", "/health")
    assert answer.status == 503
    assert answer.json() == {"state": "slave", "serving": False}
    assert LOCK not in answer.body.decode()
    waiting.broker["role"] = "failed"
    waiting.broker["failure"] = "cannot reach postgresql://store@db.internal:5432/amq"
    failed = await exchange(server.port, "GET", "/health?slave_ok=1")
    assert (failed.status, failed.json()) == (503, {"state": "failed", "serving": False})


async def test_a_user_gets_the_reason(start_server: StartServer, waiting: FakeBroker) -> None:
    server = await start_server(access=AdminAccess(UsersTable()))
    answer = await exchange(server.port, "GET", "/health", basic("reader", "s3cret-reader"))
    assert answer.status == 503
    document = answer.json()
    assert (document["state"], document["broker"]) == ("slave", "amq-east")
    assert LOCK in document["reason"]
    assert "db.internal" in document["reason"]
    wrong = await exchange(server.port, "GET", "/health", basic("reader", "guess"))
    assert wrong.status == 401


async def test_without_authentication_everyone_gets_the_reason(
    start_server: StartServer, waiting: FakeBroker
) -> None:
    server = await start_server()
    document = (await exchange(server.port, "GET", "/health")).json()
    assert LOCK in document["reason"]


def test_the_cli_line_for_a_stranger_s_answer() -> None:
    assert describe({"state": "slave", "serving": False}) == "the broker: slave"
