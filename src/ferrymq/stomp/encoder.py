"""Frames to bytes.

A frame ends with NUL LF, as ActiveMQ ends every frame it writes. STOMP 1.2 ("STOMP Frames")
allows any number of EOLs after the NUL, and some clients depend on the LF: PHP's PECL stomp
reads two bytes after a body, so with a bare NUL it eats the first byte of the next frame when
several arrive in one read. A peer reads the LF as a heart-beat, which is harmless.

Header names and values are escaped per version (``escaping``), except on CONNECT, STOMP and
CONNECTED frames. What a version cannot carry raises ``LocalProtocolError`` instead of being
sent broken: an empty name; a NUL anywhere in a header (our parser refuses it); an LF, or a colon
in a name, where there is no escaping; a value ending in CR where CR has no escape (it would
read back as a CR LF line end).

The common case, nothing to escape but colons and backslashes, is handled for all headers at
once with a handful of C-level string operations: ``encode_message`` is the broker's path to
every subscriber.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from operator import itemgetter
from typing import Final

from ferrymq.stomp.constants import (
    ALL_COMMANDS,
    CONTENT_LENGTH,
    MESSAGE,
    SUPPORTED_VERSIONS,
    UNESCAPED_COMMANDS,
    V1_0,
    V1_2,
)
from ferrymq.stomp.errors import LocalProtocolError
from ferrymq.stomp.escaping import escape
from ferrymq.stomp.frame import Frame

HEARTBEAT_BYTES: Final = b"\n"

Headers = Mapping[str, str] | Iterable[tuple[str, str]]


def encode(frame: Frame, version: str) -> bytes:
    """Encode ``frame`` for a connection speaking ``version``.

    The headers are written as given. A ``content-length`` header must match the body; without
    one, it is added only if the body holds a NUL, since ActiveMQ reads content-length on a SEND
    as "this is a BytesMessage".
    """
    return encode_frame(frame.command, frame.headers, frame.body, version)


def encode_message(headers: Headers, body: bytes, version: str) -> bytes:
    """Encode a MESSAGE frame; content-length is always written (last) from ``len(body)``."""
    if type(headers) is not dict or CONTENT_LENGTH in headers or not headers:
        return encode_frame(MESSAGE, headers, body, version, content_length=True)
    if version not in SUPPORTED_VERSIONS:
        raise LocalProtocolError(f"unsupported STOMP version {version!r}")
    head = _head(headers.items(), len(headers), version, version != V1_0)
    return b"MESSAGE\n%b\ncontent-length:%d\n\n%b\0\n" % (head.encode(), len(body), body)


def header_block(items: Iterable[tuple[str, str]], version: str) -> bytes:
    """Header lines for a MESSAGE assembled from parts: ``b"\\nname:value"`` per header, escaped
    for ``version``.  Raises ``LocalProtocolError`` for a header the version cannot carry.

    A broker renders the part of a MESSAGE that does not depend on the delivery once per
    message (and per version), then adds the per-delivery headers with ``assemble_message``.
    """
    if version not in SUPPORTED_VERSIONS:
        raise LocalProtocolError(f"unsupported STOMP version {version!r}")
    pairs = items if isinstance(items, list) else list(items)
    if not pairs:
        return b""
    return ("\n" + _head(pairs, len(pairs), version, version != V1_0)).encode()


def assemble_message(blocks: Iterable[bytes], body: bytes) -> bytes:
    """A MESSAGE frame from header blocks made by ``header_block``; content-length comes last."""
    return b"MESSAGE%b\ncontent-length:%d\n\n%b\0\n" % (b"".join(blocks), len(body), body)


def encode_frame(
    command: str,
    headers: Headers,
    body: bytes = b"",
    version: str = V1_0,
    *,
    content_length: bool = False,
) -> bytes:
    """Encode a frame from its parts, without building a ``Frame`` first.

    With ``content_length`` any given content-length header is replaced by the body's length,
    written after the other headers; otherwise it works as ``encode``.
    """
    if command not in ALL_COMMANDS:
        raise LocalProtocolError(f"unknown STOMP command {command[:40]!r}")
    if version not in SUPPORTED_VERSIONS:
        raise LocalProtocolError(f"unsupported STOMP version {version!r}")
    if type(headers) is dict or isinstance(headers, Mapping):
        given = headers.get(CONTENT_LENGTH)
        if given is not None and content_length:
            pairs: list[tuple[str, str]] | None = [
                item for item in headers.items() if item[0] != CONTENT_LENGTH
            ]
        else:
            pairs = None
        items: Iterable[tuple[str, str]] = headers.items() if pairs is None else pairs
        count = len(headers) if pairs is None else len(pairs)
    else:
        pairs = list(headers)
        given = next((value for name, value in pairs if name == CONTENT_LENGTH), None)
        if given is not None and content_length:
            pairs = [item for item in pairs if item[0] != CONTENT_LENGTH]
        items, count = pairs, len(pairs)
    if not content_length:
        if given is not None:
            if given != str(len(body)):
                raise LocalProtocolError(
                    f"content-length {given!r} does not match the {len(body)}-byte body"
                )
        elif b"\0" in body:
            content_length = True
    escaped = version != V1_0 and command not in UNESCAPED_COMMANDS
    head = _head(items, count, version, escaped) if count else ""
    if content_length:
        length = f"{CONTENT_LENGTH}:{len(body)}"
        head = f"{head}\n{length}" if head else length
    if head:
        return b"%b\n%b\n\n%b\0\n" % (command.encode(), head.encode(), body)
    return b"%b\n\n%b\0\n" % (command.encode(), body)


def _head(items: Iterable[tuple[str, str]], count: int, version: str, escaped: bool) -> str:
    """The header lines, joined by LF, without a trailing EOL."""
    # Fast path: join every pair as "name NUL value" and the pairs by LF. Counting the NULs and
    # LFs proves no name or value holds either, so the separators can be told apart after one
    # escape pass over the whole text.
    flat = "\n".join(map("\x00".join, items))
    if (
        flat.count("\x00") == count
        and flat.count("\n") == count - 1
        and flat[0] != "\x00"
        and "\n\x00" not in flat
        and ((escaped and version == V1_2) or ("\r\n" not in flat and flat[-1] != "\r"))
    ):
        if escaped:
            if "\\" in flat:
                flat = flat.replace("\\", "\\\\")
            if "\r" in flat and version == V1_2:
                flat = flat.replace("\r", "\\r")
            if ":" in flat:
                flat = flat.replace(":", "\\c")
            return flat.replace("\x00", ":")
        if ":" not in "".join(map(itemgetter(0), items)):
            return flat.replace("\x00", ":")
    return "\n".join([_line(name, value, version, escaped) for name, value in items])


def _line(name: str, value: str, version: str, escaped: bool) -> str:
    """One header line, checked in detail; the slow path that also names what is wrong."""
    if not name:
        raise LocalProtocolError("header name is empty")
    for text in (name, value):
        if "\x00" in text:
            raise LocalProtocolError(f"header {name[:40]!r} holds a NUL")
        if not escaped and "\n" in text:
            raise LocalProtocolError(
                f"header {name[:40]!r} holds an LF, which STOMP {version} cannot escape here"
            )
    if not escaped and ":" in name:
        raise LocalProtocolError(f"header name {name[:40]!r} holds a colon")
    if value.endswith("\r") and not (escaped and version == V1_2):
        raise LocalProtocolError(
            f"header {name[:40]!r} ends in CR, which STOMP {version} cannot escape here"
        )
    if escaped:
        return f"{escape(name, version)}:{escape(value, version)}"
    return f"{name}:{value}"
