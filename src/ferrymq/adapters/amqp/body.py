"""An encoded AMQP message cut into its sections, and the body kept as the sender wrote it.

The bytes a link receives are the bare message's sections in the order of the AMQP 1.0
specification, part 3 "Messaging", 3.2: header, delivery-annotations, message-annotations,
properties, application-properties, the body (one amqp-value, or data sections, or amqp-sequence
sections), footer.  ``split`` finds where each starts by skipping encoded values (part 1
"Types", 1.6: the constructor byte says how long a value is), without decoding the body: the
body is kept as bytes and, where it is not a plain payload, handed back out byte for byte.

What the body was is recorded in one message property, ``JMS_AMQP_ORIGINAL_ENCODING``, with
ActiveMQ's codes (its AmqpMessageSupport), so the sender's section comes back exactly:

* payload codes: the body holds the payload, what a STOMP consumer wants: 1 no body section,
  2 one data section, 4 amqp-value null, 5 amqp-value string (UTF-8), 6 amqp-value binary;
* encoded codes: the body holds the encoded body section(s) untouched: 0 anything else (another
  amqp-value, several data sections), 3 amqp-sequence, 7 amqp-value map, 8 amqp-value list.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ferrymq.core.errors import BrokerError

ORIGINAL_ENCODING = "JMS_AMQP_ORIGINAL_ENCODING"

UNKNOWN = 0
NO_BODY = 1
DATA = 2
SEQUENCE = 3
VALUE_NULL = 4
VALUE_STRING = 5
VALUE_BINARY = 6
VALUE_MAP = 7
VALUE_LIST = 8
ENCODED_CODES = frozenset({UNKNOWN, SEQUENCE, VALUE_MAP, VALUE_LIST})

# Section descriptors (part 3, 3.2).
HEADER = 0x70
DELIVERY_ANNOTATIONS = 0x71
MESSAGE_ANNOTATIONS = 0x72
PROPERTIES = 0x73
APPLICATION_PROPERTIES = 0x74
DATA_SECTION = 0x75
SEQUENCE_SECTION = 0x76
VALUE_SECTION = 0x77
FOOTER = 0x78
_BODY_SECTIONS = frozenset({DATA_SECTION, SEQUENCE_SECTION, VALUE_SECTION})
_SYMBOLIC = {
    b"amqp:header:list": HEADER,
    b"amqp:delivery-annotations:map": DELIVERY_ANNOTATIONS,
    b"amqp:message-annotations:map": MESSAGE_ANNOTATIONS,
    b"amqp:properties:list": PROPERTIES,
    b"amqp:application-properties:map": APPLICATION_PROPERTIES,
    b"amqp:data:binary": DATA_SECTION,
    b"amqp:amqp-sequence:list": SEQUENCE_SECTION,
    b"amqp:amqp-value:*": VALUE_SECTION,
    b"amqp:footer:map": FOOTER,
}

# Constructor byte -> bytes of data after it (part 1, 1.6; the high nibble is the width).
_FIXED_WIDTH = {
    **dict.fromkeys((0x40, 0x41, 0x42, 0x43, 0x44, 0x45), 0),
    **dict.fromkeys((0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56), 1),
    **dict.fromkeys((0x60, 0x61), 2),
    **dict.fromkeys((0x70, 0x71, 0x72, 0x73, 0x74), 4),
    **dict.fromkeys((0x80, 0x81, 0x82, 0x83, 0x84), 8),
    **dict.fromkeys((0x94, 0x98), 16),
}
_SIZE_1 = frozenset({0xA0, 0xA1, 0xA3, 0xC0, 0xC1, 0xE0})
_SIZE_4 = frozenset({0xB0, 0xB1, 0xB3, 0xD0, 0xD1, 0xF0})
_MAX_DESCRIPTOR_DEPTH = 8


class MalformedMessageError(BrokerError):
    """Bytes that are not an AMQP message: the delivery is refused, the link stays."""

    def __init__(self, what: str) -> None:
        super().__init__(f"malformed AMQP message: {what}", fatal=False)


@dataclass(frozen=True, slots=True)
class Sections:
    """Where the parts of one encoded message are."""

    head: dict[int, int]
    """Section descriptor -> where its value starts, for the sections before the body."""
    body: bytes
    """The body section(s) as received; empty when the message has none."""
    body_kind: int
    """The descriptor of the first body section (0 when there is none)."""
    body_count: int
    value_at: int
    """Where the first body section's value starts in ``body`` (after its descriptor)."""
    footer_at: int
    """Where the footer's value starts, -1 when there is none."""
    values: dict[int, object] = field(default_factory=dict)
    """Section descriptor -> its decoded value, for the sections ``split`` was asked to read."""


Decoder = Callable[[bytes, int], tuple[object, int]]
_READ = frozenset({HEADER, MESSAGE_ANNOTATIONS, PROPERTIES, APPLICATION_PROPERTIES})
"""The sections a ``decode`` given to ``split`` reads (delivery-annotations are only skipped)."""


def split(encoded: bytes, decode: Decoder | None = None) -> Sections:
    """Find the sections of a bare message, checking their order; decodes none of them, except
    that with ``decode`` the header, message-annotations, properties and
    application-properties are read in the same pass (into ``values``), not skipped then read."""
    view = encoded
    size = len(encoded)
    head: dict[int, int] = {}
    values: dict[int, object] = {}
    body_start = body_end = size
    body_kind = count = value_offset = 0
    footer_at = -1
    position = 0
    try:
        while position < size:
            if view[position] == 0x00 and view[position + 1] == 0x53:  # the common descriptor
                code, value_at = view[position + 2], position + 3
            else:
                code, value_at = _section_descriptor(view, position)
            if decode is not None and code in _READ:
                values[code], end = decode(encoded, value_at)
            else:
                end = _skip(view, value_at, 0)
            if code in _BODY_SECTIONS:
                if count and (code != body_kind or code == VALUE_SECTION or body_end != position):
                    raise MalformedMessageError("body sections are mixed or not consecutive")
                if not count:
                    body_start, body_kind, value_offset = position, code, value_at - position
                body_end, count = end, count + 1
            elif code == FOOTER and end == size:
                footer_at = value_at
            elif (
                count
                or not HEADER <= code <= APPLICATION_PROPERTIES
                or code <= max(head, default=0)
            ):
                raise MalformedMessageError(f"section 0x{code:x} is repeated or out of place")
            else:
                head[code] = value_at
            position = end
    except IndexError:
        raise MalformedMessageError("it ends inside a section") from None
    return Sections(
        head, encoded[body_start:body_end], body_kind, count, value_offset, footer_at, values
    )


def _section_descriptor(view: bytes, position: int) -> tuple[int, int]:
    """The section's descriptor code and where its value starts."""
    if view[position] != 0x00:
        raise MalformedMessageError(f"expected a section at byte {position}")
    constructor = view[position + 1]
    if constructor == 0x53:
        return view[position + 2], position + 3
    if constructor == 0x80:
        if position + 10 > len(view):
            raise IndexError(position)
        return int.from_bytes(view[position + 2 : position + 10], "big"), position + 10
    if constructor in (0xA3, 0xB3):
        end = _skip(view, position + 1, 0)
        width = 1 if constructor == 0xA3 else 4
        code = _SYMBOLIC.get(bytes(view[position + 2 + width : end]))
        if code is not None:
            return code, end
    raise MalformedMessageError(f"unknown section descriptor at byte {position}")


def _skip(view: bytes, position: int, depth: int) -> int:
    """Where the encoded value at ``position`` ends."""
    constructor = view[position]
    position += 1
    if constructor == 0x00:
        if depth >= _MAX_DESCRIPTOR_DEPTH:
            raise MalformedMessageError("descriptors nested too deep")
        return _skip(view, _skip(view, position, depth + 1), depth + 1)
    width = _FIXED_WIDTH.get(constructor)
    if width is not None:
        end = position + width
    elif constructor in _SIZE_1:
        end = position + 1 + view[position]
    elif constructor in _SIZE_4:
        end = position + 4 + int.from_bytes(view[position : position + 4], "big")
    else:
        raise MalformedMessageError(f"unknown type constructor 0x{constructor:02x}")
    if end > len(view):
        raise MalformedMessageError("it ends inside a value")
    return end


_VALUE_CODES = {
    0x40: VALUE_NULL,
    0xA0: VALUE_BINARY,
    0xB0: VALUE_BINARY,
    0xA1: VALUE_STRING,
    0xB1: VALUE_STRING,
    0xC1: VALUE_MAP,
    0xD1: VALUE_MAP,
    0x45: VALUE_LIST,
    0xC0: VALUE_LIST,
    0xD0: VALUE_LIST,
}


def payload(sections: Sections) -> tuple[bytes, int]:
    """The core's body and its ``JMS_AMQP_ORIGINAL_ENCODING`` code."""
    raw = sections.body
    if not sections.body_count:
        return b"", NO_BODY
    at = sections.value_at
    constructor = raw[at]
    if sections.body_kind == SEQUENCE_SECTION:
        return raw, SEQUENCE
    if sections.body_kind == DATA_SECTION:
        if constructor not in (0xA0, 0xB0):
            raise MalformedMessageError("a data section does not hold binary")
        return (_binary(raw, at), DATA) if sections.body_count == 1 else (raw, UNKNOWN)
    code = _VALUE_CODES.get(constructor, UNKNOWN)
    if code == VALUE_NULL:
        return b"", code
    if code in (VALUE_BINARY, VALUE_STRING):
        value = _binary(raw, at)
        if code == VALUE_STRING and not _is_utf8(value):
            raise MalformedMessageError("the amqp-value string is not valid UTF-8")
        return value, code
    return raw, code


def _is_utf8(value: bytes) -> bool:
    try:
        value.decode()
    except UnicodeDecodeError:
        return False
    return True


def _binary(section: bytes, at: int) -> bytes:
    """The bytes of a section whose value, at ``at``, is a binary or a string."""
    if section[at] in (0xA0, 0xA1):
        return section[at + 2 : at + 2 + section[at + 1]]
    return section[at + 5 : at + 5 + int.from_bytes(section[at + 1 : at + 5], "big")]


def data_section(body: bytes) -> bytes:
    return _described(DATA_SECTION, 0xA0, body)


def string_section(text: bytes) -> bytes:
    """An amqp-value string; ``text`` is already UTF-8."""
    return _described(VALUE_SECTION, 0xA1, text)


def _described(descriptor: int, small: int, value: bytes) -> bytes:
    size = len(value)
    if size < 256:
        return bytes((0x00, 0x53, descriptor, small, size)) + value
    return bytes((0x00, 0x53, descriptor, small + 0x10)) + size.to_bytes(4, "big") + value


def is_text(body: bytes, content_type: str | None) -> bool:
    """Whether a message from STOMP goes out as text (amqp-value string) rather than bytes."""
    if content_type is not None and not content_type.lower().startswith("text/"):
        return False
    return _is_utf8(body)


_PAYLOAD_SECTIONS = {
    DATA: (DATA_SECTION, 0xA0),
    VALUE_STRING: (VALUE_SECTION, 0xA1),
    VALUE_BINARY: (VALUE_SECTION, 0xA0),
}


def body_sections(body: bytes, code: int) -> bytes | None:
    """The body section(s) to send for a message that came over AMQP; None if ``code`` is not
    one of ours or the stored sections do not parse (a STOMP producer that set the property)."""
    section = _PAYLOAD_SECTIONS.get(code)
    if section is not None:
        return _described(section[0], section[1], body)
    if code == VALUE_NULL:
        return b"\x00\x53\x77\x40"
    if code == NO_BODY:
        return b""
    if code not in ENCODED_CODES or not body:
        return None
    try:
        sections = split(body)
    except MalformedMessageError:
        return None
    return body if sections.body == body else None


_NULL = b"\x40"
_TRUE = b"\x41"
_FALSE = b"\x42"


def header_section(durable: bool, priority: int, ttl_ms: int, delivery_count: int) -> bytes:
    """The header section (part 3, 3.2.1); ``ttl_ms`` 0 means none.  Built by hand: it is the
    only section that differs per delivery, so it is rendered for every one."""
    fields = (
        (_TRUE if durable else _FALSE)
        + bytes((0x50, priority))
        + (b"\x70" + min(ttl_ms, 0xFFFFFFFF).to_bytes(4, "big") if ttl_ms > 0 else _NULL)
        + _FALSE
        + (b"\x70" + min(delivery_count, 0xFFFFFFFF).to_bytes(4, "big"))
    )
    return bytes((0x00, 0x53, HEADER, 0xC0, len(fields) + 1, 5)) + fields
