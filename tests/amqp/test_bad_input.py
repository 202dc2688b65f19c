"""Bad AMQP 1.0 input against a live broker (issue 17, item 5).

Each fault is written by hand on a raw socket (``wire``): proton's own client would refuse to
send most of them. The broker must answer with an AMQP error condition and a description that
says what was wrong, on the smallest endpoint that carries it: a rejected delivery or a closed
link where the connection can go on (and then it does: a good link works after the bad one), the
connection only for a framing fault. Meanwhile a STOMP and an AMQP client connected before the
fault keep sending and receiving, and the persistent messages stored before it are all still
there after (``bystanders``).
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
from proton import symbol, ubyte, uint

from .bystanders import Bystanders, start_broker
from .proton_support import AUTHORIZATION, USERS
from .wire import (
    ACCEPTED,
    AMQP_HEADER,
    ATTACH,
    CLOSE,
    DETACH,
    DISCHARGE,
    DISPOSITION,
    FLOW,
    OPEN,
    SASL_HEADER,
    SASL_OUTCOME,
    SELECTOR_FILTER,
    SOURCE,
    TARGET,
    TRANSACTIONAL_STATE,
    Frame,
    RawAmqp,
    attach_frame,
    described,
    encode,
    frame,
    message_bytes,
    performative,
    transfer_frame,
)

CREDIT = 10
MAX_FRAME = 4096
AMQP_LISTENER = (
    f"amqp://127.0.0.1:0?wireFormat.producerCredit={CREDIT}&wireFormat.maxAmqpFrameSize={MAX_FRAME}"
)


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[Bystanders]:
    broker = start_broker(tmp_path, AMQP_LISTENER)
    bystanders = Bystanders(broker).start()
    try:
        yield bystanders
        bystanders.check()
    finally:
        bystanders.stop()
        broker.stop()


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[Bystanders]:
    broker = start_broker(tmp_path, AMQP_LISTENER, USERS.format(anonymous="") + AUTHORIZATION)
    bystanders = Bystanders(broker, "system", "manager").start()
    try:
        yield bystanders
        bystanders.check()
    finally:
        bystanders.stop()
        broker.stop()


def closing(frames: list[Frame]) -> Frame:
    """The broker's close, the last frame before it hung up."""
    assert frames, "the broker closed without a close frame"
    assert frames[-1].descriptor == CLOSE, frames
    return frames[-1]


def detached(raw: RawAmqp) -> Frame:
    """The broker's detach of a link it refused (after its attach), closed."""
    detach = raw.until(DETACH)
    assert detach.field(1) is True, detach
    return detach


def works_after(raw: RawAmqp, handle: int, delivery_id: int = 0) -> None:
    """The connection and session survived: a new producer link gets a message accepted
    (``delivery_id``: the session's next, as AMQP numbers them in order)."""
    raw.send(attach_frame(f"good-{handle}", handle, sender=True, address="queue://after"))
    raw.until(ATTACH)
    raw.until(FLOW)
    raw.send(transfer_frame(handle, delivery_id, message_bytes("after")))
    disposition = raw.until(DISPOSITION)
    state = disposition.field(4)
    assert getattr(state, "descriptor", None) == ACCEPTED, disposition


# -- framing: the connection closes with the reason ---------------------------------------------

FRAMING_FAULTS = {
    "size below the frame header": struct.pack(">IBBH", 4, 2, 0, 0),
    "data offset below 2": struct.pack(">IBBH", 16, 1, 0, 0) + b"\x00" * 8,
    "larger than max-frame-size": struct.pack(">IBBH", MAX_FRAME * 4, 2, 0, 0),
}
DECODE_FAULTS = {
    "garbage body": frame(b"\xff\xfe\xfd\x01\x02"),
    "unknown performative": performative(0x77, ["what is this"]),
    "a body that is no performative": frame(encode(["just", "a", "list"])),
}


@pytest.mark.parametrize("fault", sorted(FRAMING_FAULTS))
def test_a_malformed_frame_closes_the_connection_with_a_framing_error(
    watched: Bystanders, fault: str
) -> None:
    with RawAmqp(watched.broker.amqp_port) as raw:
        raw.handshake()
        raw.send(FRAMING_FAULTS[fault])
        refusal = closing(raw.read_until_eof()).refusal
    assert refusal is not None, "no error condition"
    assert refusal.condition == "amqp:connection:framing-error", refusal
    assert refusal.description


@pytest.mark.parametrize("fault", sorted(DECODE_FAULTS))
def test_an_undecodable_frame_closes_the_connection_with_a_decode_error(
    watched: Bystanders, fault: str
) -> None:
    with RawAmqp(watched.broker.amqp_port) as raw:
        raw.handshake()
        raw.send(DECODE_FAULTS[fault])
        refusal = closing(raw.read_until_eof()).refusal
    assert refusal is not None, "no error condition"
    assert refusal.condition == "amqp:decode-error", refusal
    assert "could not be decoded" in refusal.description


def test_garbage_right_after_the_header_is_refused(watched: Bystanders) -> None:
    with RawAmqp(watched.broker.amqp_port) as raw:
        raw.send(AMQP_HEADER + b"\xff" * 40)
        assert raw.read_header() == AMQP_HEADER
        frames = raw.read_until_eof()
    assert frames[0].descriptor == OPEN, frames
    refusal = closing(frames).refusal
    assert refusal is not None, "no error condition"
    assert refusal.condition == "amqp:connection:framing-error", refusal


@pytest.mark.parametrize("cut", [3, 10, 30])
def test_a_truncated_frame_then_close_leaves_nothing_behind(watched: Bystanders, cut: int) -> None:
    with RawAmqp(watched.broker.amqp_port) as raw:
        raw.handshake()
        raw.send(attach_frame("cut", 0, sender=True, address="queue://cut")[:cut])
        raw.sock.shutdown(socket.SHUT_WR)
        frames = raw.read_until_eof()
    assert all(f.descriptor != ATTACH for f in frames), frames
    # ``check`` (the fixture) waits until the broker forgot the connection.


@pytest.mark.parametrize(
    "header", [b"AMQP\x01\x01\x00\x00", b"AMQP\x00\x01\x00\x01", b"GET / HTTP/1.1\r\n\r\n"]
)
def test_a_wrong_protocol_header_gets_the_broker_s_header_and_a_close(
    watched: Bystanders, header: bytes
) -> None:
    """AMQP 1.0 part 2.2: the server answers with the header it supports, then closes."""
    with RawAmqp(watched.broker.amqp_port) as raw:
        raw.send(header)
        assert raw.read_header() == SASL_HEADER
        assert raw.read_until_eof() == []


# -- SASL ----------------------------------------------------------------------------------------

SASL_FAULTS = {
    "sasl-init without a mechanism": frame(encode(described(0x41, [])), kind=1),
    "sasl-init that does not decode": frame(b"\xff\xff\xff", kind=1),
    "not a SASL frame": frame(encode(described(0x41, [symbol("PLAIN")])), kind=0),
    "an unknown mechanism": frame(encode(described(0x41, [symbol("CRAM-MD5"), b"x"])), kind=1),
    "a PLAIN response without NULs": frame(
        encode(described(0x41, [symbol("PLAIN"), b"no separators"])), kind=1
    ),
}


@pytest.mark.parametrize("fault", sorted(SASL_FAULTS))
def test_a_broken_sasl_exchange_fails_with_an_outcome(watched: Bystanders, fault: str) -> None:
    with RawAmqp(watched.broker.amqp_port) as raw:
        raw.send(SASL_HEADER + SASL_FAULTS[fault])
        assert raw.read_header() == SASL_HEADER
        frames = raw.read_until_eof()
    assert [f.descriptor for f in frames][-1] == SASL_OUTCOME, frames
    assert frames[-1].field(0) == 1  # auth: the exchange failed, the client may not go on


def test_sasl_broken_off_halfway_leaves_nothing_behind(watched: Bystanders) -> None:
    init = frame(encode(described(0x41, [symbol("PLAIN"), b"\x00system\x00manager"])), kind=1)
    with RawAmqp(watched.broker.amqp_port) as raw:
        raw.send(SASL_HEADER + init[: len(init) // 2])
        raw.sock.shutdown(socket.SHUT_WR)
        frames = raw.read_until_eof()
    assert all(f.descriptor != SASL_OUTCOME for f in frames), frames


def test_a_wrong_password_fails_sasl_and_skipping_sasl_is_refused(secured: Bystanders) -> None:
    with RawAmqp(secured.broker.amqp_port) as raw:
        assert raw.sasl("PLAIN", b"\x00system\x00wrong") == 1
        assert raw.read_until_eof() == []
    with RawAmqp(secured.broker.amqp_port) as raw:
        raw.send(AMQP_HEADER)
        assert raw.read_header() == SASL_HEADER
        assert raw.read_until_eof() == []


# -- links: refused one by one, the connection goes on -------------------------------------------

ILLEGAL_ADDRESSES = {
    "queue://": "empty",
    "bogus://x": "unknown prefix",
    "/queue/x": "STOMP's spelling",
    "queue://a,queue://b": "comma",
}


@pytest.mark.parametrize("sender", [True, False], ids=["producer", "consumer"])
@pytest.mark.parametrize("address", sorted(ILLEGAL_ADDRESSES))
def test_a_link_to_an_illegal_address_is_closed_with_the_reason(
    watched: Bystanders, address: str, sender: bool
) -> None:
    with RawAmqp(watched.broker.amqp_port) as raw:
        raw.handshake()
        raw.send(attach_frame("bad", 0, sender=sender, address=address))
        refusal = detached(raw).refusal
        assert refusal is not None, "no error condition"
        assert refusal.condition == "amqp:not-allowed", refusal
        assert address in refusal.description
        assert ILLEGAL_ADDRESSES[address] in refusal.description
        works_after(raw, 1)
        watched.round_trip()


def test_a_selector_that_does_not_parse_is_an_invalid_field(watched: Bystanders) -> None:
    filters = {symbol("jms-selector"): described(SELECTOR_FILTER, "price > > 3")}
    with RawAmqp(watched.broker.amqp_port) as raw:
        raw.handshake()
        raw.send(attach_frame("sel", 0, sender=False, address="queue://q", filters=filters))
        refusal = detached(raw).refusal
        assert refusal is not None, "no error condition"
        assert refusal.condition == "amqp:invalid-field", refusal
        assert "selector" in refusal.description
        assert "price > > 3" in refusal.description
        works_after(raw, 1)


@pytest.mark.parametrize("sender", [True, False], ids=["producer", "consumer"])
def test_a_link_to_a_forbidden_address_is_unauthorized(secured: Bystanders, sender: bool) -> None:
    with RawAmqp(secured.broker.amqp_port) as raw:
        assert raw.sasl("PLAIN", b"\x00user\x00password") == 0
        raw.handshake()
        raw.send(attach_frame("forbidden", 0, sender=sender, address="queue://ADMIN.only"))
        refusal = detached(raw).refusal
        assert refusal is not None, "no error condition"
        assert refusal.condition == "amqp:unauthorized-access", refusal
        assert "ADMIN.only" in refusal.description
        raw.send(attach_frame("allowed", 1, sender=True, address="queue://USERS.mine"))
        assert raw.until(ATTACH).field(0) == "allowed"
        assert raw.until(FLOW).field(6) == CREDIT  # credit on the link it may use
        secured.round_trip()


# -- transfers -------------------------------------------------------------------------------------


def test_a_transfer_over_credit_closes_the_link(watched: Bystanders) -> None:
    with RawAmqp(watched.broker.amqp_port) as raw:
        raw.handshake()
        raw.send(attach_frame("greedy", 0, sender=True, address="queue://greedy"))
        raw.until(ATTACH)
        assert raw.until(FLOW).field(6) == CREDIT
        # All at once, before any top-up of credit could arrive: the last one has no credit.
        raw.send(b"".join(transfer_frame(0, n, message_bytes(f"m{n}")) for n in range(CREDIT + 1)))
        accepted = 0
        while (got := raw.read_frame()) is not None and got.descriptor != DETACH:
            state = got.field(4) if got.descriptor == DISPOSITION else None
            if getattr(state, "descriptor", None) == ACCEPTED:  # one disposition: first..last
                first, last = cast(int, got.field(1)), cast("int | None", got.field(2))
                accepted += (first if last is None else last) - first + 1
        assert got is not None, "the broker did not close the greedy link"
        refusal = got.refusal
        assert refusal is not None
        assert refusal.condition == "amqp:link:transfer-limit-exceeded", refusal
        assert "without link credit" in refusal.description
        assert accepted == CREDIT  # every message within credit was taken
        works_after(raw, 1, CREDIT + 1)


def test_a_message_that_does_not_decode_is_rejected_with_a_decode_error(
    watched: Bystanders,
) -> None:
    with RawAmqp(watched.broker.amqp_port) as raw:
        raw.handshake()
        raw.send(attach_frame("p", 0, sender=True, address="queue://bad.payload"))
        raw.until(FLOW)
        raw.send(transfer_frame(0, 0, b"\x00\x53\x77\xff\x01"))
        refusal = raw.until(DISPOSITION).refusal
        assert refusal is not None, "no error condition"
        assert refusal.condition == "amqp:decode-error", refusal
        assert "malformed AMQP message" in refusal.description
        raw.send(transfer_frame(0, 1, message_bytes("fine")))  # the link goes on
        assert getattr(raw.until(DISPOSITION).field(4), "descriptor", None) == ACCEPTED


def test_application_properties_holding_a_map_are_an_invalid_field(watched: Bystanders) -> None:
    with RawAmqp(watched.broker.amqp_port) as raw:
        raw.handshake()
        raw.send(attach_frame("p", 0, sender=True, address="queue://mapped"))
        raw.until(FLOW)
        raw.send(transfer_frame(0, 0, message_bytes("x", properties={"nested": {"a": 1}})))
        refusal = raw.until(DISPOSITION).refusal
        assert refusal is not None, "no error condition"
        assert refusal.condition == "amqp:invalid-field", refusal
        assert "'nested'" in refusal.description
        assert "map" in refusal.description
        works_after(raw, 1, 1)


# -- transactions ----------------------------------------------------------------------------------


def test_discharging_an_unknown_transaction_is_refused(watched: Bystanders) -> None:
    with RawAmqp(watched.broker.amqp_port) as raw:
        raw.handshake()
        raw.send(attach_frame("txn", 0, sender=True, address=None, coordinator=True))
        raw.until(FLOW)
        raw.send(transfer_frame(0, 0, message_bytes(described(DISCHARGE, [b"no-such-txn", False]))))
        refusal = raw.until(DISPOSITION).refusal
        assert refusal is not None, "no error condition"
        assert refusal.condition == "amqp:transaction:unknown-id", refusal
        assert "no-such-txn" in refusal.description
        works_after(raw, 1, 1)


def test_a_transfer_in_an_unknown_transaction_is_refused(watched: Bystanders) -> None:
    with RawAmqp(watched.broker.amqp_port) as raw:
        raw.handshake()
        raw.send(attach_frame("p", 0, sender=True, address="queue://txn.unknown"))
        raw.until(FLOW)
        state = described(TRANSACTIONAL_STATE, [b"no-such-txn"])
        raw.send(transfer_frame(0, 0, message_bytes("in no txn"), state=state))
        refusal = raw.until(DISPOSITION).refusal
        assert refusal is not None, "no error condition"
        assert refusal.condition == "amqp:transaction:unknown-id", refusal
        assert "no-such-txn" in refusal.description
        works_after(raw, 1, 1)


# -- values proton cannot read ---------------------------------------------------------------------


def _non_ascii(data: bytes, name: bytes) -> bytes:
    """``data`` with the symbol ``name`` spelt with a byte that is not ASCII (same length)."""
    assert data.count(name) == 1
    return data.replace(name, name[:-1] + b"\xff")


NON_ASCII_ATTACHES = {
    "a filter key": _non_ascii(
        attach_frame(
            "sym",
            0,
            sender=False,
            address="queue://q",
            filters={symbol("jms-selector"): described(SELECTOR_FILTER, "a = 1")},
        ),
        b"jms-selector",
    ),
    "a source capability": _non_ascii(
        performative(
            ATTACH,
            [
                "sym",
                uint(0),
                True,
                ubyte(2),
                ubyte(0),
                described(SOURCE, ["queue://q", *[None] * 9, [symbol("odd-capability")]]),
                described(TARGET, [None]),
            ],
        ),
        b"odd-capability",
    ),
}


@pytest.mark.parametrize("where", sorted(NON_ASCII_ATTACHES))
def test_a_symbol_that_is_not_ascii_closes_the_link_with_a_decode_error(
    watched: Bystanders, where: str
) -> None:
    with RawAmqp(watched.broker.amqp_port) as raw:
        raw.handshake()
        raw.send(NON_ASCII_ATTACHES[where])
        refusal = detached(raw).refusal
        assert refusal is not None, "no error condition"
        assert refusal.condition == "amqp:decode-error", refusal
        assert "not ASCII" in refusal.description
        works_after(raw, 1)
