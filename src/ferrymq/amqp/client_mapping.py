"""The client's translation between a STOMP-shaped message and an AMQP 1.0 one.

The client library speaks in STOMP's terms (destinations ``/queue/X``, headers as strings);
over an ``amqp://`` URL each SEND becomes an AMQP message and each AMQP message a MESSAGE
event. Addresses follow ActiveMQ 5.x's AMQP naming (ActiveMQ documentation, "AMQP": the
``queue://`` and ``topic://`` prefixes), so a destination is the same whichever protocol
reaches it. The headers that have an AMQP field go in that field, as Qpid JMS puts them
(``persistent`` -> header durable, ``type`` -> subject, ``expires`` -> absolute-expiry-time, ...);
every other header is an application property, ``ferrymq.producer-message-id`` included, since
the broker's duplicate detection reads it there (docs/amqp.md).

Pure: no I/O; only proton's data types. Header names are spelled here, not imported from the
STOMP package, because ``ferrymq.amqp`` imports nothing of FerryMQ's.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from proton import Message, symbol, timestamp, ubyte, uint, ulong

from ferrymq.amqp.encoding import encode_section
from ferrymq.util.text import is_decimal

__all__ = [
    "address_for",
    "destination_for",
    "encoded_for_send",
    "message_for_send",
    "message_headers",
]

_HEADER, _PROPERTIES, _APPLICATION_PROPERTIES, _DATA = 0x70, 0x73, 0x74, 0x75
"""Section descriptors (AMQP 1.0 part 3, 3.2)."""

_PREFIXES = (
    ("/queue/", "queue://"),
    ("/topic/", "topic://"),
    ("/temp-queue/", "temp-queue://"),
    ("/temp-topic/", "temp-topic://"),
    ("/remote-temp-queue/", "temp-queue://"),
    ("/remote-temp-topic/", "temp-topic://"),
)
_KINDS = {0: "/queue/", 1: "/topic/", 2: "/temp-queue/", 3: "/temp-topic/"}
"""Qpid JMS's ``x-opt-jms-dest`` / ``x-opt-jms-reply-to`` codes."""

PERSISTENT = "persistent"
PRIORITY = "priority"
EXPIRES = "expires"
_FIELDS = frozenset(
    {
        PERSISTENT,
        PRIORITY,
        EXPIRES,
        "correlation-id",
        "reply-to",
        "type",
        "content-type",
        "content-encoding",
        "JMSXGroupID",
        "JMSXGroupSeq",
        "message-id",
        "destination",
        "content-length",
        "receipt",
        "transaction",
    }
)
"""Headers carried by an AMQP field (or by the frame itself), not as application properties."""


def address_for(destination: str) -> str:
    """The AMQP address of a STOMP destination: ``/queue/X`` -> ``queue://X``; anything else
    (a plain name, already ``queue://X``) unchanged: ActiveMQ 5 takes a plain name as a queue."""
    for stomp, amqp in _PREFIXES:
        if destination.startswith(stomp):
            return amqp + destination[len(stomp) :]
    return destination


def destination_for(address: str | None, kind: int | None = None) -> str:
    """The STOMP destination of an AMQP address (the inverse of ``address_for``); a plain name
    is a queue unless Qpid JMS's annotation ``kind`` says otherwise."""
    if not address:
        return ""
    for stomp, amqp in _PREFIXES[:4]:
        if address.startswith(amqp):
            return stomp + address[len(amqp) :]
    if address.startswith("/"):
        return address
    return _KINDS.get(kind if kind is not None else 0, "/queue/") + address


def message_for_send(destination: str, body: bytes, headers: Mapping[str, str]) -> Message:
    """The AMQP message for a SEND. The body goes in one data section, byte for byte."""
    message = Message(body=bytes(body), inferred=True)
    message.address = address_for(destination)
    message.durable = headers.get(PERSISTENT, "").lower() == "true"
    if (priority := headers.get(PRIORITY)) is not None and is_decimal(priority.strip()):
        message.priority = min(int(priority), 9)
    _set_fields(message, headers)
    if (expires := _number(headers.get(EXPIRES))) > 0:
        message.expiry_time = expires / 1000
    properties: Any = {name: value for name, value in headers.items() if name not in _FIELDS}
    message.properties = properties or None
    return message


def encoded_for_send(destination: str, body: bytes, headers: Mapping[str, str]) -> bytes:
    """``message_for_send(...).encode()``, the same message, without proton's ``Message``: it
    costs more than the rest of a send (a C call per field, wrappers made and freed)."""
    durable = headers.get(PERSISTENT, "").lower() == "true"
    priority = headers.get(PRIORITY)
    header: list[object] = [durable]
    if priority is not None and is_decimal(priority.strip()):
        header.append(ubyte(min(int(priority), 9)))
    properties = {name: value for name, value in headers.items() if name not in _FIELDS}
    encoded = encode_section(_HEADER, header) + encode_section(
        _PROPERTIES, _fields(destination, headers)
    )
    if properties:
        encoded += encode_section(_APPLICATION_PROPERTIES, properties)
    return encoded + encode_section(_DATA, bytes(body))


def _fields(destination: str, headers: Mapping[str, str]) -> list[object]:
    """The properties section (AMQP 1.0 3.2.4) as ``_set_fields`` fills it."""
    get = headers.get
    reply_to = get("reply-to")
    content_type = get("content-type")
    encoding = get("content-encoding")
    expires = _number(get(EXPIRES))
    sequence = get("JMSXGroupSeq")
    fields: list[object] = [
        None,  # message-id
        None,  # user-id
        address_for(destination),
        get("type"),
        address_for(reply_to) if reply_to is not None else None,
        get("correlation-id"),
        symbol(content_type) if content_type is not None else None,
        symbol(encoding) if encoding is not None else None,
        timestamp(expires) if expires > 0 else None,
        None,  # creation-time
        get("JMSXGroupID"),
        uint(int(sequence)) if sequence is not None and is_decimal(sequence) else None,
    ]
    while fields[-1] is None:
        fields.pop()
    return fields


def _set_fields(message: Message, headers: Mapping[str, str]) -> None:
    if (correlation := headers.get("correlation-id")) is not None:
        message.correlation_id = correlation
    if (reply_to := headers.get("reply-to")) is not None:
        message.reply_to = address_for(reply_to)
    if (kind := headers.get("type")) is not None:
        message.subject = kind
    if (content_type := headers.get("content-type")) is not None:
        message.content_type = symbol(content_type)
    if (encoding := headers.get("content-encoding")) is not None:
        message.content_encoding = symbol(encoding)
    if (group := headers.get("JMSXGroupID")) is not None:
        message.group_id = group
    if (sequence := headers.get("JMSXGroupSeq")) is not None and is_decimal(sequence):
        message.group_sequence = int(sequence)


def _number(text: str | None) -> int:
    return int(text) if text is not None and is_decimal(text.strip()) else 0


def message_headers(message: Message) -> tuple[str, str, dict[str, str], bytes]:
    """Destination, message id, STOMP headers and body of a received AMQP message."""
    annotations: Mapping[Any, Any] = message.annotations or {}
    destination = destination_for(message.address, _code(annotations.get("x-opt-jms-dest")))
    headers: dict[str, str] = {}
    properties: Mapping[Any, Any] = message.properties or {}
    for name, value in properties.items():
        headers[str(name)] = _text(value)
    headers[PERSISTENT] = "true" if message.durable else "false"
    headers[PRIORITY] = str(message.priority)
    expires = _expires_ms(message)
    if expires:
        headers[EXPIRES] = str(expires)
    if message.creation_time:
        headers["timestamp"] = str(round(message.creation_time * 1000))
    if message.delivery_count:
        headers["redelivered"] = "true"
    _optional_fields(message, annotations, headers)
    message_id = _message_id(message.id)
    if message_id:
        headers["message-id"] = message_id
    headers["destination"] = destination
    return destination, message_id, headers, _body(message.body)


def _optional_fields(message: Message, annotations: Mapping[Any, Any], out: dict[str, str]) -> None:
    if message.correlation_id is not None:
        out["correlation-id"] = _message_id(message.correlation_id)
    if message.reply_to:
        kind = _code(annotations.get("x-opt-jms-reply-to"))
        out["reply-to"] = destination_for(message.reply_to, kind)
    if message.subject:
        out["type"] = message.subject
    if content_type := _symbol_text(message.content_type):
        out["content-type"] = content_type
    if encoding := _symbol_text(message.content_encoding):
        out["content-encoding"] = encoding
    if message.group_id:
        out["JMSXGroupID"] = message.group_id
    if message.group_sequence:
        out["JMSXGroupSeq"] = str(message.group_sequence)


def _symbol_text(value: object) -> str:
    """proton gives an absent symbol field as ``symbol('None')``: that is no value."""
    return "" if value is None or str(value) == "None" else str(value)


def _expires_ms(message: Message) -> int:
    if message.expiry_time:
        return round(message.expiry_time * 1000)
    if message.ttl and message.creation_time:
        return round((message.creation_time + message.ttl) * 1000)
    return 0


def _code(value: object) -> int | None:
    if isinstance(value, int):
        return value
    if isinstance(value, bytes) and len(value) == 1:
        return value[0]
    return None


def _message_id(value: object) -> str:
    """An AMQP message id as a string, with Qpid JMS's type prefixes for the non-string kinds
    (so a JMS client and this one name the same message alike)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, ulong | int):
        return f"ID:AMQP_ULONG:{int(value)}"
    if isinstance(value, uuid.UUID):
        return f"ID:AMQP_UUID:{value}"
    if isinstance(value, bytes | bytearray | memoryview):
        return f"ID:AMQP_BINARY:{bytes(value).hex().upper()}"
    return str(value)


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _body(body: object) -> bytes:
    """A data or amqp-value(binary) section as it is; text as UTF-8; nothing as empty; any
    other value (a map, a list) as its text, for want of a byte form."""
    if body is None:
        return b""
    if isinstance(body, bytes):
        return body
    if isinstance(body, bytearray | memoryview):
        return bytes(body)
    if isinstance(body, str):
        return body.encode()
    return str(body).encode()
