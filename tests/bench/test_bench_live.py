"""``ferrymq bench`` against a real FerryMQ broker: every scenario, every message exactly once.

The broker runs in the test's event loop; the benchmark blocks, so it runs in a thread and
spawns its producer and consumer processes from there, as it does from the command line.
"""

from __future__ import annotations

import asyncio
import json
import sys

import pytest

from ferrymq.bench import NAMES, BenchOptions, Endpoint, parse_url, run_bench
from ferrymq.broker import Broker

COUNT = 200
SUBSCRIBERS = 2
LATENCY_SAMPLES = 30


@pytest.fixture
def broker_url(broker: Broker) -> str:
    """The shared persistent test broker (tests/conftest.py), in this process."""
    return broker.stomp_urls[0]


async def test_every_scenario_gets_every_message_exactly_once(broker_url: str) -> None:
    host, port = parse_url(broker_url)
    options = BenchOptions(
        Endpoint(host, port),
        NAMES,
        count=COUNT,
        warmup=20,
        subscribers=SUBSCRIBERS,
        latency_samples=LATENCY_SAMPLES,
        latency_warmup=5,
        latency_rate=1000.0,
        idle_timeout_s=10.0,
        linger_s=0.05,
    )
    report = await asyncio.to_thread(run_bench, options)

    assert report.server is not None
    assert report.server.startswith("FerryMQ/")
    assert report.dialect == "activemq"
    assert report.version == "1.2"
    assert [s.name for s in report.scenarios] == list(NAMES)
    for result in report.scenarios:
        assert result.ok, (result.name, result.problems)
        assert (result.lost, result.duplicated, result.unexpected) == (0, 0, 0), result.name
        expected = LATENCY_SAMPLES if result.name == "latency" else COUNT
        assert result.messages == expected, result.name
        per_consumer = SUBSCRIBERS if result.name == "topic" else 1
        assert result.received == expected * per_consumer, result.name
        assert result.msg_per_s > 0, result.name
    topic = next(r for r in report.scenarios if r.name == "topic")
    assert [s.received for s in topic.subscribers] == [COUNT] * SUBSCRIBERS
    latency = next(r for r in report.scenarios if r.name == "latency")
    assert latency.latency is not None
    assert latency.latency.samples == LATENCY_SAMPLES
    assert 0 < latency.latency.p50_ms <= latency.latency.p99_ms
    assert report.ok


async def test_command_line_json_with_coilmq_rules(broker_url: str) -> None:
    # coilmq's rules (STOMP 1.1, ack:client, receipted chunks of at most 2 KiB) work against any
    # broker, so FerryMQ checks that path too.
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "ferrymq.cli.main",
        "bench",
        broker_url,
        "--dialect",
        "coilmq",
        "--scenario",
        "queue",
        "--scenario",
        "client-individual",
        "--count",
        "300",
        "--warmup",
        "10",
        "--timeout",
        "10",
        "--json",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, stderr.decode()
    data = json.loads(stdout)
    assert data["ok"] is True
    assert data["dialect"] == "coilmq"
    assert data["version"] == "1.1"
    assert [s["name"] for s in data["scenarios"]] == ["queue", "client-individual"]
    assert [s["ack_mode"] for s in data["scenarios"]] == ["auto", "client"]
    for scenario in data["scenarios"]:
        assert scenario["received"] == 300
        assert scenario["lost"] == scenario["duplicated"] == 0
    assert "queue: " in stderr.decode()  # progress goes to stderr


async def test_an_unreachable_broker_is_a_clear_error() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "ferrymq.cli.main",
        "bench",
        "tcp://127.0.0.1:1",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 2
    assert "cannot connect to tcp://127.0.0.1:1" in stderr.decode()
