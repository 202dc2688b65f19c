"""AMQP 1.0 frames written and read by hand over a raw socket, for the bad-input tests.

proton's client engine refuses to put a malformed frame, an unknown performative or a transfer
beyond credit on the wire, so these tests build each frame themselves: the 8-byte frame header
(size, data offset, type, channel) and a performative encoded with ``proton.Data``. What the
broker answers is decoded the same way, into ``Frame`` (descriptor, fields, payload), and an
``error`` list becomes a ``Refusal`` (condition, description).
"""

from __future__ import annotations

import select
import socket
import struct
import time
from dataclasses import dataclass, field
from typing import Any

import proton
from proton import symbol, ubyte, uint, ulong

SASL_HEADER = b"AMQP\x03\x01\x00\x00"
AMQP_HEADER = b"AMQP\x00\x01\x00\x00"
FRAME_HEADER = struct.Struct(">IBBH")

OPEN, BEGIN, ATTACH, FLOW, TRANSFER, DISPOSITION, DETACH, END, CLOSE = range(0x10, 0x19)
ERROR = 0x1D
SASL_MECHANISMS, SASL_INIT, SASL_OUTCOME = 0x40, 0x41, 0x44
SOURCE, TARGET, COORDINATOR = 0x28, 0x29, 0x30
DECLARE, DISCHARGE, DECLARED, TRANSACTIONAL_STATE = 0x31, 0x32, 0x33, 0x34
ACCEPTED, REJECTED = 0x24, 0x25
SELECTOR_FILTER = 0x0000468C00000004

WAIT_S = 10.0


def described(code: int, value: Any) -> proton.Described:
    return proton.Described(ulong(code), value)


def encode(value: object) -> bytes:
    data = proton.Data()
    data.put_object(value)
    return bytes(data.encode())


def frame(body: bytes, *, channel: int = 0, kind: int = 0, doff: int = 2) -> bytes:
    """A frame around ``body`` (an encoded performative, and a transfer's payload after it)."""
    padding = b"\x00" * (doff * 4 - FRAME_HEADER.size) if doff > 2 else b""
    size = doff * 4 + len(body)
    return FRAME_HEADER.pack(size, doff, kind, channel) + padding + body


def performative(
    code: int, fields: list[object], *, channel: int = 0, payload: bytes = b""
) -> bytes:
    return frame(encode(described(code, fields)) + payload, channel=channel)


def open_frame(container: str = "raw-client") -> bytes:
    return performative(OPEN, [container, None, uint(65536)])


def begin_frame(channel: int = 0) -> bytes:
    return performative(BEGIN, [None, uint(0), uint(2048), uint(2048)], channel=channel)


def attach_frame(
    name: str,
    handle: int,
    *,
    sender: bool,
    address: str | None,
    filters: dict[Any, Any] | None = None,
    coordinator: bool = False,
) -> bytes:
    """``sender``: the client sends (its role is sender, the broker's target names ``address``)."""
    source = described(SOURCE, [address if not sender else None, *([None] * 6), filters])
    if coordinator:
        target: object = described(COORDINATOR, [[symbol("amqp:local-transactions")]])
    else:
        target = described(TARGET, [address if sender else None])
    fields: list[object] = [name, uint(handle), not sender, ubyte(2), ubyte(0), source, target]
    if sender:
        fields += [None, None, uint(0)]  # unsettled, incomplete-unsettled, initial-delivery-count
    return performative(ATTACH, fields)


def transfer_frame(
    handle: int,
    delivery_id: int,
    payload: bytes,
    *,
    settled: bool = False,
    state: object = None,
    more: bool = False,
) -> bytes:
    fields: list[object] = [
        uint(handle),
        uint(delivery_id),
        f"t{delivery_id}".encode(),
        uint(0),
        settled,
        more,
        None,
        state,
    ]
    return performative(TRANSFER, fields, payload=payload)


def flow_frame(handle: int, credit: int, *, next_in: int = 0) -> bytes:
    return performative(
        FLOW,
        [uint(next_in), uint(2048), uint(0), uint(2048), uint(handle), uint(0), uint(credit)],
    )


def message_bytes(body: object, **properties: object) -> bytes:
    message = proton.Message(body=body, **properties)  # type: ignore[arg-type]
    return bytes(message.encode())


@dataclass
class Frame:
    channel: int
    descriptor: int | None
    """The performative's code; None for an empty (heart-beat) frame."""
    fields: list[object] = field(default_factory=list)
    payload: bytes = b""

    def field(self, index: int) -> object:
        return self.fields[index] if index < len(self.fields) else None

    @property
    def refusal(self) -> Refusal | None:
        """The error of a detach, end or close (also of a rejected disposition's state)."""
        index = {DETACH: 2, END: 0, CLOSE: 0}.get(self.descriptor or 0)
        error = self.field(index) if index is not None else None
        if self.descriptor == DISPOSITION:
            state = self.field(4)
            fields = state.value if isinstance(state, proton.Described) else None
            if isinstance(fields, list) and fields:
                error = fields[0]
        return Refusal.of(error)


@dataclass(frozen=True)
class Refusal:
    condition: str
    description: str

    @staticmethod
    def of(error: object) -> Refusal | None:
        values = error.value if isinstance(error, proton.Described) else None
        if not isinstance(values, list) or not values:
            return None
        description = values[1] if len(values) > 1 and values[1] is not None else ""
        return Refusal(str(values[0]), str(description))


def decode_frame(channel: int, body: bytes) -> Frame:
    if not body:
        return Frame(channel, None)
    data = proton.Data()
    used = data.decode(body)
    data.rewind()
    data.next()
    try:
        value = data.get_object()
    except UnicodeDecodeError:  # a symbol the client sent, echoed: proton reads only ASCII
        assert body[:2] == b"\x00\x53", f"not a performative: {body!r}"
        return Frame(channel, body[2])
    assert isinstance(value, proton.Described), f"not a performative: {value!r}"
    fields = list(value.value) if isinstance(value.value, list) else []
    return Frame(channel, int(value.descriptor), fields, body[used:])  # type: ignore[arg-type]


class RawAmqp:
    """A socket that speaks AMQP frames: send bytes, read whole frames with a deadline."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)
        self.buffer = bytearray()
        self.header: bytes | None = None
        self.eof = False

    def __enter__(self) -> RawAmqp:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()

    def send(self, data: bytes) -> bool:
        """False when the broker closed the connection already."""
        try:
            self.sock.sendall(data)
        except OSError:
            return False
        return True

    def _fill(self, deadline: float) -> bool:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        ready, _, _ = select.select([self.sock], [], [], remaining)
        if not ready:
            return False
        try:
            chunk = self.sock.recv(65536)
        except OSError:
            chunk = b""
        if not chunk:
            self.eof = True
            return False
        self.buffer += chunk
        return True

    def read_header(self, timeout_s: float = WAIT_S) -> bytes:
        deadline = time.monotonic() + timeout_s
        while len(self.buffer) < 8 and self._fill(deadline):
            pass
        header, self.buffer = bytes(self.buffer[:8]), self.buffer[8:]
        return header

    def read_frame(self, timeout_s: float = WAIT_S) -> Frame | None:
        """The next whole frame; None at EOF or when none came in ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            if len(self.buffer) >= FRAME_HEADER.size:
                size, doff, _kind, channel = FRAME_HEADER.unpack_from(self.buffer)
                if len(self.buffer) >= size:
                    body = bytes(self.buffer[doff * 4 : size])
                    del self.buffer[:size]
                    return decode_frame(channel, body)
            if not self._fill(deadline):
                return None

    def until(self, descriptor: int, timeout_s: float = WAIT_S) -> Frame:
        """Frames up to the first ``descriptor``; fails at EOF or the deadline."""
        deadline = time.monotonic() + timeout_s
        seen: list[object] = []
        while (remaining := deadline - time.monotonic()) > 0:
            got = self.read_frame(remaining)
            if got is None:
                break
            if got.descriptor == descriptor:
                return got
            seen.append(got.descriptor)
        raise AssertionError(f"no frame 0x{descriptor:x} (saw {seen}, eof={self.eof})")

    def read_until_eof(self, timeout_s: float = WAIT_S) -> list[Frame]:
        frames: list[Frame] = []
        deadline = time.monotonic() + timeout_s
        while (remaining := deadline - time.monotonic()) > 0:
            got = self.read_frame(remaining)
            if got is None:
                if self.eof:
                    return frames
                break
            frames.append(got)
        raise AssertionError(f"the broker did not close the connection (got {frames})")

    def sasl(self, mechanism: str, response: bytes = b"") -> int:
        """The SASL exchange as a client; returns the sasl-outcome code (0: ok)."""
        init = encode(described(SASL_INIT, [symbol(mechanism), response]))
        self.send(SASL_HEADER + frame(init, kind=1))
        assert self.read_header() == SASL_HEADER
        mechanisms = self.until(SASL_MECHANISMS)
        assert mechanisms.fields, mechanisms
        code = self.until(SASL_OUTCOME).field(0)
        assert isinstance(code, int), code
        return int(code)

    def handshake(self, container: str = "raw-client") -> Frame:
        """AMQP header without SASL (the broker allows it when it authenticates nobody),
        open and a session on channel 0; returns the broker's open."""
        self.send(AMQP_HEADER + open_frame(container) + begin_frame())
        header = self.read_header()
        assert header == AMQP_HEADER, header
        opened = self.until(OPEN)
        self.until(BEGIN)
        return opened
