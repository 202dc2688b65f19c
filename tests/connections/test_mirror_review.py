"""`<mirror>` defects an independent review of issue 18 found, each reproduced from a user's or
an operator's action: composite and wildcard sends, operator commands on the source (move,
retry, purge), a flapping target, a purged mirror queue under ``sync="true"``, a durable
subscription on a wildcard topic, and acks going round a ring."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from pathlib import Path

import pytest

from ferrymq.client import connect
from ferrymq.connections import mirror_codec as codec
from ferrymq.core import mirror as tap
from ferrymq.core.destination import Destination
from ferrymq.core.mirror_statistics import statistics_for
from ferrymq.service.management import BrokerManagement
from ferrymq.testing import free_port, running_broker, wait_until
from tests.connections.mirror_support import (
    MIRROR_QUEUE,
    WAIT_S,
    amqp_uri,
    consume,
    depth,
    node_config,
    send,
    source,
    target,
    wait_depth,
    wait_drained,
)
from tests.connections.scripted_peer import Answer, ScriptedPeer

pytestmark = pytest.mark.asyncio


async def test_a_composite_send_reaches_every_destination_on_the_target(tmp_path: Path) -> None:
    """The copies of a composite send share one message id: the target keeps each (its
    duplicate detection is per origin, message id and destination)."""
    async with target(tmp_path) as b, source(tmp_path, [("dr", amqp_uri(b), "")]) as a:
        await send(a, "/queue/A,/queue/B", 3)
        await wait_drained(a)
        await wait_depth(b, "B", 3)
        assert (depth(b, "A"), statistics_for(b.service.region).duplicates) == (3, 0)


async def test_a_wildcard_send_reaches_every_matching_queue_on_the_target(
    tmp_path: Path,
) -> None:
    async with target(tmp_path) as b, source(tmp_path, [("dr", amqp_uri(b), "")]) as a:
        await send(a, "/queue/W.1", 1)
        await send(a, "/queue/W.2", 1)
        await send(a, "/queue/W.>", 1, prefix="wild")
        await wait_drained(a)
        await wait_depth(b, "W.2", 2)
        assert depth(b, "W.1") == 2


async def test_an_operator_move_and_a_dead_letter_retry_reach_the_target(
    tmp_path: Path,
) -> None:
    """A moved message keeps its message id and producer id: its new send must still be
    forwarded (the forwarder sees every event of the mirror queue)."""
    async with target(tmp_path) as b, source(tmp_path, [("dr", amqp_uri(b), "")]) as a:
        management = BrokerManagement(a.service)
        await send(a, "/queue/M", 3)
        await wait_drained(a)
        await wait_depth(b, "M", 3)
        await management.move("M", "M2")
        await wait_drained(a)
        await wait_depth(b, "M2", 3)
        await wait_depth(b, "M", 0)
        await send(a, "/queue/D", 1)
        async with await connect(a.stomp_urls[0]) as client:
            subscription = await client.subscribe("/queue/D", ack="client-individual")
            message = await subscription.get(timeout=WAIT_S)
            await message.nack(receipt=True)
        await wait_drained(a)
        await wait_depth(b, "ActiveMQ.DLQ", 1)
        await management.retry("ActiveMQ.DLQ")
        await wait_drained(a)
        await wait_depth(b, "D", 1)
        await wait_depth(b, "ActiveMQ.DLQ", 0)
        assert (depth(a, "D"), depth(a, "ActiveMQ.DLQ"), depth(a, "M2")) == (1, 0, 3)


async def test_a_purge_on_the_source_empties_the_queue_on_the_target(tmp_path: Path) -> None:
    async with target(tmp_path) as b, source(tmp_path, [("dr", amqp_uri(b), "")]) as a:
        await send(a, "/queue/P", 3)
        await wait_drained(a)
        await wait_depth(b, "P", 3)
        outcome = await BrokerManagement(a.service).purge("P")
        assert outcome == 3
        await wait_drained(a)
        await wait_depth(b, "P", 0, "the purge's acks emptied P on the target")
        assert statistics_for(b.service.region).acks_given_up == 0


async def test_a_flapping_target_never_dead_letters_the_mirrors_events(tmp_path: Path) -> None:
    """Events in flight when the target goes away go back to the mirror queue each time; more
    releases than ``maximumRedeliveries`` (6) must not send them to the DLQ."""
    peer_id: dict[str, object] = {"x-opt-amq-bkr-id": "peer-node"}
    answer = Answer(offered=("amq.mirror",), properties=peer_id)
    never_settling = ScriptedPeer(answer=lambda _: answer, credit=0)
    async with never_settling as peer, source(tmp_path, [("dr", peer.url, "")]) as a:
        await send(a, "/queue/Q", 3)
        events = a.service.region.queues[Destination.queue(MIRROR_QUEUE + "dr")]
        for _ in range(8):
            seen = peer.accepted
            await wait_until(lambda: events.in_flight > 0, timeout_s=WAIT_S, what="in flight")
            await peer.drop_all()
            await wait_until(
                functools.partial(_more, peer, seen), timeout_s=WAIT_S, what="reconnect"
            )
        assert (depth(a, MIRROR_QUEUE + "dr"), depth(a, "ActiveMQ.DLQ")) == (4, None)


async def test_a_purged_mirror_queue_releases_sync_senders(tmp_path: Path) -> None:
    """``sync="true"``: the operator purges the mirror queue while the target is away; the
    senders waiting for those events are released, and later sends are confirmed."""
    async with target(tmp_path) as b:
        sync = [("dr", amqp_uri(b), 'sync="true"')]
        async with source(tmp_path, sync) as a, await connect(a.stomp_urls[0]) as client:
            await asyncio.wait_for(client.send("/queue/S", "1", persistent=True), WAIT_S)
            await a.broker_connections.stop_connection("dr")
            held = asyncio.ensure_future(client.send("/queue/S", "2", persistent=True))
            await asyncio.sleep(0.3)
            assert not held.done()
            assert await BrokerManagement(a.service).purge(MIRROR_QUEUE + "dr") == 1
            await asyncio.wait_for(held, WAIT_S)
            await a.broker_connections.start_connection("dr")
            await asyncio.wait_for(client.send("/queue/S", "3", persistent=True), WAIT_S)
            await wait_depth(b, "S", 2)


async def test_a_durable_subscription_on_a_wildcard_topic_is_mirrored(tmp_path: Path) -> None:
    """Its messages are mirrored to their topics: the target must hold the subscription that
    collects them (and its acks), or they are lost for disaster recovery."""
    async with target(tmp_path) as b, source(tmp_path, [("dr", amqp_uri(b), "")]) as a:
        async with await connect(a.stomp_urls[0], client_id="c1") as client:
            subscription = await client.subscribe(
                "/topic/news.>", durable_name="all", ack="client-individual"
            )
            await send(a, "/topic/news.eu", 3)
            message = await subscription.get(timeout=WAIT_S)
            await message.ack(receipt=True)
        await wait_drained(a)
        (kept,) = b.service.region.subscriptions.durables()
        assert kept.record is not None
        assert kept.record.subscription_name == "all"
        await wait_until(lambda: kept.depth == 2, timeout_s=WAIT_S, what="2 kept")


def _more(peer: ScriptedPeer, seen: int) -> bool:
    return peer.accepted > seen


async def test_in_a_ring_an_ack_never_comes_back_to_where_it_was_made(tmp_path: Path) -> None:
    """A->B->C->A: acks made on A go round to B and C, not on to A (which would look for the
    message it no longer has, retry and give up)."""
    ports = [free_port() for _ in range(3)]
    uri = [f"tcp://127.0.0.1:{port}" for port in ports]
    configs = [
        node_config(tmp_path, "a", [("ab", uri[1], "")], amqp_port=ports[0]),
        node_config(tmp_path, "b", [("bc", uri[2], "")], amqp_port=ports[1]),
        node_config(tmp_path, "c", [("ca", uri[0], "")], amqp_port=ports[2]),
    ]
    async with contextlib.AsyncExitStack() as stack:
        a, b, c = [await stack.enter_async_context(running_broker(cfg)) for cfg in configs]
        await send(a, "/queue/R", 5, prefix="a")
        await send(b, "/queue/R", 5, prefix="b")
        for node in (a, b, c):
            await wait_depth(node, "R", 10)
        await consume(a, "/queue/R", 10)
        for node in (b, c):
            await wait_depth(node, "R", 0)
        for node, name in ((a, "ab"), (b, "bc"), (c, "ca")):
            await wait_drained(node, name)
        counts = [statistics_for(n.service.region) for n in (a, b, c)]
        assert [(s.acks, s.acks_given_up) for s in counts] == [(0, 0), (10, 0), (10, 0)]


async def test_the_tap_and_the_codec_spell_the_new_properties_alike() -> None:
    assert (tap.ROUTE, tap.ACKED_AT) == (codec.P_ROUTE, codec.P_ACKED_AT)


async def test_a_retried_dead_letter_reaches_the_end_of_a_chain(tmp_path: Path) -> None:
    """A->B->C: the retry's own id for duplicate detection goes on from B to C."""
    ports = [free_port() for _ in range(3)]
    uri = [f"tcp://127.0.0.1:{port}" for port in ports]
    configs = [
        node_config(tmp_path, "a", [("dr", uri[1], "")], amqp_port=ports[0]),
        node_config(tmp_path, "b", [("dr", uri[2], "")], amqp_port=ports[1]),
        node_config(tmp_path, "c", amqp_port=ports[2]),
    ]
    async with contextlib.AsyncExitStack() as stack:
        a, b, c = [await stack.enter_async_context(running_broker(cfg)) for cfg in configs]
        await send(a, "/queue/D", 1)
        async with await connect(a.stomp_urls[0]) as client:
            subscription = await client.subscribe("/queue/D", ack="client-individual")
            message = await subscription.get(timeout=WAIT_S)
            await message.nack(receipt=True)
        await wait_depth(c, "ActiveMQ.DLQ", 1)
        await BrokerManagement(a.service).retry("ActiveMQ.DLQ")
        await wait_depth(c, "D", 1)
        await wait_depth(c, "ActiveMQ.DLQ", 0)
        assert (depth(b, "D"), statistics_for(c.service.region).duplicates) == (1, 0)
