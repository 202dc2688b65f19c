"""The server side of AMQP 1.0's SASL layer (AMQP 1.0, part 5.3), written here.

proton's server transport offers PLAIN only through Cyrus SASL, and accepts a client that skips
SASL even when it was told to require it, so the broker speaks SASL itself: it reads the
protocol header, offers its mechanisms, decodes ``sasl-init`` and answers with ``sasl-outcome``
once the broker's authentication has decided; what follows (the AMQP header and frames) goes to
proton's transport, which then runs without a SASL layer. Pure: bytes in, events out.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Sequence
from dataclasses import dataclass

import proton

SASL_HEADER = b"AMQP\x03\x01\x00\x00"
AMQP_HEADER = b"AMQP\x00\x01\x00\x00"
HEADER_SIZE = 8
MAX_SASL_FRAME = 65536
"""A SASL frame larger than this is refused: ``sasl-init`` carries a user name and password."""

SASL_MECHANISMS = 0x40
SASL_INIT = 0x41
SASL_OUTCOME = 0x44
OUTCOME_OK = 0
OUTCOME_AUTH = 1
OUTCOME_SYS = 2

_FRAME = struct.Struct(">IBBH")
_SASL_FRAME_TYPE = 1


class SaslError(Exception):
    """The client broke the SASL exchange; the message says how (the connection closes)."""


class Header(enum.Enum):
    SASL = "sasl"
    AMQP = "amqp"
    """The client skipped SASL and spoke AMQP at once."""


@dataclass(frozen=True, slots=True)
class SaslInit:
    mechanism: str
    response: bytes


class SaslServer:
    """One connection's SASL exchange: feed it bytes, read its events, send what it says."""

    def __init__(self, mechanisms: Sequence[str]) -> None:
        self.mechanisms = tuple(mechanisms)
        self._buffer = bytearray()
        self._header: Header | None = None
        self._init: SaslInit | None = None

    @property
    def header(self) -> Header | None:
        """The protocol header the client sent, once read."""
        return self._header

    def feed(self, data: bytes) -> None:
        self._buffer += data

    def next_event(self) -> Header | SaslInit | None:
        """The next thing the client said, once complete; None until then (or after init)."""
        if self._header is None:
            return self._read_header()
        if self._header is Header.SASL and self._init is None:
            return self._read_init()
        return None

    def rest(self) -> bytes:
        """What came after the exchange (the AMQP header and frames): proton's to read."""
        rest = bytes(self._buffer)
        self._buffer.clear()
        return rest

    def _read_header(self) -> Header | None:
        if len(self._buffer) < HEADER_SIZE:
            if not SASL_HEADER.startswith(bytes(self._buffer[:4])[: len(self._buffer)]):
                raise SaslError("not an AMQP 1.0 connection (no AMQP protocol header)")
            return None
        header = bytes(self._buffer[:HEADER_SIZE])
        if header == SASL_HEADER:
            self._header = Header.SASL
            del self._buffer[:HEADER_SIZE]
        elif header == AMQP_HEADER:
            self._header = Header.AMQP  # left in the buffer: proton reads it
        else:
            raise SaslError(f"unsupported AMQP protocol header {header!r}")
        return self._header

    def _read_init(self) -> SaslInit | None:
        if len(self._buffer) < _FRAME.size:
            return None
        size, doff, kind, _channel = _FRAME.unpack_from(self._buffer)
        if kind != _SASL_FRAME_TYPE or doff < 2 or not doff * 4 <= size <= MAX_SASL_FRAME:
            raise SaslError("malformed SASL frame (expected sasl-init)")
        if len(self._buffer) < size:
            return None
        body = bytes(self._buffer[doff * 4 : size])
        del self._buffer[:size]
        self._init = _decode_init(body)
        return self._init

    def mechanisms_frame(self) -> bytes:
        """The server's protocol header and ``sasl-mechanisms``."""
        data = proton.Data()
        data.put_described()
        data.enter()
        data.put_ulong(SASL_MECHANISMS)
        data.put_list()
        data.enter()
        data.put_array(False, proton.Data.SYMBOL)
        data.enter()
        for mechanism in self.mechanisms:
            data.put_symbol(proton.symbol(mechanism))
        data.exit()
        data.exit()
        data.exit()
        return SASL_HEADER + _frame(data.encode())

    @staticmethod
    def outcome_frame(code: int) -> bytes:
        data = proton.Data()
        data.put_described()
        data.enter()
        data.put_ulong(SASL_OUTCOME)
        data.put_list()
        data.enter()
        data.put_ubyte(code)
        data.exit()
        data.exit()
        return _frame(data.encode())


def _frame(body: bytes) -> bytes:
    return _FRAME.pack(_FRAME.size + len(body), 2, _SASL_FRAME_TYPE, 0) + body


def _decode_init(body: bytes) -> SaslInit:
    data = proton.Data()
    try:
        data.decode(body)
        data.rewind()
        data.next()
        value = data.get_object()
    except (proton.DataException, ValueError) as exc:  # ValueError: a symbol not ASCII
        raise SaslError(f"malformed sasl-init frame: {exc}") from None
    if not isinstance(value, proton.Described) or value.descriptor != SASL_INIT:
        raise SaslError("expected sasl-init")
    fields = value.value if isinstance(value.value, list) else []
    if not fields or not isinstance(fields[0], str):
        raise SaslError("sasl-init without a mechanism")
    response = fields[1] if len(fields) > 1 else None
    response = bytes(response) if isinstance(response, bytes | memoryview) else b""
    return SaslInit(str(fields[0]), response)


def plain_credentials(response: bytes) -> tuple[str, str]:
    """PLAIN's ``authzid NUL authcid NUL passwd`` (RFC 4616) as (user, password)."""
    parts = response.split(b"\x00")
    if len(parts) != 3:
        raise SaslError("malformed PLAIN response (expected authzid NUL user NUL password)")
    try:
        return parts[1].decode(), parts[2].decode()
    except UnicodeDecodeError:
        raise SaslError("PLAIN user name and password must be UTF-8") from None
