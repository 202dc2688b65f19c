"""``vm://NAME`` URLs and ActiveMQ's VM transport options (issue 15, defect 3; ActiveMQ
documentation, "VM Transport Reference": ``create``, ``waitForStart``, ``marshal``...)."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from pathlib import Path

import pytest

from ferrymq.client import BrokerURLError, ConnectFailedError, connect
from ferrymq.client.blocking import connect as blocking_connect
from ferrymq.testing import BrokerThread, broker_config, running_broker
from ferrymq.transport.connection import TransportConnection


async def test_create_false_without_such_a_broker_says_so() -> None:
    with pytest.raises(ConnectFailedError) as caught:
        await connect("vm://nobody-here?create=false")
    text = str(caught.value)
    assert text.startswith("cannot connect to vm://nobody-here: ")
    assert "no broker named 'nobody-here' runs in this process" in text
    assert "waitForStart" in text


async def test_without_create_false_the_error_says_no_broker_is_created() -> None:
    """ActiveMQ would boot a broker here; FerryMQ never does, and says where to look."""
    with pytest.raises(ConnectFailedError, match="does not create a broker on demand") as caught:
        await connect("vm://nobody-here?broker.persistent=false")
    assert "docs/embedding.md" in str(caught.value)


async def test_wait_for_start_waits_for_the_broker_to_register(tmp_path: Path) -> None:
    connecting = asyncio.ensure_future(connect("vm://latecomer?create=false&waitForStart=20000"))
    try:
        await asyncio.sleep(0.2)
        assert not connecting.done()  # waiting: no broker of that name yet
        async with running_broker(broker_config(tmp_path, name="latecomer", persistent=False)):
            conn = await asyncio.wait_for(connecting, 10)
            await conn.send("/queue/q", "hello", receipt=True)
            await conn.disconnect()
    finally:
        connecting.cancel()


async def test_wait_for_start_gives_up_after_its_time() -> None:
    started = time.monotonic()
    with pytest.raises(ConnectFailedError, match=r"waited waitForStart=300 ms"):
        await connect("vm://nobody-here?create=false&waitForStart=300")
    assert time.monotonic() - started >= 0.3


async def test_options_without_meaning_here_are_accepted_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = "vm://opts?marshal=false&async=false&broker.persistent=false&wireFormat.x=1"
    caplog.set_level(logging.DEBUG, logger="ferrymq.client.vm")
    config = broker_config(tmp_path, name="opts", persistent=False)
    async with running_broker(config), connect(url) as conn:
        await conn.send("/queue/q", "x", receipt=True)
    logged = [r.getMessage() for r in caplog.records if r.name == "ferrymq.client.vm"]
    assert any("marshal=false has no effect" in line for line in logged), logged
    assert all(r.levelno == logging.DEBUG for r in caplog.records if r.name == "ferrymq.client.vm")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("vm://b?creat=false", "unknown option 'creat' for vm: (did you mean create?)"),
        ("vm://b?jms.prefetchPolicy.all=1", "unknown option 'jms.prefetchPolicy.all'"),
        ("vm://b?create=maybe", "option create must be true or false"),
        ("vm://b?waitForStart=soon", "option waitForStart must be milliseconds"),
        ("vm://?create=false", "a broker name is required"),
    ],
)
def test_bad_vm_urls_are_refused_at_connect(url: str, message: str) -> None:
    with pytest.raises(BrokerURLError) as caught:
        connect(url)
    assert message in str(caught.value)


def test_a_blocking_client_reaches_a_broker_on_another_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The blocking client runs its own event loop: the broker's side of the socket pair is
    still served on the broker's loop (its thread), never on the client's."""
    threads: list[str] = []
    accepted = TransportConnection.connection_made

    def record(self: TransportConnection, transport: asyncio.BaseTransport) -> None:
        threads.append(threading.current_thread().name)
        accepted(self, transport)

    monkeypatch.setattr(TransportConnection, "connection_made", record)
    config = broker_config(tmp_path, name="threaded", persistent=False)
    with BrokerThread(config), blocking_connect("vm://threaded?create=false") as conn:
        conn.send("/queue/t", "across threads", receipt=True)
        subscription = conn.subscribe("/queue/t")
        message = subscription.get(timeout=5)
        assert message.text == "across threads"
    assert threads
    assert "ferrymq-client" not in threads  # the blocking client's loop thread
