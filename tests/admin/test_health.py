"""``GET /health`` (issue 15, item 11): 200 only while the broker serves clients, a JSON body
that says the state and why, and ``?slave_ok=1`` for a probe that accepts a healthy slave."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ferrymq.admin import Router
from ferrymq.admin.health import HEALTH_ROUTE, ROLES, HealthState, assess
from ferrymq.broker import Role
from ferrymq.config.cli import config_from_flags
from ferrymq.testing import (
    BrokerProcess,
    broker_group,
    free_port,
    running_broker,
    start_group,
    wait_until_blocking,
)
from tests.admin.fake_broker import FakeBroker, broker_statistics
from tests.ha.test_shared_file_group import group_config


def http_get(url: str, method: str = "GET") -> tuple[int, bytes]:
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            body: bytes = response.read()
            return response.status, body
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read()


def health(base: str, query: str = "") -> tuple[int, dict[str, Any]]:
    status, body = http_get(f"{base}/health{query}")
    document: dict[str, Any] = json.loads(body)
    return status, document


def _dispatch(statistics: dict[str, Any], query: str = "") -> tuple[int, dict[str, Any]]:
    response = Router([HEALTH_ROUTE]).dispatch(FakeBroker(statistics), "GET", "/health" + query)
    document: dict[str, Any] = json.loads(response.body)
    return response.status, document


# -- the decision ------------------------------------------------------------------------------


def test_every_role_of_the_broker_is_mapped_explicitly() -> None:
    """A role added to ``ferrymq.broker.Role`` fails here until health says what it means."""
    assert {role.value for role in Role} <= set(ROLES)


@pytest.mark.parametrize(
    ("role", "extra", "state"),
    [
        ("standalone", {}, HealthState.SERVING),
        ("master", {}, HealthState.SERVING),
        ("master", {"uptime_s": 0.0}, HealthState.STARTING),
        ("waiting for lock", {"lock": {"resource": "/s/lock", "held": False}}, HealthState.SLAVE),
        ("waiting for lock", {"lock": {"resource": "/s/lock", "held": True}}, HealthState.STARTING),
        ("replicating", {"replication": {"master": "tcp://m:1"}}, HealthState.SLAVE),
        ("waiting for slave", {}, HealthState.STARTING),
        ("failed", {"failure": "the store failed"}, HealthState.FAILED),
        ("stopped", {}, HealthState.STOPPING),
        ("pondering", {}, HealthState.UNKNOWN),
    ],
)  # fmt: skip
def test_roles_map_to_states(role: str, extra: dict[str, Any], state: HealthState) -> None:
    found = assess({**broker_statistics(), "role": role, **extra})
    assert found.state is state
    assert found.serving == (state is HealthState.SERVING)
    assert found.reason


def test_only_serving_answers_200_and_slave_ok_passes_only_a_slave() -> None:
    slave = {**broker_statistics(), "role": "replicating"}
    assert _dispatch(slave)[0] == 503
    assert _dispatch(slave, "?slave_ok=1")[0] == 200
    assert _dispatch(slave, "?slave_ok=0")[0] == 503
    failed = {**broker_statistics(), "role": "failed", "failure": "the store failed"}
    status, document = _dispatch(failed, "?slave_ok=1")
    assert (status, document["state"], document["reason"]) == (503, "failed", "the store failed")
    unknown = {**broker_statistics(), "role": "pondering"}
    assert _dispatch(unknown, "?slave_ok=1")[0] == 503


def test_a_bad_slave_ok_value_is_refused() -> None:
    status, document = _dispatch(broker_statistics(), "?slave_ok=maybe")
    assert status == 400
    assert "slave_ok=1" in document["message"]


# -- a real broker over HTTP ---------------------------------------------------------------------


async def test_a_single_broker_answers_200_serving(tmp_path: Path) -> None:
    config = config_from_flags("solo", tmp_path / "data", ["stomp://127.0.0.1:0"], "127.0.0.1:0")
    async with running_broker(config) as broker:
        assert broker.admin is not None
        status, document = await asyncio.to_thread(health, broker.admin.url)
        assert status == 200
        assert document["state"] == "serving"
        assert document["serving"] is True
        assert document["role"] == broker.role.value
        assert document["broker"] == "solo"
        head = await asyncio.to_thread(http_get, broker.admin.url + "/health", "HEAD")
        assert head == (200, b"")


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[list[tuple[BrokerProcess, str]]]:
    """A shared-file master/slave pair of broker processes, each with its admin API's URL."""
    with broker_group(tmp_path, group_config(tmp_path / "shared"), ("b1", "b2")) as brokers:
        bases = []
        for broker in brokers:
            port = free_port()
            broker.extra_args = ["--admin", f"127.0.0.1:{port}"]
            bases.append(f"http://127.0.0.1:{port}")
        start_group(brokers)
        yield list(zip(brokers, bases, strict=True))


def test_master_200_slave_503_then_the_slave_takes_over(
    pair: list[tuple[BrokerProcess, str]],
) -> None:
    (master, master_base), (slave, slave_base) = pair
    assert (master.state, slave.state) == ("master", "slave")
    status, document = health(master_base)
    assert (status, document["state"], document["role"]) == (200, "serving", "master")

    status, document = health(slave_base)
    assert status == 503
    assert document["state"] == "slave"
    assert document["serving"] is False
    assert document["role"] == "waiting for lock"
    assert "lock" in document["reason"]
    assert health(slave_base, "?slave_ok=1")[0] == 200

    master.kill()
    wait_until_blocking(
        lambda: health(slave_base)[0] == 200,
        20,
        "the slave to take over and answer 200",
        detail=lambda: "".join(slave.output[-5:]),
    )
    assert health(slave_base)[1]["role"] == "master"
