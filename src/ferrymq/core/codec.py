"""How a message is written into the store: a small JSON header, then the body bytes untouched.

Format: 4-byte big-endian header length, UTF-8 JSON header, body.  JSON keeps the data directory
readable with ordinary tools and independent of Python's version; bodies are never re-encoded.
"""

from __future__ import annotations

import json
import struct

from ferrymq.core.destination import Destination
from ferrymq.core.message import Message, MessageId

_HEADER_LENGTH = struct.Struct(">I")
FORMAT_VERSION = 1


class CodecError(ValueError):
    """A stored message could not be decoded (the store is damaged or from a newer version)."""


def encode(message: Message) -> bytes:
    if message.encoded is not None:
        return message.encoded
    header: dict[str, object] = {
        "v": FORMAT_VERSION,
        "id": message.message_id,
        "d": message.destination.qualified,
        "p": message.properties,
    }
    if message.persistent:
        header["pe"] = 1
    if message.priority != 4:
        header["pr"] = message.priority
    if message.expires:
        header["ex"] = message.expires
    if message.timestamp:
        header["ts"] = message.timestamp
    if message.redelivery_count:
        header["rc"] = message.redelivery_count
    if message.broker_path:
        header["bp"] = list(message.broker_path)
    _provenance(message, header)
    raw = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    blob = _HEADER_LENGTH.pack(len(raw)) + raw + message.body
    message.encoded = blob
    return blob


def _provenance(message: Message, header: dict[str, object]) -> None:
    """Where the message came from, when known: its producer's id, its first destination,
    the node it was first sent to (a mirrored message)."""
    if message.producer_message_id is not None:
        header["pm"] = message.producer_message_id
    if message.original_destination is not None:
        header["od"] = message.original_destination.qualified
    if message.origin_node is not None:
        header["on"] = message.origin_node


def decode(blob: bytes) -> Message:
    try:
        (length,) = _HEADER_LENGTH.unpack_from(blob)
        header = json.loads(blob[4 : 4 + length])
        if header.get("v") != FORMAT_VERSION:
            raise CodecError(f"unsupported stored message format {header.get('v')!r}")
        original = header.get("od")
        message = Message(
            message_id=MessageId(header["id"]),
            destination=Destination.parse_qualified(header["d"]),
            body=bytes(blob[4 + length :]),
            properties=header["p"],
            persistent=bool(header.get("pe", 0)),
            priority=header.get("pr", 4),
            expires=header.get("ex", 0),
            timestamp=header.get("ts", 0),
            redelivery_count=header.get("rc", 0),
            broker_path=tuple(header.get("bp", ())),
            producer_message_id=header.get("pm"),
            original_destination=Destination.parse_qualified(original) if original else None,
            origin_node=header.get("on"),
        )
    except (struct.error, ValueError, KeyError, TypeError) as exc:
        if isinstance(exc, CodecError):
            raise
        raise CodecError(f"damaged stored message: {exc}") from exc
    message.encoded = bytes(blob)
    return message
