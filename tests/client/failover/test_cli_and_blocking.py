"""Every URL form from scripts: the CLI's send, consume and browse, and the blocking facade."""

from __future__ import annotations

import asyncio

import pytest

from ferrymq.broker import Broker
from ferrymq.cli.main import main
from ferrymq.client import blocking


async def ferrymq(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = await asyncio.to_thread(main, list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


async def test_send_consume_and_browse_with_failover_discovery_and_masterslave_urls(
    persistent_broker: Broker, dead_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = persistent_broker.stomp_urls[0]
    failover = f"failover:({dead_url},{url})?randomize=false&initialReconnectDelay=10"
    code, _, err = await ferrymq(capsys, "send", failover, "/queue/cli-failover", "--count", "5")
    assert code == 0, err
    assert "sent 5 messages" in err
    code, out, err = await ferrymq(
        capsys, "browse", f"discovery:(static:({dead_url},{url}))", "/queue/cli-failover"
    )
    assert code == 0, err
    assert out.splitlines() == [f"message {n}" for n in range(1, 6)]
    code, out, err = await ferrymq(
        capsys, "consume", f"masterslave:({dead_url},{url})", "/queue/cli-failover", "--count", "5"
    )
    assert code == 0, err
    assert out.splitlines() == [f"message {n}" for n in range(1, 6)]


async def test_a_bad_failover_option_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = await ferrymq(
        capsys, "send", "failover:(tcp://127.0.0.1:1)?randomise=false", "/queue/x", "--count", "1"
    )
    assert code != 0
    assert "randomise" in err
    assert "did you mean randomize" in err


def blocking_script(url: str) -> tuple[str, list[str]]:
    with blocking.connect(url) as connection:
        subscription = connection.subscribe("/queue/blocking-failover")
        connection.send("/queue/blocking-failover", "hello", receipt=True)
        return connection.remote_url, [subscription.get(timeout=5).text]


async def test_the_blocking_facade_takes_a_failover_url(
    persistent_broker: Broker, dead_url: str
) -> None:
    url = persistent_broker.stomp_urls[0]
    failover = f"failover:({dead_url},{url})?randomize=false"
    remote, bodies = await asyncio.to_thread(blocking_script, failover)
    assert (remote, bodies) == (url, ["hello"])
