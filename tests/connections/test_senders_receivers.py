"""``<sender>`` and ``<receiver>`` between two FerryMQ brokers (ActiveMQ Artemis manual,
"Senders and Receivers"): the manual's two examples, the remote end killed and restarted, a
queue created later, a receiver waiting for its local queue, and no loop.

The broker that owns the connection runs in the test's loop; the remote end is a second broker
with an AMQP listener, a separate ``ferrymq broker`` process where it is killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ferrymq.broker import Broker
from ferrymq.client import Connection, connect
from ferrymq.config.broker_connections import ReceiverConfig, SenderConfig
from ferrymq.core.destination import Destination
from ferrymq.service.management import BrokerManagement
from ferrymq.testing import BrokerProcess, broker_config, free_port, running_broker, wait_until
from ferrymq.testing.brokers import amqp_port
from tests.connections.senders_support import (
    COUNT_TIMEOUT_S,
    count_numbered,
    element_links,
    local_config,
    send_numbered,
    stomp_url,
    wait_for_links,
)

# The manual's <addresses>: each queue under an address of another name.
MANUAL_QUEUES = (("remoteQueueA", "remotequeues.A"), ("localQueueB", "queues.B"))
N = 200
KILL_N = 1000
PULL_N = 3000


@contextlib.asynccontextmanager
async def clients(*brokers: Broker | str) -> AsyncIterator[list[Connection]]:
    opened: list[Connection] = []
    try:
        for broker in brokers:
            url = broker if isinstance(broker, str) else stomp_url(broker)
            opened.append(await connect(url))
        yield opened
    finally:
        for client in opened:
            await client.close()


def remote_uri(remote: Broker) -> str:
    return f"tcp://127.0.0.1:{amqp_port(remote)}"


async def _manual_example(tmp_path: Path, sender: SenderConfig, receiver: ReceiverConfig) -> None:
    remote_config = broker_config(tmp_path / "remote", name="remote", amqp=True)
    async with running_broker(remote_config) as remote, clients(remote) as (remote_client,):
        # Waiting on the remote end before the receiver attaches.
        await send_numbered(remote_client, "/queue/remotequeues.A", range(N))
        config = local_config(
            tmp_path / "local", remote_uri(remote), sender, receiver, queues=MANUAL_QUEUES
        )
        async with running_broker(config) as local, clients(local) as (local_client,):
            await wait_for_links(local, 2)
            await send_numbered(local_client, "/queue/localQueueB", range(N))
            pushed = await count_numbered(remote_client, "/queue/queues.B", N)
            pulled = await count_numbered(local_client, "/queue/remoteQueueA", N)
            local_id = local.service.region.broker_id
            remote_id = remote.service.region.broker_id
    assert pushed.lost_and_duplicated(range(N)) == (set(), set())
    assert pulled.lost_and_duplicated(range(N)) == (set(), set())
    # The message is the same message on the other side: id, priority, persistence.
    for counted, origin in ((pushed, local_id), (pulled, remote_id)):
        headers = counted.headers[7]
        assert origin in headers["message-id"]
        assert headers["priority"] == "7"
        assert headers["persistent"] == "true"


async def test_manual_example_with_address_expressions(tmp_path: Path) -> None:
    """<sender address-match="queues.#"/> and <receiver address-match="remotequeues.#"/>: each
    queue found by its address, each link attached to the address (not the queue's name)."""
    await _manual_example(
        tmp_path,
        SenderConfig(address_match="queues.#"),
        ReceiverConfig(address_match="remotequeues.#"),
    )


async def test_manual_example_with_queue_names(tmp_path: Path) -> None:
    """<receiver queue-name="remoteQueueA"/> and <sender queue-name="localQueueB"/>."""
    await _manual_example(
        tmp_path,
        SenderConfig(queue_name="localQueueB"),
        ReceiverConfig(queue_name="remoteQueueA"),
    )


async def test_queue_created_later_gets_a_sender(tmp_path: Path) -> None:
    """Artemis attaches a sender for a matching queue created after the connection
    (``afterCreateQueue``); a queue that does not match gets none."""
    remote_config = broker_config(tmp_path / "remote", name="remote", amqp=True)
    async with running_broker(remote_config) as remote, clients(remote) as (remote_client,):
        config = local_config(
            tmp_path / "local", remote_uri(remote), SenderConfig(address_match="queues.#")
        )
        async with running_broker(config) as local, clients(local) as (local_client,):
            await send_numbered(local_client, "/queue/other.C", range(5))
            await send_numbered(local_client, "/queue/queues.C", range(50))
            arrived = await count_numbered(remote_client, "/queue/queues.C", 50)
            assert set(element_links(local)["other-server.sender.0"]) == {"queues.C"}
    assert arrived.lost_and_duplicated(range(50)) == (set(), set())


async def test_receiver_attaches_once_its_local_queue_exists(tmp_path: Path) -> None:
    """The manual: "Receivers can only be matched to a local queue that already exists." No
    link while the queue is missing (the remote queue keeps its messages and has no
    consumer); once a client creates it, the receiver attaches and the messages come."""
    remote_config = broker_config(tmp_path / "remote", name="remote", amqp=True)
    async with running_broker(remote_config) as remote, clients(remote) as (remote_client,):
        await send_numbered(remote_client, "/queue/remotequeues.E", range(10))
        queue = remote.service.region.queues[Destination.queue("remotequeues.E")]
        receiver = ReceiverConfig(address_match="remotequeues.#")
        config = local_config(tmp_path / "local", remote_uri(remote), receiver)
        async with running_broker(config) as local, clients(local) as (local_client,):
            connection = local.broker_connections.get("other-server")
            await wait_until(lambda: connection.connects >= 1, 10, "the connection is open")
            await asyncio.sleep(0.5)  # time enough to attach, if it wrongly would
            assert element_links(local)["other-server.receiver.0"] == {}
            assert not queue.consumers
            arrived = await count_numbered(local_client, "/queue/remotequeues.E", 10)
            assert set(element_links(local)["other-server.receiver.0"]) == {"remotequeues.E"}
    assert arrived.lost_and_duplicated(range(10)) == (set(), set())


async def test_sender_and_receiver_on_one_queue_do_not_loop(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The manual: "Do not create a sender and a receiver to the same destination. This
    creates an infinite loop". The loader refuses it; a configuration built in code that has
    it anyway gets the receiver only, and a warning, never a message sent round."""
    remote_config = broker_config(tmp_path / "remote", name="remote", amqp=True)
    async with running_broker(remote_config) as remote, clients(remote) as (remote_client,):
        await send_numbered(remote_client, "/queue/loop.X", range(20))
        elements = (SenderConfig(address_match="loop.#"), ReceiverConfig(queue_name="loop.X"))
        config = local_config(
            tmp_path / "local", remote_uri(remote), *elements, queues=[("loop.X", "loop.X")]
        )
        with caplog.at_level(logging.WARNING, logger="ferrymq.connections.links"):
            async with running_broker(config) as local, clients(local) as (local_client,):
                arrived = await count_numbered(local_client, "/queue/loop.X", 20, quiet_s=1.5)
                assert element_links(local)["other-server.sender.0"] == {}
        remote_queue = remote.service.region.queues[Destination.queue("loop.X")]
        assert remote_queue.depth == 0
    assert arrived.lost_and_duplicated(range(20)) == (set(), set())
    assert "would send its messages round in a loop" in caplog.text


def _remote_process(tmp_path: Path, port: int) -> BrokerProcess:
    return BrokerProcess(
        tmp_path / "remote",
        name="remote",
        extra_args=["--listen", f"amqp://127.0.0.1:{port}"],
    )


async def test_remote_killed_and_restarted_loses_nothing(tmp_path: Path) -> None:
    """SIGKILL the remote broker while messages cross both ways, start it again: every
    message arrives once on each side (what the remote settled was on its disk; what it had
    not, the sender sends again and the receiver receives again; a copy of what it had
    stored but not settled is dropped by its producer message id)."""
    port = free_port()
    remote = _remote_process(tmp_path, port)
    await asyncio.to_thread(remote.start)
    try:
        async with clients(remote.url) as (remote_client,):
            await send_numbered(remote_client, "/queue/remotequeues.A", range(KILL_N))
        config = local_config(
            tmp_path / "local",
            f"tcp://127.0.0.1:{port}",
            SenderConfig(address_match="queues.#"),
            ReceiverConfig(address_match="remotequeues.#"),
            queues=MANUAL_QUEUES,
        )
        async with running_broker(config) as local, clients(local) as (local_client,):
            sending = asyncio.create_task(
                send_numbered(local_client, "/queue/localQueueB", range(KILL_N))
            )
            await wait_until(
                lambda: (
                    _moved(local, "localQueueB", "sent") >= KILL_N // 5
                    and _moved(local, "remoteQueueA", "received") >= KILL_N // 5
                ),
                30,
                "messages crossing both ways",
                detail=lambda: str(element_links(local)),
            )
            await asyncio.to_thread(remote.kill)
            # The pull of what the remote held may finish first on a fast run; the push of
            # the local producer's messages, sent one by one, is still under way.
            moved = (
                _moved(local, "localQueueB", "sent"),
                _moved(local, "remoteQueueA", "received"),
            )
            assert min(moved) < KILL_N, f"killed too late: {moved}"
            await sending
            await asyncio.to_thread(remote.start)
            pulled = await count_numbered(local_client, "/queue/remoteQueueA", KILL_N)
            async with clients(remote.url) as (remote_client,):
                pushed = await count_numbered(remote_client, "/queue/queues.B", KILL_N)
    finally:
        await asyncio.to_thread(remote.stop)
    assert pushed.lost_and_duplicated(range(KILL_N)) == (set(), set())
    assert pulled.lost_and_duplicated(range(KILL_N)) == (set(), set())


def _moved(broker: Broker, queue: str, counter: str) -> int:
    """Messages an element moved for ``queue`` so far on this connection."""
    for links in element_links(broker).values():
        counts = links.get(queue)
        if isinstance(counts, dict):
            return int(counts.get(counter, 0))
    return 0


LOCAL_XML = """<beans xmlns="http://www.springframework.org/schema/beans">
<broker xmlns="http://activemq.apache.org/schema/core" brokerName="local"
    dataDirectory="${{activemq.data}}">
  <broker-connections>
    <amqp-connection uri="{uri}" name="other-server" retry-interval="200">
      <receiver address-match="remotequeues.#"/>
    </amqp-connection>
  </broker-connections>
</broker></beans>"""


async def _take_acknowledged(url: str, seen: Counter[int], until: int) -> None:
    """Consume, counting a message only once its ack is receipted (so a message the broker
    redelivers after a crash is counted if, and only if, its ack had not been recorded)."""
    client = await connect(url)
    try:
        subscription = await client.subscribe(
            "/queue/remotequeues.A", ack="client-individual", prefetch=20
        )
        while sum(seen.values()) < until:
            message = await subscription.get(timeout=COUNT_TIMEOUT_S)
            await message.ack(receipt=True)
            seen[int(message.headers["n"])] += 1
    finally:
        await client.close()


async def test_local_killed_while_receiving_loses_nothing(tmp_path: Path) -> None:
    """SIGKILL the broker that owns the receiver while it pulls, start it again: every message
    the remote had arrives once (the receiver settles a transfer only after the local store
    has it; one it had stored but not settled comes again and is dropped as a duplicate)."""
    remote_config = broker_config(tmp_path / "remote", name="remote", amqp=True)
    async with running_broker(remote_config) as remote, clients(remote) as (remote_client,):
        await send_numbered(remote_client, "/queue/remotequeues.A", range(PULL_N))
        local = BrokerProcess(
            tmp_path / "local", name="local", config_xml=LOCAL_XML.format(uri=remote_uri(remote))
        )
        await asyncio.to_thread(local.start)
        remote_queue = remote.service.region.queues[Destination.queue("remotequeues.A")]
        seen: Counter[int] = Counter()
        try:
            async with clients(local.url) as (local_client,):
                # The receiver's local queue: created by a subscription, kept after it.
                await (await local_client.subscribe("/queue/remotequeues.A")).unsubscribe()
            await wait_until(
                lambda: remote_queue.depth < PULL_N * 9 // 10,
                30,
                "the receiver pulling",
                interval_s=0.005,
            )
            await asyncio.to_thread(local.kill)
            assert remote_queue.depth > 0, "killed too late: the receiver had pulled everything"
            await asyncio.to_thread(local.start)
            with contextlib.suppress(TimeoutError):
                await _take_acknowledged(local.url, seen, PULL_N)
            async with clients(local.url) as (local_client,):
                rest = await count_numbered(local_client, "/queue/remotequeues.A", 0)
            seen.update(rest.seen)
        finally:
            await asyncio.to_thread(local.stop)
        assert remote_queue.depth == 0
    lost = set(range(PULL_N)) - set(seen)
    duplicated = {n for n, c in seen.items() if c > 1}
    assert (lost, duplicated) == (set(), set())


async def test_queue_removed_detaches_only_its_links(tmp_path: Path) -> None:
    """Deleting a served queue closes its sender and receiver links and nothing else (the
    connection stays up); created again, it is served again."""
    remote_config = broker_config(tmp_path / "remote", name="remote", amqp=True)
    async with running_broker(remote_config) as remote, clients(remote) as (remote_client,):
        config = local_config(
            tmp_path / "local",
            remote_uri(remote),
            SenderConfig(address_match="queues.#"),
            ReceiverConfig(address_match="remotequeues.#"),
            queues=[("queues.A", "queues.A"), ("queues.B", "queues.B"), ("remotequeues.C", "")],
        )
        async with running_broker(config) as local, clients(local) as (local_client,):
            await wait_for_links(local, 3)
            management = BrokerManagement(local.service)
            await management.remove_destination(Destination.queue("queues.B"))
            await management.remove_destination(Destination.queue("remotequeues.C"))
            await wait_until(
                lambda: sum(map(len, element_links(local).values())) == 1,
                10,
                "the removed queues' links closed",
                detail=lambda: str(element_links(local)),
            )
            assert local.broker_connections.get("other-server").connects == 1
            await send_numbered(local_client, "/queue/queues.A", range(10))
            await send_numbered(local_client, "/queue/queues.B", range(10, 20))
            first = await count_numbered(remote_client, "/queue/queues.A", 10)
            second = await count_numbered(remote_client, "/queue/queues.B", 10)
    assert first.lost_and_duplicated(range(10)) == (set(), set())
    assert second.lost_and_duplicated(range(10, 20)) == (set(), set())
