"""``ferrymq send``, ``consume`` and ``browse`` with ``amqp://`` URLs against a real broker's
AMQP 1.0 listener (issue 17, item 6): the client library's AMQP transport under the CLI, across
protocols (AMQP in, STOMP out and the reverse), transactions, durable subscriptions, and a
``failover:`` between the AMQP listeners of a shared-file master/slave pair whose master is
SIGKILLed mid-send.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from ferrymq.broker import Broker
from ferrymq.cli.main import main
from ferrymq.client import connect
from ferrymq.client.errors import ConnectFailedError
from ferrymq.config.cli import config_from_flags
from ferrymq.config.model import BrokerConfig
from ferrymq.config.tls import SslContextConfig
from ferrymq.testing import (
    BrokerProcess,
    broker_config,
    broker_group,
    free_port,
    start_group,
    wait_for_master,
)
from ferrymq.testing.brokers import amqp_port
from ferrymq.testing.certificates import PASSWORD, make_certificates
from tests.ha.test_shared_file_group import group_config

WAIT_S = 10.0


USERS = """
<broker xmlns="http://activemq.apache.org/schema/core">
  <plugins>
    <simpleAuthenticationPlugin>
      <users>
        <authenticationUser username="alice" password="s3cret" groups="users,admins"/>
      </users>
    </simpleAuthenticationPlugin>
  </plugins>
</broker>
"""


class Urls:
    def __init__(self, broker: Broker) -> None:
        self.stomp = broker.stomp_urls[0]
        self.amqp = f"amqp://127.0.0.1:{amqp_port(broker)}"


async def started(config: BrokerConfig) -> AsyncIterator[Urls]:
    broker = Broker(config)
    await broker.start()
    yield Urls(broker)
    await broker.stop()


@pytest.fixture
async def urls(tmp_path: Path) -> AsyncIterator[Urls]:
    async for started_urls in started(broker_config(tmp_path, name="amqp-cli", amqp=True)):
        yield started_urls


@pytest.fixture
async def secured(tmp_path: Path) -> AsyncIterator[Urls]:
    config = broker_config(tmp_path, name="amqp-secured", xml=USERS, amqp=True)
    async for started_urls in started(config):
        yield started_urls


async def ferrymq(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run the command in a worker thread (it runs its own loop); (exit code, out, err)."""
    code = await asyncio.to_thread(main, list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def numbers(out: str) -> list[int]:
    """The sequence numbers of ``message N`` bodies in jsonl output."""
    found = []
    for line in out.splitlines():
        match = re.fullmatch(r"message (\d+)", str(json.loads(line)["body"]).rstrip("."))
        assert match is not None, line
        found.append(int(match[1]))
    return found


async def test_sent_over_amqp_received_over_amqp_and_stomp(
    urls: Urls, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = await ferrymq(
        capsys, "send", urls.amqp, "/queue/mixed", "--count", "20", "--persistent"
    )
    assert code == 0, err
    assert "sent 20 messages" in err
    code, over_amqp, err = await ferrymq(
        capsys, "consume", urls.amqp, "/queue/mixed", "--count", "10", "--format", "jsonl"
    )
    assert code == 0, err
    code, over_stomp, err = await ferrymq(
        capsys, "consume", urls.stomp, "/queue/mixed", "--count", "10", "--format", "jsonl"
    )
    assert code == 0, err
    assert sorted(numbers(over_amqp) + numbers(over_stomp)) == list(range(1, 21))
    record = json.loads(over_stomp.splitlines()[0])
    assert record["headers"]["persistent"] == "true"


async def test_sent_over_stomp_browsed_and_consumed_over_amqp(
    urls: Urls, capsys: pytest.CaptureFixture[str]
) -> None:
    async with await connect(urls.stomp) as stomp:
        for n in range(1, 4):
            await stomp.send(
                "/queue/browsed",
                f"message {n}",
                headers={"correlation-id": f"c-{n}", "color": "red"},
                priority=7,
                receipt=True,
            )
    code, out, err = await ferrymq(capsys, "browse", urls.amqp, "/queue/browsed")
    assert code == 0, err
    assert out.splitlines() == ["message 1", "message 2", "message 3"]
    code, out, err = await ferrymq(
        capsys, "consume", urls.amqp, "/queue/browsed", "--count", "3", "--format", "jsonl"
    )
    assert code == 0, err
    first = json.loads(out.splitlines()[0])
    assert first["id"].startswith("ID:")
    headers = first["headers"]
    assert (headers["correlation-id"], headers["color"], headers["priority"]) == ("c-1", "red", "7")
    assert numbers(out) == [1, 2, 3]


async def test_transactions_over_amqp(urls: Urls, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = await ferrymq(
        capsys, "send", urls.amqp, "/queue/tx", "--count", "10", "--transaction-batch", "4"
    )
    assert code == 0, err
    async with await connect(urls.amqp) as conn:
        transaction = await conn.begin()
        await conn.send("/queue/tx", "rolled back", transaction=transaction)
        await transaction.abort()
    code, out, err = await ferrymq(
        capsys, "consume", urls.stomp, "/queue/tx", "--idle-timeout", "1", "--format", "jsonl"
    )
    assert code == 0, err
    assert numbers(out) == list(range(1, 11))  # the aborted one never arrives


async def test_a_durable_subscription_over_amqp(
    urls: Urls, capsys: pytest.CaptureFixture[str]
) -> None:
    async with await connect(urls.amqp, client_id="amqp-client") as conn:
        subscription = await conn.subscribe("/topic/news", durable_name="news")
        await subscription.unsubscribe()  # detached: the subscription stays on the broker
    code, _, err = await ferrymq(capsys, "send", urls.stomp, "/topic/news", "--count", "5")
    assert code == 0, err
    code, out, err = await ferrymq(
        capsys,
        "consume",
        urls.amqp,
        "/topic/news",
        "--durable",
        "news",
        "--client-id",
        "amqp-client",
        "--count",
        "5",
        "--format",
        "jsonl",
    )
    assert code == 0, err
    assert numbers(out) == [1, 2, 3, 4, 5]
    async with await connect(urls.amqp, client_id="amqp-client") as conn:
        subscription = await conn.subscribe("/topic/news", durable_name="news")
        await subscription.unsubscribe(durable=True)  # removed
    code, _, err = await ferrymq(capsys, "send", urls.stomp, "/topic/news", "--count", "2")
    assert code == 0, err
    async with await connect(urls.amqp, client_id="amqp-client") as conn:
        subscription = await conn.subscribe("/topic/news", durable_name="news")
        with pytest.raises(TimeoutError):
            await subscription.get(timeout=0.5)  # nothing was kept for it


async def test_a_selector_over_amqp(urls: Urls, capsys: pytest.CaptureFixture[str]) -> None:
    async with await connect(urls.amqp) as conn:
        for color in ("red", "blue", "red"):
            await conn.send("/queue/colors", color, headers={"color": color}, receipt=True)
    code, out, err = await ferrymq(
        capsys, "consume", urls.amqp, "/queue/colors", "--selector", "color = 'red'",
        "--idle-timeout", "1",
    )  # fmt: skip
    assert code == 0, err
    assert out.splitlines() == ["red", "red"]


async def test_sasl_plain_with_login_and_passcode(
    secured: Urls, capsys: pytest.CaptureFixture[str]
) -> None:
    login = ("--login", "alice", "--passcode", "s3cret")
    code, _, err = await ferrymq(capsys, "send", secured.amqp, "/queue/s", "--count", "3", *login)
    assert code == 0, err
    code, out, err = await ferrymq(
        capsys, "consume", secured.stomp, "/queue/s", "--count", "3", *login
    )
    assert code == 0, err
    assert len(out.splitlines()) == 3
    for argv in (("--login", "alice", "--passcode", "wrong"), ()):
        code, _, err = await ferrymq(capsys, "send", secured.amqp, "/queue/s", *argv)
        assert code == 1
        assert "Traceback" not in err
        assert "amqp:unauthorized-access" in err.splitlines()[0], err


async def test_amqps_with_a_trust_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    certificates = make_certificates(tmp_path / "certificates")
    config = config_from_flags(
        "amqp-tls", tmp_path, ["stomp://127.0.0.1:0", "amqp+ssl://127.0.0.1:0"], "off", False
    )
    ssl_context = SslContextConfig(key_store=certificates.server.p12, key_store_password=PASSWORD)
    async for started_urls in started(replace(config, ssl_context=ssl_context)):
        port = started_urls.amqp.rsplit(":", 1)[1]
        trusted = f"amqps://localhost:{port}?trustStore={certificates.ca_pem}"
        code, _, err = await ferrymq(capsys, "send", trusted, "/queue/tls", "--count", "2")
        assert code == 0, err
        code, out, err = await ferrymq(
            capsys, "consume", trusted.replace("amqps:", "amqp+ssl:"), "/queue/tls", "--count", "2"
        )
        assert code == 0, err
        assert out.splitlines() == ["message 1", "message 2"]
        code, _, err = await ferrymq(capsys, "send", f"amqps://localhost:{port}", "/queue/tls")
        assert code == 1
        assert "TLS certificate was refused" in err.splitlines()[0]


async def test_idle_timeout_keeps_an_idle_connection_alive(tmp_path: Path) -> None:
    """The broker closes a client silent for its idle timeout; the client's tick timer sends
    empty frames often enough, and advertises its own timeout from the heart-beat."""
    listen = ["stomp://127.0.0.1:0", "amqp://127.0.0.1:0?wireFormat.idleTimeout=600"]
    config = config_from_flags("amqp-idle", tmp_path, listen, "off", False)
    async for started_urls in started(config):
        async with await connect(started_urls.amqp, heart_beat=(0, 2000)) as conn:
            statistics = conn.statistics().transport
            assert statistics.send_interval_ms == 150  # a quarter: proton sends at half of half
            assert statistics.receive_timeout_ms == 2000
            await asyncio.sleep(1.5)  # more than twice the broker's timeout, doing nothing
            await conn.send("/queue/idle", "still here", receipt=True)


async def test_failover_passes_a_listener_that_hangs_up(urls: Urls) -> None:
    """A socket closed before the AMQP open is a failed connect, not a refusal: the failover
    transport goes on to the next broker (a refusal at start-up would end it)."""

    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readexactly(8)  # the client's protocol header
        writer.close()

    server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        with pytest.raises(ConnectFailedError, match="closed the connection before the AMQP open"):
            await connect(f"amqp://127.0.0.1:{port}")
        url = f"failover:(amqp://127.0.0.1:{port},{urls.amqp})?randomize=false"
        async with await connect(url) as conn:
            await conn.send("/queue/after-hang-up", "x", receipt=True)
            assert conn.remote_url == urls.amqp
    finally:
        server.close()
        await server.wait_closed()


async def test_bad_amqp_urls_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()
    code, _, err = await ferrymq(capsys, "send", f"amqp://127.0.0.1:{port}", "/queue/x")
    assert code == 1
    first_line = err.splitlines()[0]
    assert first_line.startswith("ferrymq send: cannot connect to amqp://127.0.0.1")
    assert "Traceback" not in err
    mixed = f"failover:(amqp://127.0.0.1:{port},tcp://127.0.0.1:{port})"
    code, _, err = await ferrymq(capsys, "consume", mixed, "/queue/x")
    assert code == 2
    assert "mixes AMQP" in err
    assert "Traceback" not in err
    code, _, err = await ferrymq(capsys, "send", f"amqp://127.0.0.1:{port}?bogus=1", "/queue/x")
    assert code == 2
    assert "unknown option 'bogus' for amqp:" in err


def test_failover_between_amqp_listeners_loses_and_duplicates_nothing(
    tmp_path: Path,
) -> None:
    """A persistent producer on ``failover:(amqp://master,amqp://slave)``; the master is
    SIGKILLed once some sends were receipted. Every message arrives once: the unreceipted
    ones are sent again on the new master, whose duplicate detection drops what was stored."""
    amqp_ports = [free_port(), free_port()]
    config = group_config(tmp_path / "shared")
    names = ("m1", "m2")
    with broker_group(tmp_path, config, names) as brokers:
        for broker, port in zip(brokers, amqp_ports, strict=True):
            broker.extra_args += ["--listen", f"amqp://127.0.0.1:{port}"]
        start_group(brokers)
        url = "failover:({})?randomize=false&initialReconnectDelay=50".format(
            ",".join(f"amqp://127.0.0.1:{port}" for port in amqp_ports)
        )
        failovers = asyncio.run(asyncio.wait_for(_produce_across_a_kill(url, brokers), 60))
        assert failovers == 1
        survivor = wait_for_master(brokers[1:])
        received = asyncio.run(asyncio.wait_for(_consume_all(survivor), 60))
    counts = Counter(body for body, _ in received)
    assert set(counts) == {f"m-{n}" for n in range(TOTAL)}  # nothing lost
    unflagged = Counter(body for body, redelivered in received if not redelivered)
    assert [body for body, count in unflagged.items() if count > 1] == []


TOTAL = 300
BATCH = 20
KILL_AFTER = 100


async def _produce_across_a_kill(url: str, brokers: list[BrokerProcess]) -> int:
    """Sends everything, ``BATCH`` persistent sends in flight at a time, each waiting for its
    receipt; the master is killed with a batch in flight. Returns the failovers it took."""
    async with await connect(url) as conn:
        for start in range(0, TOTAL, BATCH):
            sends = [
                asyncio.create_task(conn.send("/queue/failover", f"m-{n}", persistent=True))
                for n in range(start, start + BATCH)
            ]
            if start == KILL_AFTER:
                await asyncio.sleep(0.01)  # written, some stored, none receipted maybe
                brokers[0].kill()
            await asyncio.gather(*sends)
        return conn.statistics().transport.failovers


async def _consume_all(broker: BrokerProcess) -> list[tuple[str, bool]]:
    received: list[tuple[str, bool]] = []
    async with await connect(broker.url) as conn:
        subscription = await conn.subscribe("/queue/failover", ack="client-individual")
        while True:
            try:
                message = await subscription.get(timeout=2.0)
            except TimeoutError:
                return received
            received.append((message.body.decode(), message.redelivered))
            await message.ack()
