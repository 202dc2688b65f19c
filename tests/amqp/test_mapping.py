"""The AMQP <-> core message mapping, field by field (docs/amqp.md "Message mapping").

python-qpid-proton's own ``Message`` is the third party here: it encodes what an AMQP client
sends and decodes what the broker renders, so the mapping is checked against a real codec.
"""

from __future__ import annotations

import uuid
from typing import Any, cast

import proton
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from proton import Data, Described, byte, char, int32, symbol, timestamp, ubyte, ulong

from ferrymq.adapters.amqp.body import MalformedMessageError
from ferrymq.adapters.amqp.mapping import (
    amqp_from_message,
    message_from_amqp,
    message_tail,
    relay_destination,
)
from ferrymq.adapters.stomp.dialect import message_from_send
from ferrymq.core.destination import Destination
from ferrymq.core.errors import BrokerError
from ferrymq.core.message import Message, MessageId

NOW = 1_764_000_000_000
QUEUE = Destination.queue("orders")
FRESH = MessageId("ID:broker-1:1:1:1")


def encoded(footer: dict[Any, Any] | None = None, **fields: Any) -> bytes:
    """What an AMQP client sends (proton's encoder), with a footer appended if given."""
    data = bytes(proton.Message(**fields).encode())
    if footer is not None:
        extra = Data()
        extra.put_object(Described(ulong(0x78), footer))
        data += bytes(extra.encode())
    return data


def inbound(data: bytes, destination: Destination = QUEUE) -> Message:
    return message_from_amqp(data, message_id=FRESH, destination=destination, now_ms=NOW)


def outbound(message: Message, delivery_count: int = 0, now_ms: int = NOW) -> proton.Message:
    """What an AMQP client receives, decoded by proton."""
    amqp = proton.Message()
    amqp.decode(amqp_from_message(message, delivery_count=delivery_count, now_ms=now_ms))
    return amqp


def props(amqp: proton.Message) -> dict[str, Any]:
    return dict(amqp.properties or {})


def notes(amqp: proton.Message) -> dict[Any, Any]:
    """The message annotations (proton's AnnotationDict or None)."""
    return dict(amqp.annotations or {})


def core(**changes: Any) -> Message:
    values: dict[str, Any] = {"message_id": FRESH, "destination": QUEUE, "body": b"hi"}
    values.update(changes)
    return Message(**values)


# --- AMQP in ------------------------------------------------------------------------------------


def test_header_in() -> None:
    message = inbound(encoded(durable=True, priority=7, ttl=5.0, body="x"))
    assert message.persistent is True
    assert message.priority == 7
    assert message.expires == NOW + 5000


def test_no_header_means_amqp_defaults() -> None:
    message = inbound(bytes.fromhex("005375a0026869"))  # a lone data section b"hi"
    assert (message.persistent, message.priority, message.expires) == (False, 4, 0)
    assert message.timestamp == NOW
    assert message.message_id == FRESH
    assert message.body == b"hi"


def test_priority_above_nine_is_clamped_as_amqp_says() -> None:
    assert inbound(encoded(priority=200, body="x")).priority == 9


def test_absolute_expiry_wins_over_ttl_and_creation_time_is_kept() -> None:
    message = inbound(
        encoded(ttl=5.0, expiry_time=(NOW + 60_000) / 1000, creation_time=(NOW - 7) / 1000)
    )
    assert message.expires == NOW + 60_000
    assert message.timestamp == NOW - 7


def test_properties_section_in() -> None:
    message = inbound(
        encoded(
            id="ID:client-1:1:1:1",
            user_id=b"alice",
            address="topic://elsewhere",
            subject="OrderPlaced",
            reply_to="queue://replies",
            correlation_id="req-42",
            content_type="application/json",
            group_id="g1",
            group_sequence=3,
            reply_to_group_id="rg",
            body="{}",
        )
    )
    assert message.message_id == "ID:client-1:1:1:1"
    assert message.destination == QUEUE, "'to' does not choose the destination: the link does"
    props = message.properties
    assert props["JMSXUserID"] == "alice"
    assert props["type"] == "OrderPlaced"
    assert props["reply-to"] == "/queue/replies"
    assert props["correlation-id"] == "req-42"
    assert props["content-type"] == "application/json"
    assert props["JMSXGroupID"] == "g1"
    assert props["JMSXGroupSeq"] == "3"
    assert props["JMSXReplyToGroupID"] == "rg"
    assert "content-encoding" not in props


def test_content_encoding_in() -> None:
    amqp = proton.Message(body=b"z")
    amqp.content_encoding = "gzip"
    assert inbound(bytes(amqp.encode())).properties["content-encoding"] == "gzip"


@pytest.mark.parametrize(
    ("amqp_id", "text"),
    [
        ("plain", "plain"),
        ("ID:x:1", "ID:x:1"),
        (ulong(42), "ID:AMQP_ULONG:42"),
        (uuid.UUID(int=1), "ID:AMQP_UUID:00000000-0000-0000-0000-000000000001"),
        (b"\x01\xab", "ID:AMQP_BINARY:01AB"),
        ("ID:AMQP_ULONG:7", "ID:AMQP_STRING:ID:AMQP_ULONG:7"),
        ("ID:AMQP_NO_PREFIX:x", "ID:AMQP_STRING:ID:AMQP_NO_PREFIX:x"),
        ("ID:AMQP_STRING:x", "ID:AMQP_STRING:ID:AMQP_STRING:x"),
        ("ID:AMQP_ULONG:no", "ID:AMQP_ULONG:no"),  # no ulong: nothing to escape
    ],
)
def test_ids_keep_their_amqp_type_both_ways(amqp_id: object, text: str) -> None:
    """Qpid JMS's AmqpMessageIdHelper encoding, for message-id and correlation-id."""
    message = inbound(encoded(id=amqp_id, correlation_id=amqp_id, body="x"))
    assert message.message_id == text
    assert message.properties["correlation-id"] == text
    back = outbound(message)
    assert back.id == amqp_id
    assert back.correlation_id == amqp_id
    wire = _sections(amqp_from_message(message, delivery_count=0, now_ms=NOW))[0x73]
    value = bytes(wire[0]) if isinstance(wire[0], memoryview) else wire[0]
    assert type(value) is type(amqp_id)  # proton.Message hides ulong; its Data does not


def _sections(rendered: bytes) -> dict[int, Any]:
    """Each section's value, decoded by proton's Data (one value per decode)."""
    found: dict[int, Any] = {}
    view = memoryview(rendered)
    while view:
        data = Data()
        used = data.decode(bytes(view))
        section = data.get_object()
        assert isinstance(section, Described)
        value = section.value
        found[int(cast(Any, section.descriptor))] = (
            bytes(value) if isinstance(value, memoryview) else value
        )
        view = view[used:]
    return found


@pytest.mark.parametrize(
    ("reply_to", "code", "stomp"),
    [
        ("queue://r", None, "/queue/r"),
        ("topic://r", None, "/topic/r"),
        ("temp-queue://ID:c:1", None, "/remote-temp-queue/ID:c:1"),
        ("r", None, "/queue/r"),
        ("r", byte(1), "/topic/r"),
        ("ID:c:2", byte(2), "/remote-temp-queue/ID:c:2"),
        ("ID:c:3", byte(3), "/remote-temp-topic/ID:c:3"),
    ],
)
def test_reply_to_in_is_stomp_syntax(reply_to: str, code: object, stomp: str) -> None:
    annotations = {symbol("x-opt-jms-reply-to"): code} if code is not None else None
    message = inbound(encoded(reply_to=reply_to, annotations=annotations, body="x"))
    assert message.properties["reply-to"] == stomp
    assert "JMS_AMQP_MA_x-opt-jms-reply-to" not in message.properties


@pytest.mark.parametrize("reply_to", ["/queue/r", "bogus://r", "a,b"])
def test_a_reply_to_that_is_not_an_address_is_refused(reply_to: str) -> None:
    with pytest.raises(BrokerError, match=r"^reply-to: AMQP address") as caught:
        inbound(encoded(reply_to=reply_to, body="x"))
    assert not caught.value.fatal


def test_application_properties_become_strings() -> None:
    message = inbound(
        encoded(
            properties={
                "s": "text",
                "yes": True,
                "no": False,
                "n": int32(-3),
                "big": ulong(2**64 - 1),
                "f": 1.5,
                "c": char("x"),
                "sym": symbol("sym"),
                "none": None,
            },
            body="x",
        )
    )
    assert {k: v for k, v in message.properties.items() if not k.startswith("JMS_AMQP")} == {
        "s": "text",
        "yes": "true",
        "no": "false",
        "n": "-3",
        "big": str(2**64 - 1),
        "f": "1.5",
        "c": "x",
        "sym": "sym",
    }


@pytest.mark.parametrize(
    ("value", "kind"), [(b"\x00", "binary"), (["a"], "list"), ({"k": "v"}, "map")]
)
def test_property_values_without_text_are_refused_by_name(value: object, kind: str) -> None:
    with pytest.raises(BrokerError) as caught:
        inbound(encoded(properties={"colour": value}, body="x"))
    assert caught.value.message.startswith(f"application property 'colour' holds a {kind}")
    assert not caught.value.fatal


def test_reserved_stomp_headers_are_dropped_like_a_stomp_sends_are() -> None:
    props = {"content-length": "3", "destination": "/queue/x", "priority": "9", "keep": "1"}
    message = inbound(encoded(properties=props, body="x"))
    assert message.properties["keep"] == "1"
    assert not {"content-length", "destination", "priority"} & message.properties.keys()


def test_producer_message_id_is_the_duplicate_detection_key() -> None:
    message = inbound(encoded(properties={"ferrymq.producer-message-id": "p-1"}, body="x"))
    assert message.producer_message_id == "p-1"
    assert "ferrymq.producer-message-id" not in message.properties
    assert props(outbound(message))["ferrymq.producer-message-id"] == "p-1"


def test_scheduled_delivery_annotations_become_amq_scheduled_delay() -> None:
    at = inbound(encoded(annotations={symbol("x-opt-delivery-time"): timestamp(NOW + 500)}))
    assert at.properties["AMQ_SCHEDULED_DELAY"] == "500"
    delay = inbound(encoded(annotations={symbol("x-opt-delivery-delay"): 750}))
    assert delay.properties["AMQ_SCHEDULED_DELAY"] == "750"
    past = inbound(encoded(annotations={symbol("x-opt-delivery-time"): timestamp(NOW - 1)}))
    assert "AMQ_SCHEDULED_DELAY" not in past.properties
    with pytest.raises(BrokerError, match="x-opt-delivery-delay must be a number"):
        inbound(encoded(annotations={symbol("x-opt-delivery-delay"): "soon"}))


def test_scheduling_properties_pass_as_they_are() -> None:
    props = {
        "AMQ_SCHEDULED_PERIOD": "1000",
        "AMQ_SCHEDULED_REPEAT": 2,
        "AMQ_SCHEDULED_CRON": "* * * * *",
    }
    message = inbound(encoded(properties=props, body="x"))
    assert message.properties["AMQ_SCHEDULED_REPEAT"] == "2"
    assert message.properties["AMQ_SCHEDULED_CRON"] == "* * * * *"


def test_annotations_and_footer_are_kept_as_activemq_names_them() -> None:
    message = inbound(
        encoded(
            annotations={symbol("x-opt-trace"): "t1", symbol("x-opt-jms-dest"): byte(0)},
            instructions={symbol("x-opt-hop"): "dropped"},
            footer={symbol("checksum"): "abc"},
            body="x",
        )
    )
    assert message.properties["JMS_AMQP_MA_x-opt-trace"] == "t1"
    assert message.properties["JMS_AMQP_FT_checksum"] == "abc"
    assert "JMS_AMQP_MA_x-opt-jms-dest" not in message.properties
    assert not any("hop" in name for name in message.properties)


@pytest.mark.parametrize(
    ("body", "inferred", "kept", "code"),
    [
        (b"\x00\xff", True, b"\x00\xff", "2"),  # one data section
        ("héllo", False, "héllo".encode(), "5"),  # amqp-value string
        (b"\x00\xff", False, b"\x00\xff", "6"),  # amqp-value binary
        (None, False, b"", "4"),  # amqp-value null
    ],
)
def test_payload_bodies(body: object, inferred: bool, kept: bytes, code: str) -> None:
    data = encoded(body=body, inferred=inferred)
    if body is None:
        data += b"\x00\x53\x77\x40"  # proton leaves a None body out; a client may send it
    message = inbound(data)
    assert message.body == kept
    assert message.properties["JMS_AMQP_ORIGINAL_ENCODING"] == code


def test_a_message_without_body_is_code_1() -> None:
    message = inbound(encoded())
    assert (message.body, message.properties["JMS_AMQP_ORIGINAL_ENCODING"]) == (b"", "1")
    assert outbound(message).body is None


# --- AMQP out -----------------------------------------------------------------------------------


def test_header_out_carries_the_delivery_count_and_the_remaining_ttl() -> None:
    message = core(persistent=True, priority=8, expires=NOW + 3000)
    amqp = outbound(message, delivery_count=2, now_ms=NOW + 1000)
    assert amqp.durable is True
    assert amqp.priority == 8
    assert amqp.delivery_count == 2
    assert amqp.first_acquirer is False
    assert round(amqp.ttl * 1000) == 2000
    assert round(amqp.expiry_time * 1000) == NOW + 3000
    never = outbound(core())
    assert (never.ttl, never.expiry_time, never.durable) == (0, 0, False)


def test_ttl_of_an_overdue_message_is_one_millisecond() -> None:
    assert round(outbound(core(expires=NOW - 5)).ttl * 1000) == 1


def test_properties_section_out() -> None:
    message = core(
        destination=Destination.topic("prices"),
        timestamp=NOW,
        properties={
            "JMSXUserID": "alice",
            "type": "Tick",
            "reply-to": "/remote-temp-queue/ID:c:1",
            "correlation-id": "c-1",
            "content-type": "text/plain",
            "content-encoding": "identity",
            "JMSXGroupID": "g",
            "JMSXGroupSeq": "4",
            "JMSXReplyToGroupID": "rg",
            "colour": "red",
        },
    )
    amqp = outbound(message)
    assert amqp.id == FRESH
    assert amqp.user_id == b"alice"
    assert amqp.address == "topic://prices"
    assert amqp.subject == "Tick"
    assert amqp.reply_to == "temp-queue://ID:c:1"
    assert amqp.correlation_id == "c-1"
    assert amqp.content_type == "text/plain"
    assert amqp.content_encoding == "identity"
    assert round(amqp.creation_time * 1000) == NOW
    assert (amqp.group_id, amqp.group_sequence, amqp.reply_to_group_id) == ("g", 4, "rg")
    assert props(amqp) == {"colour": "red"}
    assert notes(amqp)[symbol("x-opt-jms-dest")] == 1
    assert notes(amqp)[symbol("x-opt-jms-reply-to")] == 2


def test_names_and_types_that_are_no_ascii_symbol_stay_application_properties() -> None:
    odd = {"JMS_AMQP_MA_x-żółw": "1", "JMS_AMQP_FT_ż": "2", "content-type": "text/żółw"}
    amqp = outbound(core(properties=odd))
    assert props(amqp) == odd
    assert amqp.content_type == "None"  # proton's spelling of an absent content-type


def test_a_group_sequence_that_is_no_uint_stays_a_property() -> None:
    amqp = outbound(core(properties={"JMSXGroupSeq": "first"}))
    assert amqp.group_sequence == 0
    assert props(amqp) == {"JMSXGroupSeq": "first"}


def test_a_stomp_reply_to_that_names_no_single_destination_goes_out_as_written() -> None:
    amqp = outbound(core(properties={"reply-to": "/queue/a,/queue/b"}))
    assert amqp.reply_to == "/queue/a,/queue/b"
    assert symbol("x-opt-jms-reply-to") not in notes(amqp)


@pytest.mark.parametrize(
    ("body", "content_type", "value", "kind"),
    [
        (b"hello", None, "hello", 5),
        ("żółw".encode(), "text/plain; charset=utf-8", "żółw", 5),
        (b"", None, "", 5),
        (b"\xff\xfe", None, b"\xff\xfe", 3),
        (b'{"a":1}', "application/json", b'{"a":1}', 3),
    ],
)
def test_stomp_bodies_go_out_as_text_or_bytes(
    body: bytes, content_type: str | None, value: object, kind: int
) -> None:
    props = {"content-type": content_type} if content_type else {}
    amqp = outbound(core(body=body, properties=props))
    assert amqp.body == value
    assert notes(amqp)[symbol("x-opt-jms-msg-type")] == kind


def test_original_destination_and_broker_bookkeeping_out() -> None:
    message = core(
        original_destination=Destination.queue("orders"),
        broker_path=("b1", "b2"),
        destination=Destination.queue("ActiveMQ.DLQ"),
    )
    amqp = outbound(message, delivery_count=6)
    assert props(amqp) == {"original-destination": "queue://orders"}
    assert amqp.delivery_count == 6


def test_the_tail_is_the_same_for_every_delivery() -> None:
    message = core(persistent=True, properties={"a": "1"})
    tail = message_tail(message)
    first = amqp_from_message(message, delivery_count=0, now_ms=NOW, tail=tail)
    again = amqp_from_message(message, delivery_count=3, now_ms=NOW)
    assert first.endswith(tail)
    assert again.endswith(tail)
    assert first != again


# --- round trips --------------------------------------------------------------------------------

_FIELDS = [
    "durable",
    "priority",
    "id",
    "user_id",
    "address",
    "subject",
    "reply_to",
    "correlation_id",
    "content_type",
    "content_encoding",
    "group_id",
    "group_sequence",
    "reply_to_group_id",
    "properties",
    "body",
]


def test_amqp_in_core_amqp_out_keeps_every_field() -> None:
    sent = proton.Message(
        durable=True,
        priority=6,
        ttl=30.0,
        id=uuid.uuid4(),
        user_id=b"bob",
        address="queue://orders",
        subject="s",
        reply_to="topic://replies",
        correlation_id=ulong(9),
        content_type="text/plain",
        group_id="g",
        group_sequence=2,
        reply_to_group_id="rg",
        creation_time=(NOW - 10) / 1000,
        properties={"a": "1", "b": "two"},
        annotations={symbol("x-opt-jms-msg-type"): byte(5), symbol("x-opt-custom"): "c"},
        body="payload",
    )
    sent.content_encoding = "utf-8"
    received = outbound(inbound(bytes(sent.encode())), now_ms=NOW + 1000)
    for field in _FIELDS:
        assert getattr(received, field) == getattr(sent, field), field
    assert round(received.ttl * 1000) == 29_000
    assert round(received.creation_time * 1000) == NOW - 10
    assert notes(received) == {
        symbol("x-opt-jms-msg-type"): byte(5),
        symbol("x-opt-custom"): "c",
        symbol("x-opt-jms-dest"): byte(0),
        symbol("x-opt-jms-reply-to"): byte(1),
    }
    assert isinstance(notes(received)[symbol("x-opt-jms-msg-type")], byte)


def _value(described: object) -> bytes:
    data = Data()
    data.put_object(cast(Any, described))
    return bytes(data.encode())


@pytest.mark.parametrize(
    ("sections", "code"),
    [
        (_value(Described(ulong(0x77), {"k": 1, symbol("s"): [1, 2.5]})), "7"),
        (_value(Described(ulong(0x77), ["a", ubyte(1), None])), "8"),
        (_value(Described(ulong(0x77), 12345)), "0"),
        (_value(Described(ulong(0x76), [1, 2])) + _value(Described(ulong(0x76), ["x"])), "3"),
        (bytes.fromhex("005375a00161") + bytes.fromhex("005375b00000000162"), "0"),
        # an amqp-value string under a symbolic descriptor, as a client may write it
        (b"\x00\xa3\x11amqp:amqp-value:*\xb1\x00\x00\x00\x02hi", "5"),
    ],
)
def test_other_bodies_are_kept_byte_for_byte(sections: bytes, code: str) -> None:
    head = bytes(proton.Message(id="m").encode())
    message = inbound(head + sections)
    assert message.properties["JMS_AMQP_ORIGINAL_ENCODING"] == code
    rendered = amqp_from_message(message, delivery_count=0, now_ms=NOW)
    if code == "5":  # a payload kind: the same value, in the broker's own encoding
        assert message.body == b"hi"
        assert rendered.endswith(bytes.fromhex("005377a1026869"))
    else:
        assert message.body == sections
        assert rendered.endswith(sections)


def test_footer_round_trip() -> None:
    message = inbound(encoded(body="x", footer={symbol("sig"): "s1"}))
    rendered = amqp_from_message(message, delivery_count=0, now_ms=NOW)
    assert _sections(rendered)[0x78] == {symbol("sig"): "s1"}


def test_stomp_headers_survive_core_amqp_core() -> None:
    headers = {
        "persistent": "true",
        "priority": "8",
        "expires": str(NOW + 60_000),
        "correlation-id": "ID:AMQP_ULONG:not-a-number",
        "reply-to": "/topic/answers",
        "type": "Order",
        "JMSXGroupID": "g",
        "JMSXGroupSeq": "1",
        "content-type": "text/plain",
        "AMQ_SCHEDULED_DELAY": "100",
        "custom-header": "value:with:colons",
        "ferrymq.producer-message-id": "p-7",
    }
    sent = message_from_send(FRESH, headers, b"body", [QUEUE], NOW)
    back = inbound(amqp_from_message(sent, delivery_count=0, now_ms=NOW))
    assert back.message_id == sent.message_id
    assert back.body == sent.body
    assert (back.persistent, back.priority, back.expires, back.timestamp) == (
        sent.persistent,
        sent.priority,
        sent.expires,
        sent.timestamp,
    )
    assert back.producer_message_id == "p-7"
    added = {"JMS_AMQP_ORIGINAL_ENCODING": "5", "JMS_AMQP_MA_x-opt-jms-msg-type": "5"}
    assert back.properties == {**sent.properties, **added}


def test_a_forged_original_encoding_from_stomp_falls_back_to_the_stomp_rule() -> None:
    amqp = outbound(core(body=b"plain", properties={"JMS_AMQP_ORIGINAL_ENCODING": "7"}))
    assert amqp.body == "plain"


# --- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b"\x00",
        b"\x01\x02\x03",
        bytes.fromhex("005375a005"),  # data section cut short
        bytes.fromhex("005377a1") + b"\x02\xff\xfe",  # string that is not UTF-8
        bytes.fromhex("005375a1026869"),  # a data section holding a string
        bytes.fromhex("005377a1026869") + bytes.fromhex("005375a00161"),  # value then data
        bytes.fromhex("005375a00161") + bytes.fromhex("00537045"),  # header after body
        bytes.fromhex("005373c0020140") * 2,  # properties twice
        bytes.fromhex("005373a10161"),  # a properties section that is no list
        bytes.fromhex("005399a10161"),  # no such section
        bytes.fromhex("005374c1030140"),  # a map with an odd number of items
    ],
)
def test_malformed_messages_are_refused_not_fatal(data: bytes) -> None:
    with pytest.raises(MalformedMessageError) as caught:
        inbound(data)
    assert caught.value.message.startswith("malformed AMQP message: ")
    assert not caught.value.fatal


def test_a_wrongly_typed_field_is_refused_by_name() -> None:
    properties = bytes.fromhex("005373c00702" + "40" + "7100000001")  # user-id: an int
    with pytest.raises(BrokerError, match="user-id holds a int"):
        inbound(properties)


def test_relay_destination_reads_to_and_its_type() -> None:
    assert relay_destination(encoded(address="topic://t")) == Destination.topic("t")
    typed = encoded(address="t", annotations={symbol("x-opt-jms-dest"): byte(1)})
    assert relay_destination(typed) == Destination.topic("t")
    assert relay_destination(encoded(address="q")) == Destination.queue("q")
    with pytest.raises(BrokerError, match="needs a 'to' address"):
        relay_destination(encoded(body="x"))


# --- garbage ------------------------------------------------------------------------------------

_SAMPLE = encoded(
    durable=True,
    id=ulong(3),
    reply_to="queue://r",
    properties={"a": "1", "n": 2},
    annotations={symbol("x-opt-jms-msg-type"): byte(5)},
    body="payload",
    footer={symbol("f"): "v"},
)


@settings(deadline=None, max_examples=400)
@given(
    st.one_of(
        st.binary(max_size=80),
        st.builds(
            lambda cut, at, junk: (_SAMPLE[:at] + junk + _SAMPLE[at:])[:cut],
            st.integers(0, len(_SAMPLE)),
            st.integers(0, len(_SAMPLE)),
            st.binary(max_size=6),
        ),
        st.builds(
            lambda at, value: _SAMPLE[:at] + bytes([value]) + _SAMPLE[at + 1 :],
            st.integers(0, len(_SAMPLE) - 1),
            st.integers(0, 255),
        ),
    )
)
def test_garbage_is_refused_with_a_broker_error_or_mapped(data: bytes) -> None:
    """Whatever a client sends, the mapping answers with a message or a non-fatal refusal:
    never another exception, which would take the connection down."""
    refusal: BrokerError | None = None
    try:
        message = inbound(data)
    except BrokerError as exc:
        refusal = exc
    else:
        amqp_from_message(message, delivery_count=0, now_ms=NOW)
    assert refusal is None or not refusal.fatal
