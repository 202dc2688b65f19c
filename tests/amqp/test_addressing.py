"""AMQP addresses name the same destinations as STOMP's, as ActiveMQ 5.x spells them."""

from __future__ import annotations

import pytest

from ferrymq.adapters.amqp.addressing import (
    address_for,
    destination_for,
    destination_for_code,
    destination_type_code,
    type_for_code,
)
from ferrymq.adapters.stomp.dialect import parse_destinations
from ferrymq.core.destination import Destination, DestinationType
from ferrymq.core.errors import BrokerError

Q = DestinationType.QUEUE
T = DestinationType.TOPIC
TQ = DestinationType.TEMP_QUEUE
TT = DestinationType.TEMP_TOPIC


@pytest.mark.parametrize(
    ("address", "kind", "name"),
    [
        ("queue://orders", Q, "orders"),
        ("topic://prices.eu", T, "prices.eu"),
        ("temp-queue://ID:broker-1:3:1", TQ, "ID:broker-1:3:1"),
        ("temp-topic://c1:2", TT, "c1:2"),
        ("orders", Q, "orders"),
        ("queue://a://b", Q, "a://b"),
    ],
)
def test_qualified_and_plain_addresses(address: str, kind: DestinationType, name: str) -> None:
    assert destination_for(address) == Destination(kind, name)


@pytest.mark.parametrize(
    ("capabilities", "kind"),
    [
        ((), Q),
        (("queue",), Q),
        (("topic",), T),
        (("temporary-queue",), TQ),
        (("temporary-topic",), TT),
        (("shared", "topic", "global"), T),
    ],
)
def test_capabilities_type_a_plain_name(
    capabilities: tuple[str, ...], kind: DestinationType
) -> None:
    assert destination_for("x", capabilities).type is kind


def test_a_prefix_wins_over_a_capability() -> None:
    assert destination_for("queue://x", ("topic",)) == Destination.queue("x")


@pytest.mark.parametrize(
    ("address", "stomp"),
    [
        ("queue://a.b", "/queue/a.b"),
        ("topic://a.b", "/topic/a.b"),
        ("a.b", "/queue/a.b"),
        ("temp-queue://ID:c:1", "/remote-temp-queue/ID:c:1"),
        ("temp-topic://ID:c:1", "/remote-temp-topic/ID:c:1"),
    ],
)
def test_one_destination_whichever_protocol_names_it(address: str, stomp: str) -> None:
    (expected,), _ = parse_destinations(stomp)
    assert destination_for(address) == expected


def test_wildcards_pass_as_over_stomp() -> None:
    pattern = destination_for("topic://prices.>")
    assert pattern.is_wildcard
    assert destination_for("queue://a.*.c").is_wildcard


@pytest.mark.parametrize(
    ("address", "says"),
    [
        (None, "missing or empty"),
        ("", "missing or empty"),
        ("   ", "missing or empty"),
        ("queue://", "destination name is empty"),
        ("exchange://x", "unknown prefix exchange://"),
        ("/queue/orders", "queue://NAME for /queue/NAME"),
        ("/orders", "STOMP's spelling"),
        ("queue://a,queue://b", "comma"),
        ("a,b", "composite"),
    ],
)
def test_bad_addresses_are_refused_with_the_fix(address: str | None, says: str) -> None:
    with pytest.raises(BrokerError) as caught:
        destination_for(address)
    assert says in caught.value.message
    assert "queue://NAME" in caught.value.message or "one link per destination" in (
        caught.value.message
    )
    assert not caught.value.fatal


@pytest.mark.parametrize("kind", list(DestinationType))
def test_address_for_is_the_qualified_name_and_reads_back(kind: DestinationType) -> None:
    destination = Destination(kind, "ID:c:1" if kind.is_temporary else "a.b")
    assert address_for(destination) == destination.qualified
    assert destination_for(address_for(destination)) == destination


@pytest.mark.parametrize(
    ("kind", "code"), [(Q, 0), (T, 1), (TQ, 2), (TT, 3)]
)  # Qpid JMS's x-opt-jms-dest bytes
def test_type_codes_both_ways(kind: DestinationType, code: int) -> None:
    assert destination_type_code(Destination(kind, "x")) == code
    assert type_for_code(code) is kind
    assert destination_for_code("x", code) == Destination(kind, "x")


def test_code_none_is_a_queue_and_a_prefix_wins_over_a_code() -> None:
    assert destination_for_code("x", None) == Destination.queue("x")
    assert destination_for_code("topic://x", 0) == Destination.topic("x")


def test_unknown_code_is_refused() -> None:
    with pytest.raises(BrokerError, match="annotation 7 is not one of 0"):
        destination_for_code("x", 7)
