"""ActiveMQ's multicast discovery datagram (reference §3.4), encoded and decoded without
sockets: the exact bytes ActiveMQ 5.17 sends, its dead packet, strict reading, and the property
that a group never reads another group's datagrams."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ferrymq.discovery.datagram import (
    Advertisement,
    DatagramError,
    Kind,
    alive,
    check_group,
    dead,
    decode,
    encode,
)

# What ActiveMQ 5.17.2 sent for <transportConnector uri="stomp://127.0.0.1:45124"
# discoveryUri="multicast://239.255.77.1:45123?group=g1&...">, captured on lo.
ACTIVEMQ_ALIVE = b"g1.ActiveMQ-4.alive.%localhost%stomp://localhost:45124"


def test_alive_and_dead_have_activemq_bytes() -> None:
    assert alive("default", "tcp://host1:61616") == (
        b"default.ActiveMQ-4.alive.%localhost%tcp://host1:61616"
    )
    assert dead("default", "tcp://host1:61616") == (
        b"default.ActiveMQ-4.dead.%localhost%tcp://host1:61616"
    )


def test_a_datagram_activemq_sent_is_read() -> None:
    assert decode(ACTIVEMQ_ALIVE, "g1") == Advertisement(
        "g1", Kind.ALIVE, "stomp://localhost:45124", "localhost"
    )


def test_any_broker_name_is_read_and_the_service_may_contain_percent_signs() -> None:
    read = decode(b"g.ActiveMQ-4.dead.%brokerA%tcp://h:1?x=%41", "g")
    assert read == Advertisement("g", Kind.DEAD, "tcp://h:1?x=%41", "brokerA")


@pytest.mark.parametrize(
    "data",
    [
        b"other.ActiveMQ-4.alive.%localhost%tcp://h:1",
        b"g.ActiveMQ-5.alive.%localhost%tcp://h:1",
        b"gg.ActiveMQ-4.alive.%localhost%tcp://h:1",
        b"",
        b"\xff\xfe",
    ],
)
def test_datagrams_of_other_groups_are_not_ours(data: bytes) -> None:
    assert decode(data, "g") is None


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"g.ActiveMQ-4.sleeping.%localhost%tcp://h:1", "unknown kind"),
        (b"g.ActiveMQ-4.alive.localhost%tcp://h:1", "broker name"),
        (b"g.ActiveMQ-4.alive.%localhost", "closing"),
        (b"g.ActiveMQ-4.alive.%localhost%", "no service"),
        (b"g.ActiveMQ-4.alive.%localhost%tcp://\xff", "not UTF-8"),
    ],
)
def test_malformed_datagrams_of_our_group_are_the_senders_fault(data: bytes, words: str) -> None:
    with pytest.raises(DatagramError, match=words):
        decode(data, "g")


@pytest.mark.parametrize("group", ["", "a%b"])
def test_groups_that_could_be_confused_are_refused(group: str) -> None:
    with pytest.raises(ValueError, match="group name"):
        check_group(group)
    with pytest.raises(ValueError, match="group name"):
        alive(group, "tcp://h:1")


def test_an_empty_service_or_a_broker_name_with_the_delimiter_cannot_be_encoded() -> None:
    with pytest.raises(ValueError, match="service"):
        alive("g", "")
    with pytest.raises(ValueError, match="broker name"):
        encode(Advertisement("g", Kind.ALIVE, "tcp://h:1", "a%b"))


groups = st.text(min_size=1, max_size=20).filter(lambda g: "%" not in g)
# Group names made of the datagram's own pieces, to find prefix confusions.
tricky_groups = st.lists(
    st.sampled_from(["a", ".", "ActiveMQ-4", "alive", "dead", "x"]), min_size=1, max_size=6
).map("".join)
services = st.text(min_size=1, max_size=60)
names = st.text(max_size=12).filter(lambda n: "%" not in n)


@given(group=groups, kind=st.sampled_from(Kind), service=services, name=names)
def test_what_is_encoded_decodes_to_itself(group: str, kind: Kind, service: str, name: str) -> None:
    advertisement = Advertisement(group, kind, service, name)
    assert decode(encode(advertisement), group) == advertisement


@given(
    sender=groups | tricky_groups,
    reader=groups | tricky_groups,
    kind=st.sampled_from(Kind),
    service=services | tricky_groups,
)
def test_a_group_never_reads_another_groups_datagrams(
    sender: str, reader: str, kind: Kind, service: str
) -> None:
    data = encode(Advertisement(sender, kind, service))
    if sender == reader:
        assert decode(data, reader) is not None
        return
    with contextlib.suppress(DatagramError):  # read as ours but refused: never announced
        assert decode(data, reader) is None


@given(data=st.binary(max_size=200), group=groups)
def test_decoding_any_bytes_answers_or_refuses(data: bytes, group: str) -> None:
    try:
        read = decode(data, group)
    except DatagramError:
        return
    if read is not None:
        assert read.group == group
        assert read.service
        assert encode(read) == data
