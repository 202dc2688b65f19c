"""Defects a review of the broker connections found: a ``<sender>``'s released message (it is
offered again before the messages not yet sent, and only ``MAX_DELIVERY_ATTEMPTS`` times),
and senders, receivers, peers and federations on a broker whose advisories are off (refused
at start instead of doing nothing).

The remote end is a ``ScriptedPeer`` whose settlement of each transfer the test scripts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import proton
import pytest

from ferrymq.client import connect
from ferrymq.config.broker_connections import (
    BrokerConnectionElement,
    FederationConfig,
    FederationQueuePolicy,
    MirrorConfig,
    PeerConfig,
    ReceiverConfig,
    SenderConfig,
)
from ferrymq.connections import links
from ferrymq.connections.local import NODE_ID_FILE
from ferrymq.service.errors import BrokerStartError
from ferrymq.testing import running_broker, wait_until
from tests.connections import scripted_peer
from tests.connections.mirror_support import depth, send
from tests.connections.scripted_peer import ScriptedPeer
from tests.connections.senders_support import element_links, local_config

Settle = Callable[[bytes], int]


def script_outcomes(monkeypatch: pytest.MonkeyPatch, settle: Settle) -> None:
    """The scripted peer settles each transfer it receives with ``settle(body)``; only the
    accepted ones are recorded in ``received``."""

    def on_delivery(self: scripted_peer._Session, delivery: proton.Delivery) -> None:
        link = delivery.link
        if link.is_sender or delivery.partial or not delivery.readable:
            return
        data = bytes(link.recv(delivery.pending) or b"")
        link.advance()
        outcome = settle(data)
        if outcome == proton.Delivery.ACCEPTED:
            self.peer.received.append(data)
        delivery.update(outcome)
        delivery.settle()
        link.flow(1)

    monkeypatch.setattr(scripted_peer._Session, "_on_delivery", on_delivery)


def bodies(received: list[bytes]) -> list[str]:
    names = ("msg-0", "msg-1", "msg-2")
    return [next(n for n in names if n.encode() in data) for data in received]


async def test_a_released_message_goes_before_the_messages_sent_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The remote releases msg-0 three times; msg-1 and msg-2, sent meanwhile, arrive after
    it (before the fix they overtook it: it waited a second between offers, they did not)."""
    monkeypatch.setattr(links, "RETRY_S", 0.3)
    offers: list[str] = []

    def settle(data: bytes) -> int:
        offers.append(bodies([data])[0])
        if bodies([data]) == ["msg-0"] and offers.count("msg-0") <= 3:
            return proton.Delivery.RELEASED
        return proton.Delivery.ACCEPTED

    script_outcomes(monkeypatch, settle)
    async with ScriptedPeer() as peer:
        config = local_config(tmp_path, peer.url, SenderConfig(queue_name="X"), queues=[("X", "X")])
        async with running_broker(config) as broker:
            await send(broker, "/queue/X", 1, prefix="msg-")
            await wait_until(lambda: "msg-0" in offers, 10, "msg-0 offered")
            async with await connect(broker.stomp_urls[0]) as client:
                await client.send("/queue/X", "msg-1", persistent=True)
                await client.send("/queue/X", "msg-2", persistent=True)
            await wait_until(lambda: len(peer.received) == 3, 15, "3 accepted")
            await wait_until(lambda: depth(broker, "X") == 0, 10, "X acknowledged")
    assert bodies(peer.received) == ["msg-0", "msg-1", "msg-2"]
    assert offers.count("msg-0") == 4


async def test_a_message_released_every_time_goes_to_the_local_dlq(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bounded: after MAX_DELIVERY_ATTEMPTS offers the message is NACKed, and the local
    dead-letter policy puts a persistent message in ActiveMQ.DLQ; the queue goes on."""
    monkeypatch.setattr(links, "RETRY_S", 0.02)
    offers: list[str] = []

    def settle(data: bytes) -> int:
        offers.append(bodies([data])[0])
        if bodies([data]) == ["msg-0"]:
            return proton.Delivery.RELEASED
        return proton.Delivery.ACCEPTED

    script_outcomes(monkeypatch, settle)
    async with ScriptedPeer() as peer:
        config = local_config(tmp_path, peer.url, SenderConfig(queue_name="X"), queues=[("X", "X")])
        async with running_broker(config) as broker:
            await send(broker, "/queue/X", 2, prefix="msg-")
            await wait_until(lambda: depth(broker, "ActiveMQ.DLQ") == 1, 15, "msg-0 in the DLQ")
            await wait_until(lambda: depth(broker, "X") == 0, 10, "X emptied")
            (element,) = element_links(broker).values()
    assert offers.count("msg-0") == links.MAX_DELIVERY_ATTEMPTS
    assert bodies(peer.received) == ["msg-1"]
    assert element["X"] == {"sent": 1, "released": links.MAX_DELIVERY_ATTEMPTS, "rejected": 1}


ADVISORY_USERS: list[BrokerConnectionElement] = [
    SenderConfig(queue_name="X"),
    ReceiverConfig(address_match="#"),
    PeerConfig(address_match="queues.#"),
    FederationConfig(local_queue_policies=(FederationQueuePolicy("p"),)),
]


@pytest.mark.parametrize("element", ADVISORY_USERS, ids=lambda e: type(e).__name__)
async def test_elements_that_need_advisories_refuse_a_broker_without_them(
    tmp_path: Path, element: BrokerConnectionElement
) -> None:
    """Built in code (the loader refuses the same with file and line): before the fix the
    broker started and the element silently never served a queue or a consumer."""
    config = replace(local_config(tmp_path, "tcp://127.0.0.1:1", element), advisory_support=False)
    with pytest.raises(BrokerStartError) as raised:
        async with running_broker(config):
            pass
    message = str(raised.value)
    assert 'advisorySupport="false"' in message
    assert "broker connection 'other-server'" in message
    assert "\n" not in message
    assert not (config.broker_directory / NODE_ID_FILE).exists()


async def test_a_mirror_alone_needs_no_advisories(tmp_path: Path) -> None:
    config = replace(
        local_config(tmp_path, "tcp://127.0.0.1:1", MirrorConfig()), advisory_support=False
    )
    async with running_broker(config) as broker:
        assert broker.broker_connections.get("other-server") is not None


async def test_a_broker_whose_connections_are_refused_leaves_no_node_id(tmp_path: Path) -> None:
    """The node id is written only once the configuration proved usable; a good one keeps
    the id it wrote at its next start."""
    bad = local_config(tmp_path, "tcp://127.0.0.1:1?amqpIdleTimeout=soon", MirrorConfig())
    with pytest.raises(BrokerStartError, match="amqpIdleTimeout must be milliseconds"):
        async with running_broker(bad):
            pass
    path = bad.broker_directory / NODE_ID_FILE
    assert not path.exists()
    good = local_config(tmp_path, "tcp://127.0.0.1:1", MirrorConfig())
    async with running_broker(good) as broker:
        first = broker.service.region.node_id
    assert path.read_text(encoding="ascii").strip() == first
    async with running_broker(good) as broker:
        assert broker.service.region.node_id == first
