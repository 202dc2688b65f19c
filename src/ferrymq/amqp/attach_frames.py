"""Link capabilities, which proton's engine neither sends nor reads: done on the bytes.

AMQP 1.0's attach frame has ``offered-capabilities`` and ``desired-capabilities`` (part
2.7.3), and Artemis's broker connections depend on them (``amq.mirror``, federation's control
and event links, the router's ``qd.waypoint``), but proton-c 0.40 always encodes them as null
and has no call that reads them. ``AttachCapabilities`` sits between proton and the socket:
outgoing attach frames of the links it was told about get their capabilities written in
(the frame re-encoded through ``proton.Data``); incoming attach frames are read for theirs,
keyed by link name (a link's two attaches share its name). Every other frame passes untouched
and is never copied on the way in: the scanner keeps only frame headers and attach bodies.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, cast

import proton

__all__ = ["AttachCapabilities", "RemoteAttach"]

_FRAME = struct.Struct(">IBBH")
_AMQP_FRAME = 0
_ATTACH = 0x12
_HEADER = b"AMQP"
_OFFERED, _DESIRED, _FIELDS = 11, 12, 14
_PEEK = 10
"""Body bytes that always show the performative's descriptor (``0x00 0x80`` + 8-byte ulong)."""


@dataclass(frozen=True, slots=True)
class RemoteAttach:
    """What the peer's attach said that proton does not tell."""

    offered: tuple[str, ...] = ()
    desired: tuple[str, ...] = ()


def _symbols(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, proton.Array):
        return tuple(str(item) for item in value.elements)
    if isinstance(value, list | tuple):
        return tuple(str(item) for item in value)
    return (str(value),)


def _array(names: tuple[str, ...]) -> proton.Array | None:
    if not names:
        return None
    return proton.Array(
        cast(Any, proton.UNDESCRIBED), proton.Data.SYMBOL, *map(proton.symbol, names)
    )


def _descriptor_is_attach(body: bytes) -> bool:
    if body[:3] == b"\x00\x53\x12":
        return True
    return len(body) >= _PEEK and body[:2] == b"\x00\x80" and body[2:10] == _ATTACH.to_bytes(8)


def _decode(body: bytes) -> list[object] | None:
    data = proton.Data()
    try:
        data.decode(body)
        data.rewind()
        data.next()
        value = data.get_object()
    except (proton.DataException, ValueError):
        return None  # proton reports the malformed frame itself
    if not isinstance(value, proton.Described) or not isinstance(value.value, list):
        return None
    return list(value.value)


class AttachCapabilities:
    """One connection's capability shim; see the module docstring."""

    def __init__(self) -> None:
        self._outgoing: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        self.incoming: dict[str, RemoteAttach] = {}
        """Link name -> what the peer's attach for it carried."""
        self._head = bytearray()
        self._body = bytearray()
        self._keep = 0
        """Bytes of the current frame's body still to keep (an attach, or a peek)."""
        self._skip = 0
        self._frame: tuple[int, int] | None = None
        """(data offset, size) of the frame whose body is being read."""

    def announce(self, name: str, offered: tuple[str, ...], desired: tuple[str, ...]) -> None:
        """Write these into the next attach of link ``name`` that proton sends."""
        if offered or desired:
            self._outgoing[name] = (offered, desired)

    # ---- outgoing ----

    def rewrite(self, data: bytes) -> bytes:
        """proton's output (whole frames, from a frame boundary) with capabilities written in."""
        if not self._outgoing or not data:
            return data
        out: list[bytes] = []
        view = memoryview(data)
        position = 0
        while position < len(view):
            if bytes(view[position : position + 4]) == _HEADER:
                out.append(bytes(view[position : position + 8]))
                position += 8
                continue
            size = _FRAME.unpack_from(view, position)[0]
            frame = bytes(view[position : position + size])
            out.append(self._rewrite_frame(frame))
            position += size
        return b"".join(out)

    def _rewrite_frame(self, frame: bytes) -> bytes:
        _size, doff, kind, channel = _FRAME.unpack_from(frame)
        body = frame[doff * 4 :]
        if kind != _AMQP_FRAME or not _descriptor_is_attach(body):
            return frame
        fields = _decode(body)
        if fields is None or not fields or str(fields[0]) not in self._outgoing:
            return frame
        offered, desired = self._outgoing.pop(str(fields[0]))
        fields += [None] * (_FIELDS - len(fields))
        fields[_OFFERED], fields[_DESIRED] = _array(offered), _array(desired)
        data = proton.Data()
        data.put_object(proton.Described(proton.ulong(_ATTACH), cast(Any, fields)))
        encoded = data.encode()
        extended = frame[_FRAME.size : doff * 4]
        return _FRAME.pack(doff * 4 + len(encoded), doff, kind, channel) + extended + encoded

    # ---- incoming ----

    def scan(self, data: bytes) -> None:
        """Read what the peer sent (before proton does) for its attach frames."""
        view = memoryview(data)
        while view:
            if self._skip:
                step = min(self._skip, len(view))
                self._skip -= step
                view = view[step:]
            elif self._keep:
                step = min(self._keep, len(view))
                self._body += view[:step]
                self._keep -= step
                view = view[step:]
                if not self._keep:
                    self._body_read()
            else:
                step = min(_FRAME.size - len(self._head), len(view))
                self._head += view[:step]
                view = view[step:]
                if len(self._head) == _FRAME.size:
                    self._header_read()

    def _header_read(self) -> None:
        head = bytes(self._head)
        self._head.clear()
        if head[:4] == _HEADER:
            return  # a protocol header, not a frame
        size, doff, kind, _channel = _FRAME.unpack(head)
        rest = max(size - _FRAME.size, 0)
        if kind != _AMQP_FRAME or rest == 0:
            self._skip = rest
            return
        self._frame = (doff * 4, size)
        self._body.clear()
        self._keep = min(rest, max(doff * 4 - _FRAME.size, 0) + _PEEK)

    def _body_read(self) -> None:
        assert self._frame is not None
        offset, size = self._frame
        seen = _FRAME.size + len(self._body)
        if seen < size:  # only the peek so far
            body = bytes(self._body[offset - _FRAME.size :])
            if _descriptor_is_attach(body):
                self._keep = size - seen
            else:
                self._skip = size - seen
                self._frame = None
            return
        self._frame = None
        body = bytes(self._body[offset - _FRAME.size :])
        fields = _decode(body) if _descriptor_is_attach(body) else None
        if fields:
            fields += [None] * (_FIELDS - len(fields))
            self.incoming[str(fields[0])] = RemoteAttach(
                _symbols(fields[_OFFERED]), _symbols(fields[_DESIRED])
            )
