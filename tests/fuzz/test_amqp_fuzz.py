"""Random and mutated AMQP 1.0 against a live broker and its decoders (issue 17, item 5).

The live test starts from a valid byte stream as a client writes it (SASL ANONYMOUS, the AMQP
header, open, begin, a producer's attach and a durable transfer, a consumer's attach and flow,
a transaction's declare, detach, end, close), mutates it (bytes flipped, inserted, deleted,
repeated, cut short) or follows a valid opening with random bytes, and plays each case on a
fresh connection, in random pieces, then half-closes: the broker must end every such connection
in time (no hang), and a STOMP and an AMQP client connected throughout keep round-tripping;
afterwards the persistent messages stored before are all there and the broker logged no
warning. The in-process tests feed mutated input to the pure decoders, which must raise only
their documented error types. ``derandomize`` makes every run the same cases.
"""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import proton
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from proton import symbol

from ferrymq.adapters.amqp import body
from ferrymq.adapters.amqp.mapping import message_from_amqp
from ferrymq.amqp.sasl import Header, SaslError, SaslInit, SaslServer, plain_credentials
from ferrymq.core.destination import Destination
from ferrymq.core.errors import BrokerError
from ferrymq.core.message import MessageId
from tests.amqp.bystanders import Bystanders, start_broker
from tests.amqp.wire import (
    AMQP_HEADER,
    DECLARE,
    SASL_HEADER,
    SASL_INIT,
    attach_frame,
    begin_frame,
    described,
    encode,
    flow_frame,
    frame,
    message_bytes,
    open_frame,
    performative,
    transfer_frame,
)

EXAMPLES = 200
DECODER_EXAMPLES = 1000
ROUND_TRIP_EVERY = 20
CLOSE_WAIT_S = 10.0
CHUNK_PAUSE_S = 0.001
"""Between the pieces of a case, so the broker reads them separately (not a wait)."""

DETACH, END, CLOSE = 0x16, 0x17, 0x18


def _message(**fields: object) -> bytes:
    return message_bytes("fuzz", durable=True, **fields)


MESSAGES = [
    _message(),
    _message(id="m-1", correlation_id="c-1", reply_to="queue://replies", priority=7, ttl=60),
    _message(properties={"color": "red", "n": 3, "ok": True}, subject="s", content_type="text"),
    message_bytes(b"\x00\x01binary", annotations={symbol("x-opt-jms-msg-type"): proton.byte(3)}),
    message_bytes(["a", 1, 2.5], address="queue://fuzz.relay", user_id=b"u"),
    bytes(proton.Message(body=described(0x77, [1])).encode()),
]


def valid_stream() -> list[bytes]:
    """A well-behaved client's session, frame by frame."""
    anonymous = frame(encode(described(SASL_INIT, [symbol("ANONYMOUS"), b""])), kind=1)
    return [
        SASL_HEADER + anonymous,
        AMQP_HEADER,
        open_frame("fuzz-client"),
        begin_frame(),
        attach_frame("producer", 0, sender=True, address="queue://fuzz.q"),
        attach_frame("consumer", 1, sender=False, address="queue://fuzz.q"),
        flow_frame(1, 5, next_in=0),
        attach_frame("txn", 2, sender=True, address=None, coordinator=True),
        transfer_frame(0, 0, MESSAGES[1]),
        transfer_frame(0, 1, MESSAGES[2], settled=True),
        transfer_frame(2, 2, bytes(proton.Message(body=described(DECLARE, [])).encode())),
        performative(DETACH, [proton.uint(0), True]),
        performative(END, []),
        performative(CLOSE, []),
    ]


PHASES = (8, 11)
"""Where the player waits for the broker: the transfers go once it granted credit, the ends
once it answered them."""
QUIET_S = 0.03
PHASE_WAIT_S = 0.5


@st.composite
def mutated(draw: st.DrawFn, frames: list[bytes]) -> list[bytes]:
    """The valid frames with a few bytes flipped, inserted, deleted or repeated, or cut, or a
    symbol made non-ASCII."""
    parts = [bytearray(part) for part in frames]
    for _ in range(draw(st.integers(1, 4))):
        index = draw(st.integers(0, len(parts) - 1))
        data = parts[index]
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        edit = draw(st.sampled_from(["flip", "insert", "delete", "repeat", "cut", "symbol"]))
        symbols = [i + 2 for i in range(len(data) - 2) if data[i] == 0xA3 and data[i + 1]]
        if edit == "symbol" and symbols:  # a symbol (sym8) spelt with a byte that is not ASCII
            data[draw(st.sampled_from(symbols))] = draw(st.integers(0x80, 0xFF))
        elif edit == "flip" and data:
            data[at] = draw(st.integers(0, 255))
        elif edit == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif edit == "delete":
            del data[at : at + draw(st.integers(1, 16))]
        elif edit == "repeat":
            data[at:at] = data[at : at + draw(st.integers(1, 64))]
        else:
            del data[at:]
            del parts[index + 1 :]
    return [bytes(part) for part in parts]


@st.composite
def random_after_opening(draw: st.DrawFn, frames: list[bytes]) -> list[bytes]:
    """A valid opening (up to a frame of the session), then random bytes."""
    keep = draw(st.integers(1, len(frames)))
    return [*frames[:keep], draw(st.binary(min_size=1, max_size=256))]


def cases() -> st.SearchStrategy[tuple[list[bytes], list[int]]]:
    frames = valid_stream()
    streams = st.one_of(
        mutated(frames),
        random_after_opening(frames),
        st.builds(lambda data: [data], st.binary(max_size=128)),
    )
    return st.tuples(streams, st.lists(st.integers(1, 200), max_size=4))


def pieces(data: bytes, sizes: list[int]) -> Iterator[bytes]:
    at = 0
    for size in sizes:
        if at < len(data):
            yield data[at : at + size]
            at += size
    if at < len(data):
        yield data[at:]


class Player:
    """One case on a fresh connection: what the broker wrote back, up to its close."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=CLOSE_WAIT_S)
        self.received = bytearray()
        self.closed = False

    def send(self, data: bytes, sizes: list[int]) -> None:
        for index, piece in enumerate(pieces(data, sizes)):
            if index:
                time.sleep(CHUNK_PAUSE_S)
            try:
                self.sock.sendall(piece)
            except OSError:
                return  # the broker closed mid-way, as it may after a fault

    def read(self, timeout_s: float, quiet_s: float | None = None) -> None:
        """Until the broker closes, ``timeout_s`` passes, or it is quiet for ``quiet_s``."""
        deadline = time.monotonic() + timeout_s
        while not self.closed and (remaining := deadline - time.monotonic()) > 0:
            wait = remaining if quiet_s is None else min(remaining, quiet_s)
            if not select.select([self.sock], [], [], wait)[0]:
                if quiet_s is not None and self.received:
                    return
                continue
            try:
                chunk = self.sock.recv(65536)
            except OSError:
                chunk = b""
            self.closed = not chunk
            self.received += chunk

    def play(self, frames: list[bytes], sizes: list[int]) -> bytes:
        start = 0
        for end in (*PHASES, len(frames)):
            if start >= len(frames):
                break
            if start:
                self.read(PHASE_WAIT_S, QUIET_S)  # the broker's answer (credit, outcomes)
            self.send(b"".join(frames[start:end]), sizes)
            start = end
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_WR)
        self.read(CLOSE_WAIT_S)
        self.sock.close()
        assert self.closed, f"the broker did not close the connection for {frames!r}"
        return bytes(self.received)


def play(port: int, frames: list[bytes], sizes: list[int]) -> bytes:
    return Player(port).play(frames, sizes)


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[Bystanders]:
    broker = start_broker(tmp_path, "amqp://127.0.0.1:0?wireFormat.maxAmqpFrameSize=4096")
    bystanders = Bystanders(broker).start()
    try:
        yield bystanders
    finally:
        bystanders.stop()
        broker.stop()


def test_the_valid_stream_works(watched: Bystanders) -> None:
    """The fuzz seed itself is a session the broker carries out to the end."""
    reply = play(watched.broker.amqp_port, valid_stream(), [])
    assert reply.startswith(SASL_HEADER), reply[:16]
    for code in (0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x33, 0x18):  # ... transfer, declared, close
        assert code in _descriptors(reply), f"no 0x{code:x} in {reply!r}"
    watched.check()


def _descriptors(reply: bytes) -> set[int]:
    """The performative (and delivery state) codes that appear in the broker's frames."""
    return {reply[i + 2] for i in range(len(reply) - 2) if reply[i : i + 2] == b"\x00\x53"}


def test_mutated_amqp_harms_no_one(watched: Bystanders, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    port = watched.broker.amqp_port
    played = 0

    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        print_blob=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=cases())
    def fuzz(case: tuple[list[bytes], list[int]]) -> None:
        nonlocal played
        play(port, *case)
        played += 1
        if played % ROUND_TRIP_EVERY == 0:
            watched.round_trip()

    fuzz()
    watched.check()
    broken = [r for r in caplog.records if r.name.startswith(("ferrymq", "asyncio"))]
    assert not broken, "broker logged:\n" + "\n".join(r.getMessage() for r in broken)


# -- the pure decoders, in process -----------------------------------------------------------------


def joined(seeds: list[bytes]) -> st.SearchStrategy[bytes]:
    """One seed, mutated."""
    return st.sampled_from(seeds).flatmap(lambda seed: mutated([seed])).map(b"".join)


DECODER_SETTINGS = settings(
    max_examples=DECODER_EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


@DECODER_SETTINGS
@given(data=st.one_of(joined(MESSAGES), st.binary(max_size=64)))
def test_the_message_decoders_raise_only_their_errors(data: bytes) -> None:
    with contextlib.suppress(body.MalformedMessageError):
        body.split(data)
    error: BrokerError | None = None
    try:
        message = message_from_amqp(
            data, message_id=MessageId("ID:fuzz-1:1"), destination=Destination.queue("q"), now_ms=0
        )
    except BrokerError as exc:
        error = exc
    if error is None:
        assert message.destination == Destination.queue("q")
    else:
        assert not error.fatal, error.message  # one delivery is rejected, the link goes on
        assert error.message


SASL_FRAMES = [
    SASL_HEADER + frame(encode(described(SASL_INIT, [symbol("PLAIN"), b"\x00u\x00p"])), kind=1),
    SASL_HEADER + frame(encode(described(SASL_INIT, [symbol("ANONYMOUS")])), kind=1),
    AMQP_HEADER + open_frame(),
]


@DECODER_SETTINGS
@given(
    data=st.one_of(joined(SASL_FRAMES), st.binary(max_size=64)),
    sizes=st.lists(st.integers(1, 40), max_size=4),
)
def test_the_sasl_decoder_raises_only_sasl_errors(data: bytes, sizes: list[int]) -> None:
    server = SaslServer(("PLAIN", "ANONYMOUS"))
    events: list[object] = []
    errors: list[str] = []
    try:
        for piece in pieces(data, sizes):
            server.feed(piece)
            while (event := server.next_event()) is not None:
                events.append(event)
    except SaslError as exc:
        errors.append(str(exc))
    assert len(events) <= 2
    for said in events:
        assert isinstance(said, Header | SaslInit)
        if isinstance(said, SaslInit):
            try:
                plain_credentials(said.response)
            except SaslError as exc:
                errors.append(str(exc))
    assert all(errors), "a SaslError without a message"
