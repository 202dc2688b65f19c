"""URLs, option checks, and the per-broker dialect rules."""

from __future__ import annotations

import pytest

from ferrymq.bench import ACTIVEMQ, COILMQ, RABBITMQ, BenchOptionError, BenchOptions, detect
from ferrymq.bench.options import Endpoint, parse_url


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("tcp://127.0.0.1:61613", ("127.0.0.1", 61613)),
        ("stomp://localhost:1234", ("localhost", 1234)),
        ("127.0.0.1:5555", ("127.0.0.1", 5555)),
        ("tcp://broker", ("broker", 61613)),
    ],
)
def test_urls(url: str, expected: tuple[str, int]) -> None:
    assert parse_url(url) == expected


@pytest.mark.parametrize("url", ["http://127.0.0.1:80", "tcp://:61613", "tcp://h:port"])
def test_bad_urls_name_the_url(url: str) -> None:
    with pytest.raises(BenchOptionError, match="bad broker URL"):
        parse_url(url)


def options(**changes: object) -> BenchOptions:
    return BenchOptions(Endpoint("127.0.0.1", 61613), ("queue",), **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "flag"),
    [
        ({"count": 0}, "--count"),
        ({"size": 4}, "--size"),
        ({"warmup": -1}, "--warmup"),
        ({"window": 0}, "--window"),
        ({"latency_rate": 0.0}, "--latency-rate"),
        ({"duration_s": 0.0}, "--duration"),
        ({"max_seconds": -1.0}, "--max-seconds"),
        ({"prefetch": 0}, "--prefetch"),
    ],
)
def test_impossible_options_are_refused(changes: dict[str, object], flag: str) -> None:
    with pytest.raises(BenchOptionError, match=flag):
        options(**changes).check()


def test_defaults_are_accepted() -> None:
    options().check()


@pytest.mark.parametrize(
    ("server", "dialect"),
    [
        ("ActiveMQ/5.17.2", ACTIVEMQ),
        ("FerryMQ/0.1.0", ACTIVEMQ),
        ("RabbitMQ/3.10.8", RABBITMQ),
        ("coilmq/1.1.0", COILMQ),
        (None, ACTIVEMQ),
        ("Apache ActiveMQ Artemis/2.30", ACTIVEMQ),
    ],
)
def test_dialect_from_the_server_header(server: str | None, dialect: object) -> None:
    assert detect(server) is dialect


def test_prefetch_headers_per_broker() -> None:
    assert ACTIVEMQ.subscribe_headers("auto", None) == {}
    assert ACTIVEMQ.subscribe_headers("client-individual", 10) == {"activemq.prefetchSize": "10"}
    # RabbitMQ gives a client-ack subscription no limit unless told.
    assert RABBITMQ.subscribe_headers("client-individual", None) == {"prefetch-count": "1000"}
    assert RABBITMQ.subscribe_headers("auto", None) == {}
    assert COILMQ.subscribe_headers("client", 10) == {}


def test_coilmq_gets_stomp_1_1_and_its_client_mode() -> None:
    assert COILMQ.versions[-1] == "1.1"
    assert COILMQ.individual_ack == "client"
    assert COILMQ.max_unread_bytes == 4096
    assert RABBITMQ.default_login == ("guest", "guest")
    assert RABBITMQ.queue("x") == "/queue/x"
    assert RABBITMQ.topic("x") == "/topic/x"
