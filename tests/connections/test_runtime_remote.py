"""``RemoteConnection`` for real: what an element gets, against a scripted AMQP 1.0 peer."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import proton
import pytest

from ferrymq.connections.api import LinkOptions, LinkSetupError
from ferrymq.connections.remote import AmqpRemoteConnection, RemoteConnectError
from ferrymq.connections.remote_address import parse_hosts
from tests.connections.scripted_peer import Answer, Attach, ScriptedPeer

INFO = {"broker-connection-info": {"connectionName": "c1", "nodeId": "node-1"}}


def encoded(body: str, annotations: dict[str, object] | None = None) -> bytes:
    message = proton.Message(body=body)
    if annotations:
        message.instructions = {proton.symbol(k): cast(Any, v) for k, v in annotations.items()}
    return bytes(message.encode())


async def connect(peer: ScriptedPeer, **kwargs: Any) -> AmqpRemoteConnection:
    (address,) = parse_hosts(peer.url + "?connectTimeoutMillis=3000")
    return await AmqpRemoteConnection.connect(
        address, container_id="node-1", properties=INFO, **kwargs
    )


async def test_open_announces_the_broker_connection_and_node_id() -> None:
    async with ScriptedPeer() as peer:
        remote = await connect(peer)
        try:
            assert remote.remote_container_id == "scripted-peer"
            (seen,) = peer.connections
            assert seen.container_id == "node-1"
            assert seen.properties["broker-connection-info"] == INFO["broker-connection-info"]
            assert seen.mechanism == "ANONYMOUS"
        finally:
            await remote.close()
        assert remote.is_closed


async def test_plain_login_with_user_and_password() -> None:
    async with ScriptedPeer(users={"admin": "secret"}) as peer:
        remote = await connect(peer, user="admin", password="secret")
        await remote.close()
        assert peer.connections[0].login == ("admin", "secret")
        with pytest.raises(RemoteConnectError, match=r"(?i)authentication failed"):
            await connect(peer, user="admin", password="wrong")


async def test_sender_capabilities_properties_and_outcome() -> None:
    def answer(attach: Attach) -> Answer:
        return Answer(offered=("amq.mirror",), properties={"x-opt-amq-bkr-id": "peer-node"})

    async with ScriptedPeer(answer=answer) as peer:
        remote = await connect(peer)
        try:
            sender = await remote.attach_sender(
                LinkOptions(
                    name="$ACTIVEMQ_ARTEMIS_MIRROR_c1:1",
                    target="$ACTIVEMQ_ARTEMIS_MIRROR_c1",
                    desired_capabilities=("amq.mirror",),
                    properties={"x-opt-amq-bkr-id": "node-1"},
                )
            )
            assert sender.offered_capabilities == ("amq.mirror",)
            assert sender.remote_properties == {"x-opt-amq-bkr-id": "peer-node"}
            (attach,) = peer.attaches
            assert attach.desired == ("amq.mirror",)
            assert attach.properties == {"x-opt-amq-bkr-id": "node-1"}
            assert attach.address == "$ACTIVEMQ_ARTEMIS_MIRROR_c1"
            message = encoded("hello", {"x-opt-amq-mr-id": "ID:1"})
            outcome = await asyncio.wait_for(sender.send(message), 5)
            assert outcome.accepted
            assert peer.received == [message]  # delivery annotations untouched
        finally:
            await remote.close()


async def test_refused_link_is_a_link_setup_error() -> None:
    async with ScriptedPeer(answer=lambda attach: Answer(refuse="no mirror here")) as peer:
        remote = await connect(peer)
        try:
            with pytest.raises(LinkSetupError, match="no mirror here"):
                await remote.attach_sender(LinkOptions(name="l1", target="q"))
        finally:
            await remote.close()


async def test_receiver_credit_settle_and_drain() -> None:
    async with ScriptedPeer() as peer:
        peer.to_send = [encoded(f"m{n}") for n in range(2)]
        remote = await connect(peer)
        try:
            receiver = await remote.attach_receiver(
                LinkOptions(name="r1", source="orders", filters={"f": ("x:f", "a")}), credit=5
            )
            assert peer.attaches[0].address == "orders"
            first = await asyncio.wait_for(receiver.receive(), 5)
            second = await asyncio.wait_for(receiver.receive(), 5)
            assert first.delivery
            assert second.delivery
            assert first.encoded == encoded("m0")
            receiver.settle(first.delivery)
            receiver.settle(second.delivery, "released")
            await asyncio.wait_for(receiver.drain(), 5)  # the peer returns the 3 credits left
            await asyncio.wait_for(receiver.drain(), 5)  # none left: at once
            peer.to_send.append(encoded("m2"))
            receiver.flow(1)
            third = await asyncio.wait_for(receiver.receive(), 5)
            assert third.encoded == encoded("m2")
        finally:
            await remote.close()


async def test_dropped_connection_fails_waiters() -> None:
    async with ScriptedPeer() as peer:
        remote = await connect(peer)
        receiver = await remote.attach_receiver(LinkOptions(name="r", source="q"), credit=1)
        waiting = asyncio.ensure_future(receiver.receive())
        await asyncio.sleep(0.05)
        await peer.drop_all()
        with pytest.raises(ConnectionError):
            await asyncio.wait_for(waiting, 5)
        await asyncio.wait_for(remote.closed(), 5)
        await remote.close()


async def test_nobody_listening_is_a_connect_error() -> None:
    async with ScriptedPeer() as peer:
        url = peer.url
    (address,) = parse_hosts(url)
    with pytest.raises(RemoteConnectError, match=url):
        await AmqpRemoteConnection.connect(address, container_id="n")
