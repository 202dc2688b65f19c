"""The STOMP dialect: destination names, SEND headers, and MESSAGE header rendering."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ferrymq.adapters.stomp import dialect
from ferrymq.core.destination import Destination, DestinationType
from ferrymq.core.errors import BrokerError
from ferrymq.core.message import Message, MessageId
from ferrymq.stomp.encoder import header_block
from ferrymq.stomp.errors import LocalProtocolError

CHARACTERS = st.characters(
    categories=["L", "M", "N", "P", "S", "Z", "Cc"], blacklist_characters="\x00"
)
names = st.text(CHARACTERS, min_size=1).filter(
    lambda s: s.strip() and s.strip() == s and "," not in s and not s.startswith("/")
)
values = st.text(CHARACTERS)


@given(
    destination=names,
    topic=st.booleans(),
    message_id=values.filter(bool),
    properties=st.dictionaries(
        names.filter(lambda n: n not in dialect._FRAME_ONLY and ":" not in n), values, max_size=4
    ),
    persistent=st.booleans(),
    producer_message_id=st.none() | values,
    path=st.lists(names.filter(lambda n: "," not in n), max_size=3),
    version=st.sampled_from(["1.1", "1.2"]),
)
def test_fast_rendering_equals_the_general_one(
    destination: str,
    topic: bool,
    message_id: str,
    properties: dict[str, str],
    persistent: bool,
    producer_message_id: str | None,
    path: list[str],
    version: str,
) -> None:
    message = Message(
        MessageId(message_id),
        Destination(DestinationType.TOPIC if topic else DestinationType.QUEUE, destination),
        b"",
        properties,
        persistent=persistent,
        timestamp=1_795_000_000_000,
        broker_path=tuple(path),
        producer_message_id=producer_message_id,
    )
    fast = dialect.standard_block(message, version)
    try:
        general = header_block(list(dialect.message_headers(message).items()), version)
    except LocalProtocolError:
        assert fast is None
        return
    assert fast is None or fast == general


def test_destinations_parse_and_print() -> None:
    names_ = dialect.TemporaryNames("ID:c1")
    parsed, created = dialect.parse_destinations("/queue/a,/topic/b.c,plain", names_)
    assert [d.qualified for d in parsed] == ["queue://a", "topic://b.c", "queue://plain"]
    assert created == ()
    (temp,), (new,) = dialect.parse_destinations("/temp-queue/replies", names_)
    assert temp == new
    assert dialect.format_destination(temp, names_) == "/temp-queue/replies"
    assert dialect.format_destination(temp).startswith("/remote-temp-queue/ID:c1")


@pytest.mark.parametrize("bad", ["", "   ", "/foo/bar", "/queue/"])
def test_bad_destination_headers_are_errors(bad: str) -> None:
    with pytest.raises(BrokerError):
        dialect.parse_destinations(bad)


def test_send_headers_map_to_message_fields() -> None:
    message = dialect.message_from_send(
        MessageId("ID:x:1"),
        {
            "destination": "/queue/a",
            "persistent": "true",
            "priority": "7",
            "expires": "123",
            "JMSXGroupID": "g",
            "receipt": "r",
            "ferrymq.producer-message-id": "p:1",
        },
        b"body",
        (Destination.queue("a"),),
        now_ms=42,
    )
    assert (message.persistent, message.priority, message.expires, message.timestamp) == (
        True,
        7,
        123,
        42,
    )
    assert message.properties == {"JMSXGroupID": "g"}
    assert message.producer_message_id == "p:1"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("priority", "10"),
        ("priority", "x"),
        ("expires", "soon"),
        ("expires", str(2**64)),
        ("timestamp", str(-(2**63) - 1)),
    ],
)
def test_bad_send_header_values_are_errors(name: str, value: str) -> None:
    with pytest.raises(BrokerError, match=name):
        dialect.message_from_send(
            MessageId("ID:x:1"), {name: value}, b"", (Destination.queue("a"),), now_ms=0
        )
