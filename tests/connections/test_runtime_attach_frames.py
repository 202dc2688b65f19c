"""Link capabilities on the bytes (``ferrymq.amqp.attach_frames``): proton-c 0.40 writes the
attach frame's offered and desired capabilities as null and never reads them, so they are
written into and read out of the frames; reads must not depend on how the socket splits them."""

from __future__ import annotations

import itertools
import struct

import proton
from hypothesis import given
from hypothesis import strategies as st

from ferrymq.amqp.attach_frames import AttachCapabilities

FRAME = struct.Struct(">IBBH")


def frame(body: bytes, *, doff: int = 2, kind: int = 0) -> bytes:
    padding = b"\x00" * (doff * 4 - FRAME.size)
    return FRAME.pack(doff * 4 + len(body), doff, kind, 0) + padding + body


def performative(code: int, fields: list[object]) -> bytes:
    data = proton.Data()
    data.put_object(proton.Described(proton.ulong(code), fields))  # type: ignore[arg-type]
    return bytes(data.encode())


def symbols(*names: str) -> proton.Array:
    return proton.Array(proton.UNDESCRIBED, proton.Data.SYMBOL, *map(proton.symbol, names))  # type: ignore[arg-type]


ATTACH = [
    "link-1",
    proton.uint(0),
    False,
    None,
    None,
    None,
    None,
    None,
    False,
    None,
    None,
    symbols("amq.mirror"),
    symbols("a", "b"),
]
STREAM = (
    b"AMQP\x00\x01\x00\x00"
    + frame(b"")  # a heart-beat
    + frame(performative(0x13, [proton.uint(0), proton.uint(1), proton.uint(2)]))  # flow
    + frame(performative(0x12, ATTACH), doff=3)
    + frame(performative(0x14, [proton.uint(0)]) + b"x" * 5000)  # a transfer and its payload
)


@given(st.lists(st.integers(min_value=1, max_value=len(STREAM)), max_size=12))
def test_attach_capabilities_are_read_however_the_bytes_are_split(cuts: list[int]) -> None:
    scanner = AttachCapabilities()
    points = sorted({0, *cuts, len(STREAM)})
    for start, end in itertools.pairwise(points):
        scanner.scan(STREAM[start:end])
    (name,) = scanner.incoming
    assert name == "link-1"
    assert scanner.incoming[name].offered == ("amq.mirror",)
    assert scanner.incoming[name].desired == ("a", "b")


def test_outgoing_attach_gets_the_announced_capabilities() -> None:
    plain = [*ATTACH[:11], None, None, None]
    writer = AttachCapabilities()
    writer.announce("link-1", (), ("amq.mirror",))
    output = b"AMQP\x00\x01\x00\x00" + frame(performative(0x12, plain)) + frame(b"")
    rewritten = writer.rewrite(output)
    reader = AttachCapabilities()
    reader.scan(rewritten)
    assert reader.incoming["link-1"].desired == ("amq.mirror",)
    assert rewritten.endswith(frame(b""))
    assert writer.rewrite(output) == output  # announced once: the next attach is untouched
