"""The mirror's wire form (``connections.mirror_codec``): an event of the mirror queue, as the
forwarder receives it, to the transfer Artemis's mirror sends (docs/broker-connections.md)."""

from __future__ import annotations

import json
from typing import Any

import proton
import pytest
from proton import symbol

from ferrymq.client import Message
from ferrymq.connections import mirror_codec as codec
from ferrymq.core import mirror as tap
from ferrymq.stomp.events import MessageEvent


def event(headers: dict[str, str], body: bytes = b"", message_id: str = "ID:a-1:1") -> Message:
    async def settle(*_: Any, **__: Any) -> None:
        return None

    frame = MessageEvent("/queue/$ACTIVEMQ_ARTEMIS_MIRROR_dr", message_id, "s", "1", headers, body)
    return Message(frame, settle)


def decoded(message: Message) -> proton.Message:
    amqp = proton.Message()
    amqp.decode(codec.encode_event(message, codec.read_event(message.headers)))
    return amqp


def test_the_tap_and_the_codec_spell_the_properties_alike() -> None:
    pairs = [
        (tap.EVENT, codec.P_EVENT),
        (tap.DESTINATION, codec.P_DESTINATION),
        (tap.ORIGIN, codec.P_ORIGIN),
        (tap.SKIP, codec.P_SKIP),
        (tap.QUEUE, codec.P_QUEUE),
        (tap.REASON, codec.P_REASON),
        (tap.MESSAGE, codec.P_MESSAGE),
        (tap.PERSISTENT, codec.P_PERSISTENT),
        (tap.PRIORITY, codec.P_PRIORITY),
        (tap.EXPIRES, codec.P_EXPIRES),
        (tap.SEND, codec.SEND),
    ]
    assert [a for a, _ in pairs] == [b for _, b in pairs]


def test_a_mirrored_send_is_the_message_after_its_delivery_annotations() -> None:
    headers = {
        "destination": "/queue/$ACTIVEMQ_ARTEMIS_MIRROR_dr",
        "message-id": "ID:a-1:7",
        "persistent": "true",
        "priority": "4",
        "expires": "0",
        "timestamp": "1700000000000",
        "correlation-id": "c-1",
        "colour": "blue",
        "AMQ_SCHEDULED_DELAY": "5000",
        tap.EVENT: tap.SEND,
        tap.DESTINATION: "queue://orders",
        tap.PERSISTENT: "false",
        tap.PRIORITY: "7",
        tap.EXPIRES: "1800000000000",
        tap.ORIGIN: "node-C",
    }
    amqp = decoded(event(headers, b"hello", "ID:a-1:7"))
    assert amqp.instructions == {
        symbol("x-opt-amq-mr-id"): "ID:a-1:7",
        symbol("x-opt-amq-mr-dst"): "queue://orders",
        symbol("x-opt-amq-bkr-id"): "node-C",
    }
    assert (amqp.id, amqp.address, amqp.correlation_id) == ("ID:a-1:7", "queue://orders", "c-1")
    assert (amqp.durable, amqp.priority) == (False, 7)
    assert round(amqp.creation_time * 1000) == 1_700_000_000_000
    assert round(amqp.expiry_time * 1000) == 1_800_000_000_000
    assert dict(amqp.properties or {}) == {"colour": "blue"}  # no mirror property, no delay
    assert amqp.body == "hello"  # text, as the broker's AMQP consumers get it


@pytest.mark.parametrize(
    ("encoding", "body", "expected"),
    [
        ("2", b"\x00\xff", b"\x00\xff"),  # one data section
        ("6", b"\x00\xff", b"\x00\xff"),  # an amqp-value binary
        ("1", b"", None),  # no body
    ],
)
def test_a_body_that_came_over_amqp_goes_out_as_it_came(
    encoding: str, body: bytes, expected: object
) -> None:
    headers = {
        tap.EVENT: tap.SEND,
        tap.DESTINATION: "queue://q",
        "JMS_AMQP_ORIGINAL_ENCODING": encoding,
    }
    assert decoded(event(headers, body)).body == expected


def test_a_post_ack_is_a_control_event() -> None:
    headers = {
        tap.EVENT: "postAck",
        tap.DESTINATION: "topic://news",
        tap.QUEUE: "client-1.sub",
        tap.MESSAGE: "ID:b-1:9",
        tap.REASON: "2",
        tap.ORIGIN: "node-B",
    }
    amqp = decoded(event(headers))
    assert amqp.durable
    assert amqp.annotations == {
        symbol("x-opt-amq-mr-ev-type"): symbol("postAck"),
        symbol("x-opt-amq-mr-adr"): "topic://news",
        symbol("x-opt-amq-mr-qu"): "client-1.sub",
        symbol("x-opt-amq-bkr-id"): "node-B",
        symbol("x-opt-amq-mr-ack-reason"): proton.ubyte(2),
    }
    assert amqp.body == "ID:b-1:9"


def test_a_create_queue_carries_its_json() -> None:
    document = {"address": "q", "name": "q", "routing-type": "ANYCAST", "durable": True}
    headers = {tap.EVENT: "createQueue", tap.DESTINATION: "queue://q", tap.QUEUE: "q"}
    amqp = decoded(event(headers, json.dumps(document).encode()))
    body = amqp.body
    assert isinstance(body, str)
    assert json.loads(body) == document
    assert symbol("x-opt-amq-mr-ack-reason") not in (amqp.annotations or {})


@pytest.mark.parametrize(
    ("kind", "origin", "skip", "returns"),
    [
        ("send", "peer", None, True),  # the peer's own message
        ("send", None, "peer", True),  # sent here by the peer's mirror
        ("send", "other", None, False),  # a chain: onward
        ("postAck", "peer", None, False),  # an ack of the peer's message: the peer needs it
        ("postAck", "other", "peer", True),  # an ack the peer made
        ("createQueue", None, "peer", True),
    ],
)
def test_what_never_goes_back_to_the_peer(
    kind: str, origin: str | None, skip: str | None, returns: bool
) -> None:
    assert codec.MirrorEvent(kind, "queue://q", origin, skip).returns_to("peer") is returns
