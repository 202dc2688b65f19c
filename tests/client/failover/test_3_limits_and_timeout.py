"""Issue 3, "How it is checked" 3: maxReconnectAttempts and startupMaxReconnectAttempts end
with a clear error after the right number of passes; ``timeout`` makes a send fail after the
given time while no broker is up, and the connection carries on once one is."""

from __future__ import annotations

import asyncio
import logging

import pytest

from ferrymq.client import (
    ConnectFailedError,
    ConnectionClosed,
    FailoverTimeoutError,
    connect,
)
from ferrymq.testing import free_port
from tests.client.failover.conftest import Brokers, Watcher

FAST = "initialReconnectDelay=10&maxReconnectDelay=20"


def dead_urls(count: int) -> list[str]:
    return [f"tcp://127.0.0.1:{free_port()}" for _ in range(count)]


@pytest.mark.parametrize(
    ("options", "passes"),
    [
        ("startupMaxReconnectAttempts=3", 3),
        ("startupMaxReconnectAttempts=0", 1),  # Table 2.1: 0 = no retry
        ("maxReconnectAttempts=0", 1),  # the initial attempt is made
        ("maxReconnectAttempts=2", 2),  # used at start-up when the startup limit is -1
        ("maxReconnectAttempts=5&startupMaxReconnectAttempts=1", 1),
    ],
)
async def test_3_startup_gives_up_after_the_right_number_of_passes(
    options: str, passes: int
) -> None:
    dead = dead_urls(2)
    url = f"failover:({','.join(dead)})?randomize=false&{FAST}&{options}"
    with pytest.raises(ConnectFailedError) as caught:
        await connect(url)
    assert len(caught.value.attempts) == 2 * passes
    assert f"gave up after {passes} pass(es)" in str(caught.value)
    assert dead[-1] in str(caught.value)  # the last error says where
    assert caught.value.url == url


async def test_3_max_reconnect_attempts_closes_the_connection_after_n_passes(
    brokers: Brokers,
) -> None:
    a = await brokers.start("a")
    dead = dead_urls(1)[0]
    connection = await connect(
        f"failover:({a.url},{dead})?randomize=false&{FAST}&maxReconnectAttempts=3"
    )
    watcher = Watcher(connection)
    subscription = await connection.subscribe("/queue/limits")
    a.kill()
    await watcher.interruptions(1)
    waiting_send = asyncio.create_task(connection.send("/queue/limits", "never", receipt=True))
    reason = await asyncio.wait_for(connection.wait_closed(), 10)
    assert "gave up after 3 pass(es)" in str(reason)
    stats = connection.statistics().transport
    assert stats.reconnect_attempts == 6  # 3 passes over 2 brokers
    with pytest.raises(ConnectionClosed, match="gave up after 3"):
        await waiting_send
    with pytest.raises(ConnectionClosed):
        await subscription.get()
    assert watcher.resumed_at == []
    await connection.close()


async def test_3_max_reconnect_attempts_zero_never_reconnects(brokers: Brokers) -> None:
    a = await brokers.start("a")
    b = await brokers.start("b")
    connection = await connect(f"failover:({a.url},{b.url})?randomize=false&maxReconnectAttempts=0")
    a.kill()
    reason = await asyncio.wait_for(connection.wait_closed(), 10)
    assert "maxReconnectAttempts=0" in str(reason)
    assert connection.statistics().transport.reconnect_attempts == 0
    await connection.close()


async def test_3_masterslave_tries_in_order_once(brokers: Brokers) -> None:
    dead = dead_urls(1)[0]
    a = await brokers.start("a")
    async with connect(f"masterslave:({dead},{a.url})") as connection:
        assert connection.remote_url == a.url
        attempts = connection.statistics().transport.connect_attempts
        assert [x.url for x in attempts] == [dead, a.url]
    with pytest.raises(ConnectFailedError, match="gave up after 1 pass"):
        await connect(f"masterslave:({dead},{dead_urls(1)[0]})")


async def test_3_a_send_times_out_while_no_broker_is_up_then_works_again(
    brokers: Brokers,
) -> None:
    a = await brokers.start("a")
    connection = await connect(f"failover:({a.url})?timeout=500&{FAST}")
    watcher = Watcher(connection)
    a.kill()
    await watcher.interruptions(1)
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(FailoverTimeoutError) as caught:
        await connection.send("/queue/timeout", "waits 500 ms", persistent=True)
    assert loop.time() - started >= 0.5 - 0.01
    assert str(caught.value) == "Failover timeout of 500 ms reached."
    assert not connection.closed
    await brokers.restart(a)
    await watcher.resumptions(1)
    await connection.send("/queue/timeout", "after", persistent=True)
    subscription = await connection.subscribe("/queue/timeout")
    assert (await subscription.get(timeout=5)).text == "after"  # the timed-out one was not sent
    await connection.disconnect()


async def test_3_warn_after_reconnect_attempts_logs_pass_one_and_every_nth(
    caplog: pytest.LogCaptureFixture,
) -> None:
    url = (
        f"failover:({dead_urls(1)[0]})?initialReconnectDelay=1&maxReconnectDelay=1"
        "&warnAfterReconnectAttempts=3&startupMaxReconnectAttempts=7"
    )
    with (
        caplog.at_level(logging.WARNING, logger="ferrymq.client.failover"),
        pytest.raises(ConnectFailedError),
    ):
        await connect(url)
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert [m.split(" after ")[1].split(" ")[0] for m in warned] == ["1", "3", "6"]
    assert all("continuing to retry" in m for m in warned)
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert "after 7 pass(es)" in errors[0]
