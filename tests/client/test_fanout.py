"""The fanout transport against real brokers (seed 001 §8.3, reference §3.6 and §8 item 24):
topic messages to every broker, queue messages to one unless fanOutQueues, minAckCount, and
members that come, go and come back."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ferrymq.client import (
    BrokerErrorFrame,
    ConnectFailedError,
    Connection,
    ConnectionClosed,
    TransactionRolledBack,
    connect,
)
from ferrymq.client.fanout import FanoutTransport
from ferrymq.testing import free_port, wait_until
from ferrymq.testing.network import BrokerNetwork, receive_all
from ferrymq.testing.scripted import Direction, ScriptedStompServer

WAIT_S = 10.0
FAST = "initialReconnectDelay=10&maxReconnectDelay=100"
"""Members come back within 0.1 s of their broker."""


@pytest.fixture
async def net(tmp_path: Path) -> AsyncIterator[BrokerNetwork]:
    """Three independent brokers A, B, C (not networked), ports chosen, not started."""
    brokers = BrokerNetwork(tmp_path)
    for name in "ABC":
        brokers.add(name)
    try:
        yield brokers
    finally:
        await brokers.stop()


def fanout(net: BrokerNetwork, names: str, options: str = "") -> str:
    members = ",".join(net.url(name) for name in names)
    return f"fanout:(static:({members}))?{FAST}" + (f"&{options}" if options else "")


def transport(connection: Connection) -> FanoutTransport:
    found = connection._transport
    assert isinstance(found, FanoutTransport)
    return found


def depths(net: BrokerNetwork, queue: str) -> dict[str, int]:
    return {name: net.queue_depth(name, queue) for name in net.brokers}


async def test_topic_messages_go_to_every_broker_queue_messages_to_one(
    net: BrokerNetwork,
) -> None:
    """seed 001 §8.3 "Applying fanout to queue messages": fanOutQueues=false (the default)
    sends every queue message to one broker; topic messages always go to all."""
    await net.start()
    consumers = {name: await connect(net.url(name)) for name in "ABC"}
    topic = {name: await c.subscribe("/topic/prices") for name, c in consumers.items()}
    async with connect(fanout(net, "ABC")) as producer:
        assert sorted(transport(producer).connected_urls) == sorted(net.url(n) for n in "ABC")
        for i in range(5):
            await producer.send("/queue/orders", f"q{i}", persistent=True)
            await producer.send("/topic/prices", f"t{i}", receipt=True)
        received = await receive_all(topic, expected=15)
        primary = next(name for name in "ABC" if net.url(name) == producer.remote_url)
    for messages in received.values():
        assert [m.text for m in messages] == [f"t{i}" for i in range(5)]
    assert depths(net, "orders") == {name: 5 if name == primary else 0 for name in "ABC"}
    for connection in consumers.values():
        await connection.close()


async def test_fan_out_queues_sends_every_queue_message_to_every_broker(
    net: BrokerNetwork,
) -> None:
    """reference §8 item 24 (FanoutTransportBrokerTest.testPublisherFansout): with
    fanOutQueues=true every broker gets each queue message once."""
    await net.start()
    async with connect(fanout(net, "ABC", "fanOutQueues=true&minAckCount=3")) as producer:
        for i in range(4):
            await producer.send("/queue/orders", f"q{i}", persistent=True)
    assert depths(net, "orders") == {"A": 4, "B": 4, "C": 4}
    async with connect(net.url("B")) as reader:
        queue = await reader.subscribe("/queue/orders")
        assert [(await queue.get(timeout=WAIT_S)).text for _ in range(4)] == [
            f"q{i}" for i in range(4)
        ]


async def test_min_ack_count_holds_sends_until_enough_brokers_are_up(
    net: BrokerNetwork,
) -> None:
    """seed 001 §8.3 "Minimum number of brokers" (reference §8 item 24,
    testPublisherWaitsForServerToBeUp): with one of two brokers up the connection opens, but a
    send waits, and nothing reaches the broker that is up, until the second broker is there."""
    await net.start("A")
    async with connect(fanout(net, "AB", "fanOutQueues=true")) as producer:
        assert transport(producer).connected_urls == (net.url("A"),)
        send = asyncio.create_task(producer.send("/queue/held", "m", persistent=True))
        done, _ = await asyncio.wait({send}, timeout=0.5)
        assert not done
        assert depths(net, "held") == {"A": 0}
        await net.start("B")
        await asyncio.wait_for(send, WAIT_S)
        assert depths(net, "held") == {"A": 1, "B": 1}


async def test_a_lost_broker_is_reconnected_and_gets_only_what_is_sent_after(
    net: BrokerNetwork,
) -> None:
    """A member whose broker goes away reconnects with back-off when it returns. With
    minAckCount=2 of three brokers the sends go on meanwhile, and the broker that was away does
    not get them (seed "Minimum number of brokers": why minAckCount should equal the number of
    brokers when none may miss a message)."""
    await net.start()
    async with connect(fanout(net, "ABC", "fanOutQueues=true")) as producer:
        fanned = transport(producer)
        await producer.send("/queue/orders", "before", persistent=True)
        await net.stop("B")
        await wait_until(lambda: len(fanned.connected_urls) == 2, WAIT_S, "B lost")
        await producer.send("/queue/orders", "while B is away", persistent=True)
        await net.start("B")
        await wait_until(lambda: len(fanned.connected_urls) == 3, WAIT_S, "B reconnected")
        await producer.send("/queue/orders", "after", persistent=True)
        assert fanned.statistics().reconnect_attempts >= 1
    assert depths(net, "orders") == {"A": 3, "B": 2, "C": 3}


@pytest.mark.parametrize("direction", ["up", "down"])
async def test_a_receipted_send_a_lost_member_did_not_confirm_is_sent_again_once(
    net: BrokerNetwork, direction: Direction
) -> None:
    """A persistent send that one broker did not confirm before its connection failed (the
    frame lost on the way up, or the receipt lost on the way down) is not answered before that
    broker has it, and it is written again when the member reconnects: the broker stores it
    exactly once (its duplicate detection drops the copy it already had)."""
    await net.start("A", "B")
    with ScriptedStompServer(net["B"].stomp_ports[0], []) as proxy:
        url = f"fanout:(static:({net.url('A')},{proxy.url}))?{FAST}&fanOutQueues=true"
        async with connect(url) as producer:
            fanned = transport(producer)
            await wait_until(lambda: len(fanned.connected_urls) == 2, WAIT_S, "both connected")
            proxy.freeze(direction)
            send = asyncio.create_task(producer.send("/queue/orders", "once", persistent=True))
            await wait_until(lambda: net.queue_depth("A", "orders") == 1, WAIT_S, "A has it")
            done, _ = await asyncio.wait({send}, timeout=0.3)
            assert not done  # A confirmed, B did not: minAckCount=2
            proxy.drop()
            await asyncio.wait_for(send, WAIT_S)
            assert fanned.statistics().replayed_commands >= 1
    assert depths(net, "orders") == {"A": 1, "B": 1}


async def test_a_consumer_on_fanout_subscribes_on_the_primary_and_moves_with_it(
    net: BrokerNetwork,
) -> None:
    """SUBSCRIBE goes to the primary only, so a topic message sent to every broker is received
    once. When the primary's broker goes, the next member becomes primary: the subscription is
    written to it and the connection hears interrupted/resumed."""
    await net.start("A", "B")
    async with connect(fanout(net, "AB", "minAckCount=1")) as connection:
        resumed = asyncio.Event()
        connection.on_resumed(resumed.set)
        subscription = await connection.subscribe("/topic/news")
        await connection.send("/topic/news", "first", receipt=True)
        assert (await subscription.get(timeout=WAIT_S)).text == "first"
        first = connection.remote_url
        await net.stop(next(n for n in "AB" if net.url(n) == first))
        await asyncio.wait_for(resumed.wait(), WAIT_S)
        assert connection.remote_url != first
        await connection.send("/topic/news", "second", receipt=True)
        assert (await subscription.get(timeout=WAIT_S)).text == "second"
        with pytest.raises(TimeoutError):
            await subscription.get(timeout=0.3)  # once, not once per broker
        assert connection.statistics().interruptions == 1


async def test_transactions_span_every_member(net: BrokerNetwork) -> None:
    """BEGIN and COMMIT go to every broker; a transaction that lost a member is rolled back."""
    await net.start()
    async with connect(fanout(net, "ABC", "fanOutQueues=true")) as producer:
        async with producer.transaction() as tx:
            await producer.send("/queue/tx", "in tx", transaction=tx)
            assert depths(net, "tx") == {"A": 0, "B": 0, "C": 0}
        assert depths(net, "tx") == {"A": 1, "B": 1, "C": 1}
        fanned = transport(producer)
        tx = await producer.begin()
        await producer.send("/queue/tx", "lost", transaction=tx)
        await net.stop("C")
        await wait_until(lambda: len(fanned.connected_urls) == 2, WAIT_S, "C lost")
        with pytest.raises(TransactionRolledBack):
            await tx.commit()
    assert depths(net, "tx") == {"A": 1, "B": 1}


async def test_a_broker_the_agent_removes_is_closed(net: BrokerNetwork) -> None:
    await net.start()
    async with connect(fanout(net, "ABC")) as producer:
        fanned = transport(producer)
        fanned.on_service_remove(net.url("C"))
        assert net.url("C") not in fanned.connected_urls
        await wait_until(lambda: not net["C"].service.connections, WAIT_S, "C's socket closed")
        await producer.send("/topic/t", "two left", receipt=True)
        fanned.on_service_add(net.url("C"))
        await wait_until(lambda: len(fanned.connected_urls) == 3, WAIT_S, "C added again")


async def test_max_reconnect_attempts_fails_the_connection_when_one_broker_fails(
    net: BrokerNetwork,
) -> None:
    """reference §3.6: maxReconnectAttempts N > 0 fails the whole transport once one member
    failed N times in a row."""
    await net.start("A", "B")
    url = fanout(net, "AB", "minAckCount=1&maxReconnectAttempts=2")
    async with connect(url) as producer:
        await net.stop("B")
        reason = await asyncio.wait_for(producer.wait_closed(), WAIT_S)
    assert f"gave up on {net.url('B')} after 2 failed connect attempt(s)" in str(reason)


async def test_opening_fails_when_no_broker_can_be_reached() -> None:
    dead = [f"tcp://127.0.0.1:{free_port()}" for _ in range(2)]
    url = f"fanout:(static:({','.join(dead)}))?maxReconnectAttempts=3&{FAST}"
    with pytest.raises(ConnectFailedError) as caught:
        await connect(url)
    assert "after 3 failed connect attempt(s)" in str(caught.value)
    assert caught.value.url in dead
    assert len([a for a in caught.value.attempts if a.url == caught.value.url]) == 3


async def test_a_connect_every_broker_refuses_fails_with_the_brokers_error(
    net: BrokerNetwork,
) -> None:
    """The same CONNECT goes to every broker: when it is refused before any member is
    connected, connect() raises the broker's ERROR rather than retrying for ever."""
    await net.start("A", "B")
    holders = [await connect(net.url(name), client_id="only-once") for name in "AB"]
    with pytest.raises(BrokerErrorFrame, match="already connected"):
        await connect(fanout(net, "AB"), client_id="only-once")
    for holder in holders:
        await holder.close()


async def test_injected_options_reach_every_member(net: BrokerNetwork) -> None:
    """seed 001 "Setting options on the discovered transports", as for discovery:."""
    await net.start("A", "B")
    url = fanout(net, "AB", "wireFormat.maxInactivityDuration=1000&discovered.keepAlive=true")
    async with connect(url) as producer:
        fanned = transport(producer)
        await wait_until(lambda: len(fanned.connected_urls) == 2, WAIT_S, "both connected")
        for member in fanned.members.values():
            assert member.transport is not None
            assert member.transport.options.max_inactivity_ms == 1000
            assert member.transport.options.keep_alive
        assert producer.statistics().transport.send_interval_ms == 1000


async def test_a_supervisor_that_ends_unexpectedly_fails_the_connection(
    net: BrokerNetwork,
) -> None:
    """Whatever ends the fanout's supervisor task but a close (here a cancel from outside),
    the connection fails: the next call raises and a blocked ``get()`` wakes."""
    await net.start("A", "B")
    async with await connect(fanout(net, "AB")) as connection:
        subscription = await connection.subscribe("/topic/fanout-supervisor")
        runner = transport(connection)._runner
        assert runner is not None
        runner.cancel()
        async with asyncio.timeout(WAIT_S):
            with pytest.raises(ConnectionClosed, match="ended unexpectedly"):
                await subscription.get()
        with pytest.raises(ConnectionClosed, match="ended unexpectedly"):
            await connection.send("/topic/fanout-supervisor", "after")
