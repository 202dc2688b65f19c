"""AMQP 1.0 values encoded, in the smallest encoding of their type (AMQP 1.0 part 1 "Types",
1.6 "Encodings"): what the broker writes for a message's sections and what the client writes
for a message it sends.  proton's ``Data`` (and ``Message.encode``) would do it too, at about
three times the cost through a C call per value.

Pure: no I/O and nothing of FerryMQ's, so the client (``ferrymq.amqp``) and the broker's
adapter share it.
"""

from __future__ import annotations

import struct
import uuid

from proton import byte, symbol, timestamp, ubyte, uint, ulong

__all__ = ["encode", "encode_section"]


_LONG = struct.Struct(">q")
_ULONG = struct.Struct(">Q")
_UINT = struct.Struct(">I")


def encode(value: object) -> bytes:
    """``value`` in the smallest AMQP encoding of its type: ``None``, ``bool``, proton's
    ``symbol``, ``ulong``, ``uint``, ``byte``, ``ubyte`` and ``timestamp``, ``str``, ``bytes``,
    ``int`` (a long), ``uuid.UUID``, ``list`` and ``dict``."""
    if type(value) is str:  # exactly str (a symbol is a subclass): most of what a message holds
        raw = value.encode()
        size = len(raw)
        return bytes((0xA1, size)) + raw if size < 256 else b"\xb1" + _UINT.pack(size) + raw
    if value is None:
        return b"\x40"
    if isinstance(value, list):
        return _compound_bytes(b"".join(map(encode, value)), len(value), 0xC0)
    if isinstance(value, dict):
        body = b"".join([encode(key) + encode(item) for key, item in value.items()])
        return _compound_bytes(body, 2 * len(value), 0xC1)
    return _scalar(value)


def _scalar(value: object) -> bytes:
    if value is None:
        return b"\x40"
    if isinstance(value, str):
        return _sized(value.encode(), 0xA3 if isinstance(value, symbol) else 0xA1)
    if isinstance(value, bytes):
        return _sized(value, 0xA0)
    if isinstance(value, bool):
        return b"\x41" if value else b"\x42"
    if isinstance(value, int):
        return _integer(value)
    if isinstance(value, uuid.UUID):
        return b"\x98" + value.bytes
    raise TypeError(f"no AMQP encoding for {type(value).__name__}")


def encode_section(descriptor: int, value: object) -> bytes:
    return bytes((0x00, 0x53, descriptor)) + encode(value)


def _integer(value: int) -> bytes:
    if isinstance(value, ulong):
        return bytes((0x53, value)) if value < 256 else b"\x80" + _ULONG.pack(value)
    if isinstance(value, uint):
        return bytes((0x52, value)) if value < 256 else b"\x70" + _UINT.pack(value)
    if isinstance(value, byte | ubyte):
        return bytes((0x51 if isinstance(value, byte) else 0x50, value & 0xFF))
    if isinstance(value, timestamp):
        return b"\x83" + _LONG.pack(value)
    if -128 <= value <= 127:
        return b"\x55" + value.to_bytes(1, "big", signed=True)
    return b"\x81" + _LONG.pack(value)


def _sized(raw: bytes, small: int) -> bytes:
    size = len(raw)
    if size < 256:
        return bytes((small, size)) + raw
    return bytes((small + 0x10,)) + _UINT.pack(size) + raw


def _compound_bytes(body: bytes, count: int, small: int) -> bytes:
    if not count and small == 0xC0:
        return b"\x45"
    if len(body) + 1 < 256 and count < 256:
        return bytes((small, len(body) + 1, count)) + body
    return bytes((small + 0x10,)) + _UINT.pack(len(body) + 4) + _UINT.pack(count) + body
