"""The AMQP 1.0 values of a message's head: decoded for what the mapping reads, encoded for
what the broker writes, and no more.

AMQP 1.0 part 1 "Types", 1.6 "Encodings": a constructor byte, then the value.  The mapping reads
a message's header, annotations, properties and application properties, and proton's Python
``Message`` is a poor fit for that: it gives timestamps as float seconds, an absent
content-type as the symbol ``'None'``, binaries as views into its own buffer, and it always
decodes the body, which the broker keeps as bytes.  This reads only the sections asked for,
into plain Python values: ``ulong`` (proton's ``int`` subclass) where the AMQP type matters for
an id, ``int`` for the other integers and timestamps (milliseconds), ``str`` for strings and
symbols, ``bytes`` for binaries, ``uuid.UUID``, ``list``, ``dict``.  Values the mapping never
keeps (arrays, decimals, described values) decode as ``Unsupported``, which it refuses by name.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass

from proton import ulong

from ferrymq.adapters.amqp.body import MalformedMessageError
from ferrymq.amqp.encoding import encode, encode_section

__all__ = ["Unsupported", "decode", "encode", "encode_section"]

Buffer = bytes | memoryview
"""What the decoder reads: ``bytes`` is the faster (its slices are cheaper to make and decode)."""

_MAX_DEPTH = 16
"""Nested lists and maps: far beyond what any message section holds, short of Python's stack."""


@dataclass(frozen=True, slots=True)
class Unsupported:
    """A value of a type the core cannot hold as a property (the name says which)."""

    kind: str


_FIXED: dict[int, tuple[int, object]] = {
    0x40: (0, None),
    0x41: (0, True),
    0x42: (0, False),
    0x43: (0, 0),
    0x44: (0, ulong(0)),
    0x45: (0, []),
}
_STRUCTS: dict[int, tuple[struct.Struct, bool]] = {
    # constructor: (layout, is ulong)
    0x50: (struct.Struct(">B"), False),
    0x51: (struct.Struct(">b"), False),
    0x52: (struct.Struct(">B"), False),
    0x53: (struct.Struct(">B"), True),
    0x54: (struct.Struct(">b"), False),
    0x55: (struct.Struct(">b"), False),
    0x56: (struct.Struct(">?"), False),
    0x60: (struct.Struct(">H"), False),
    0x61: (struct.Struct(">h"), False),
    0x70: (struct.Struct(">I"), False),
    0x71: (struct.Struct(">i"), False),
    0x72: (struct.Struct(">f"), False),
    0x80: (struct.Struct(">Q"), True),
    0x81: (struct.Struct(">q"), False),
    0x82: (struct.Struct(">d"), False),
    0x83: (struct.Struct(">q"), False),
}
_UNSUPPORTED = {0x74: 4, 0x84: 8, 0x94: 16}  # decimal32/64/128
_COMPOUNDS = frozenset({0xC0, 0xC1, 0xD0, 0xD1})
_SIZE_COUNT = struct.Struct(">II")


def decode(view: Buffer, position: int, depth: int = 0) -> tuple[object, int]:
    """The value encoded at ``position`` and where it ends."""
    if depth > _MAX_DEPTH:
        raise MalformedMessageError("values nested too deep")
    try:
        return _decode(view, position, depth)
    except (IndexError, ValueError, OverflowError, struct.error):
        raise MalformedMessageError("it ends inside a value") from None


def _decode(view: Buffer, position: int, depth: int) -> tuple[object, int]:
    code = view[position]
    position += 1
    if code == 0xA1 or code == 0xA3:  # str8, sym8: most of what a message head holds
        end = position + 1 + view[position]
        if end > len(view):
            raise MalformedMessageError("it ends inside a value")
        try:
            return str(view[position + 1 : end], "utf-8"), end
        except UnicodeDecodeError:
            raise MalformedMessageError("a string is not valid UTF-8") from None
    if code in _COMPOUNDS:  # every section's value
        return _compound(view, position, code, depth)
    fixed = _FIXED.get(code)
    if fixed is not None:
        value = fixed[1]
        return ([] if code == 0x45 else value), position
    layout = _STRUCTS.get(code)
    if layout is not None:
        (number,) = layout[0].unpack_from(view, position)
        return (ulong(number) if layout[1] else number), position + layout[0].size
    if code in (0xA0, 0xA1, 0xA3, 0xB0, 0xB1, 0xB3):
        return _variable(view, position, code)
    return _rare(view, position, code, depth)


def _variable(view: Buffer, position: int, code: int) -> tuple[object, int]:
    if code < 0xB0:
        size, start = view[position], position + 1
    else:
        size, start = int.from_bytes(view[position : position + 4], "big"), position + 4
    end = start + size
    if end > len(view):
        raise MalformedMessageError("it ends inside a value")
    raw = bytes(view[start:end])
    if code in (0xA0, 0xB0):
        return raw, end
    try:
        return raw.decode(), end
    except UnicodeDecodeError:
        raise MalformedMessageError("a string is not valid UTF-8") from None


def _compound(view: Buffer, position: int, code: int, depth: int) -> tuple[object, int]:
    """A list or a map (part 1, 1.6.22-1.6.25): size, count, then the items."""
    if code in (0xC0, 0xC1):
        size, count, position = view[position], view[position + 1], position + 2
        end = position + size - 1
    else:
        size, count = _SIZE_COUNT.unpack_from(view, position)
        position += 8
        end = position + size - 4
    if end > len(view) or count > size:
        raise MalformedMessageError("a list or map is longer than the message")
    if depth >= _MAX_DEPTH:
        raise MalformedMessageError("values nested too deep")
    items, position = _items(view, position, count, depth + 1)
    if position != end:
        raise MalformedMessageError("a list or map does not match its size")
    if code in (0xC0, 0xD0):
        return items, end
    if count % 2:
        raise MalformedMessageError("a map has an odd number of items")
    try:
        return dict(zip(items[::2], items[1::2], strict=True)), end
    except TypeError:
        raise MalformedMessageError("a map key is not a simple value") from None


def _items(view: Buffer, position: int, count: int, depth: int) -> tuple[list[object], int]:
    """A compound's items. Strings, symbols and nulls, most of what a message head holds, are
    read here rather than through a call each: the same values and checks as ``_decode``."""
    items: list[object] = []
    append = items.append
    limit = len(view)
    for _ in range(count):
        code = view[position]
        if code == 0xA1 or code == 0xA3:
            start = position + 2
            position = start + view[position + 1]
            if position > limit:
                raise MalformedMessageError("it ends inside a value")
            try:
                append(str(view[start:position], "utf-8"))
            except UnicodeDecodeError:
                raise MalformedMessageError("a string is not valid UTF-8") from None
        elif code == 0x40:
            append(None)
            position += 1
        else:
            item, position = _decode(view, position, depth)
            append(item)
    return items, position


def _rare(view: Buffer, position: int, code: int, depth: int) -> tuple[object, int]:
    if code == 0x98:
        return uuid.UUID(bytes=bytes(view[position : position + 16])), position + 16
    if code == 0x73:
        return chr(int.from_bytes(view[position : position + 4], "big")), position + 4
    if code in _UNSUPPORTED:
        return Unsupported("decimal"), position + _UNSUPPORTED[code]
    if code == 0x00:
        _, position = decode(view, position, depth + 1)
        _, position = decode(view, position, depth + 1)
        return Unsupported("described value"), position
    if code in (0xE0, 0xF0):
        width = 1 if code == 0xE0 else 4
        end = position + width + int.from_bytes(view[position : position + width], "big")
        if end > len(view):
            raise MalformedMessageError("an array is longer than the message")
        return Unsupported("array"), end
    raise MalformedMessageError(f"unknown type constructor 0x{code:02x}")
