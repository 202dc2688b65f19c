"""An AMQP 1.0 message as the core's ``Message`` and back: ActiveMQ 5.x's JMS mapping, as Qpid
JMS expects it (docs/amqp.md has the table, row by row).

Both directions work on encoded bytes, what a link receives (``receiver.recv``) and sends
(``sender.send``), not on ``proton.Message``: coming in, the body sections are kept as the sender
encoded them without being decoded (``body.split``); going out, everything but the header is the
same for every delivery of a message (AMQP addresses are broker-wide, so no connection changes
them either), so ``message_tail`` renders it once and ``amqp_from_message`` only prepends the
header, the one section that carries per-delivery values (delivery-count, ttl).

Properties are STOMP headers in ActiveMQ's dialect, so a message crosses between the protocols
with one representation: ``reply-to`` is kept in STOMP syntax (``/queue/X``), the AMQP fields
become the headers a STOMP client knows (``correlation-id``, ``type``, ``JMSXGroupID`` ...).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from proton import byte, symbol, timestamp, uint

from ferrymq.adapters.amqp import body as sections
from ferrymq.adapters.amqp import properties as p
from ferrymq.adapters.amqp.addressing import (
    JMS_DEST,
    JMS_REPLY_TO,
    address_for,
    destination_for_code,
    destination_type_code,
)
from ferrymq.adapters.amqp.codec import decode, encode_section
from ferrymq.adapters.stomp.dialect import format_destination, parse_destinations
from ferrymq.core.destination import Destination
from ferrymq.core.errors import BrokerError
from ferrymq.core.message import (
    CORRELATION_ID,
    DEFAULT_PRIORITY,
    GROUP_ID,
    GROUP_SEQ,
    MAX_PRIORITY,
    REPLY_TO,
    TYPE,
    Message,
    MessageId,
    require_long,
)
from ferrymq.core.scheduler import DELAY
from ferrymq.stomp import constants as h
from ferrymq.util.text import is_decimal

_MAX_UINT = 2**32 - 1
T = TypeVar("T")


def message_from_amqp(
    encoded: bytes, *, message_id: MessageId, destination: Destination, now_ms: int
) -> Message:
    """The core's message for an AMQP transfer's payload, sent to ``destination`` (the link's
    target, or ``to`` for the anonymous relay: the adapter decides, ``to`` is not read here).

    ``message_id`` is the broker's fresh id, used when the message carries none.  Raises a
    non-fatal ``BrokerError`` for what the broker cannot accept; the adapter rejects that one
    delivery and keeps the link.
    """
    parts = sections.split(encoded, decode)  # one pass: the head sections come decoded
    values = parts.values
    header = _as_list(values.get(sections.HEADER, _ABSENT), 5, "header")
    fields = _as_list(values.get(sections.PROPERTIES, _ABSENT), 13, "properties")
    annotations = _as_map(values.get(sections.MESSAGE_ANNOTATIONS), "message-annotations")
    payload, encoding = sections.payload(parts)
    properties = p.application_properties(
        _as_map(values.get(sections.APPLICATION_PROPERTIES), "application-properties")
    )
    producer_message_id = properties.pop(h.FERRYMQ_PRODUCER_MESSAGE_ID, None) or None
    if annotations:
        properties.update(_annotations(annotations, now_ms))
    if parts.footer_at >= 0:
        footer = _map(encoded, parts.footer_at, "footer")
        properties.update(p.prefixed(footer, p.FOOTER_PREFIX, "footer entry"))
    _properties_section(fields, properties, annotations.get(JMS_REPLY_TO))
    properties[sections.ORIGINAL_ENCODING] = str(encoding)
    durable = _typed(header, 0, bool, "header durable")
    priority = _typed(header, 1, int, "header priority")
    ttl = _typed(header, 2, int, "header ttl") or 0
    expires = _typed(fields, 8, int, "absolute-expiry-time") or 0
    if not expires and ttl > 0:
        expires = now_ms + ttl
    created = _typed(fields, 9, int, "creation-time")
    return Message(
        MessageId(p.id_text(fields[0], "message-id") or message_id),
        destination,
        payload,
        properties,
        persistent=bool(durable),
        priority=DEFAULT_PRIORITY if priority is None else max(min(priority, MAX_PRIORITY), 0),
        expires=max(_long("absolute-expiry-time", expires), 0),
        timestamp=_long("creation-time", created or now_ms),
        producer_message_id=producer_message_id,
    )


def _long(name: str, number: int) -> int:
    """``require_long``, refusing the one message rather than the connection."""
    try:
        return require_long(name, number)
    except BrokerError as exc:
        raise BrokerError(exc.message, fatal=False) from None


_NO_MORE_FIELDS = [None] * 10
"""The properties section's fields after ``to``, when the message has none of them."""
_ABSENT = object()
"""A section the message does not have (a list section may also hold null: not a list)."""


def _list(view: bytes, at: int | None, length: int, section: str) -> list[object]:
    """A list section's fields, padded with None (trailing nulls may be left out)."""
    return _as_list(_ABSENT if at is None else decode(view, at)[0], length, section)


def _as_list(value: object, length: int, section: str) -> list[object]:
    if value is _ABSENT:
        return [None] * length
    if type(value) is not list:
        raise sections.MalformedMessageError(f"the {section} section is not a list")
    if len(value) < length:
        value.extend([None] * (length - len(value)))
    return value


def _map(view: bytes, at: int | None, section: str) -> dict[object, object]:
    return _as_map(None if at is None else decode(view, at)[0], section)


def _as_map(value: object, section: str) -> dict[object, object]:
    if value is None:
        return {}
    if type(value) is not dict:
        raise sections.MalformedMessageError(f"the {section} section is not a map")
    return value


def _typed(fields: list[object], index: int, kind: type[T], name: str) -> T | None:
    """Field ``index``, None when absent; a value of another type is refused by name."""
    value = fields[index]
    if value is None or (isinstance(value, kind) and (kind is bool or not isinstance(value, bool))):
        return value
    raise sections.MalformedMessageError(f"{name} holds a {type(value).__name__}")


def _annotations(annotations: Mapping[object, object], now_ms: int) -> dict[str, str]:
    """Message annotations: scheduling becomes ``AMQ_SCHEDULED_DELAY``; the destination kinds
    were for ``to`` and ``reply-to``; every other one is kept as ``JMS_AMQP_MA_<name>``."""
    kept = {
        name: value
        for name, value in annotations.items()
        if name not in (JMS_DEST, JMS_REPLY_TO, p.DELIVERY_TIME, p.DELIVERY_DELAY)
    }
    properties = p.prefixed(kept, p.ANNOTATION_PREFIX, "message annotation")
    at = annotations.get(p.DELIVERY_TIME)
    if at is not None:
        delay = _integer(at, p.DELIVERY_TIME) - now_ms
    else:
        delay = _integer(annotations.get(p.DELIVERY_DELAY, 0), p.DELIVERY_DELAY)
    if delay > 0:
        properties[DELAY] = str(_long(DELAY, delay))
    return properties


def _integer(value: object, name: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise BrokerError(
        f"message annotation {name} must be a number of milliseconds, got {value!r}",
        fatal=False,
    )


def _properties_section(
    fields: list[object], properties: dict[str, str], reply_to_code: object
) -> None:
    """The properties section's fields as the STOMP headers ActiveMQ gives them."""
    if fields[1] is None and fields[3:] == _NO_MORE_FIELDS:
        return  # only message-id and to, which the caller reads (most producers send no more)
    user_id = _typed(fields, 1, bytes, "user-id")
    if user_id:
        try:
            properties[p.USER_ID] = user_id.decode()
        except UnicodeDecodeError:
            raise BrokerError("user-id is not UTF-8 text", fatal=False) from None
    texts = {
        TYPE: _typed(fields, 3, str, "subject"),
        CORRELATION_ID: p.id_text(fields[5], "correlation-id"),
        h.CONTENT_TYPE: _typed(fields, 6, str, "content-type"),
        p.CONTENT_ENCODING: _typed(fields, 7, str, "content-encoding"),
        GROUP_ID: _typed(fields, 10, str, "group-id"),
        p.REPLY_TO_GROUP_ID: _typed(fields, 12, str, "reply-to-group-id"),
    }
    for name, text in texts.items():
        if text is not None:
            properties[name] = text
    sequence = _typed(fields, 11, int, "group-sequence")
    if sequence is not None:
        properties[GROUP_SEQ] = str(int(sequence))
    reply_to = _typed(fields, 4, str, "reply-to")
    if reply_to is not None:
        properties[REPLY_TO] = _stomp_reply_to(reply_to, reply_to_code)


def _stomp_reply_to(address: str, code: object) -> str:
    if code is not None and not isinstance(code, int):
        raise BrokerError(f"message annotation {JMS_REPLY_TO} must be a byte", fatal=False)
    try:
        return format_destination(destination_for_code(address, code))
    except BrokerError as exc:
        raise BrokerError(f"reply-to: {exc.message}", fatal=False) from None


def amqp_from_message(
    message: Message, *, delivery_count: int, now_ms: int, tail: bytes | None = None
) -> bytes:
    """The encoded AMQP message for one delivery: the header, then ``tail`` (pass the cached
    ``message_tail(message)``; it is rendered here when None)."""
    ttl = max(message.expires - now_ms, 1) if message.expires else 0
    header = sections.header_section(
        message.persistent, message.priority, ttl, delivery_count
    )  # fmt: skip
    return header + (message_tail(message) if tail is None else tail)


def message_tail(message: Message) -> bytes:
    """Every section after the header: the same for every delivery of ``message``."""
    properties = dict(message.properties)
    body, text = _body(message, properties.pop(sections.ORIGINAL_ENCODING, None))
    annotations: dict[symbol, object] = {
        symbol(JMS_DEST): byte(destination_type_code(message.destination))
    }
    if text is not None:
        annotations[symbol(p.MESSAGE_TYPE)] = byte(text)
    fields = _fields(message, properties, annotations)
    application: dict[str, str] = {}
    footer: dict[symbol, str] = {}
    for name, value in properties.items():
        # Annotation and footer keys are symbols, which are ASCII (AMQP 1.0 1.6.21): a name
        # that is not stays an application property rather than break the consumer's decoder.
        if name.startswith(p.ANNOTATION_PREFIX) and name.isascii():
            key = name[len(p.ANNOTATION_PREFIX) :]
            annotations[symbol(key)] = p.annotation_value(key, value)
        elif name.startswith(p.FOOTER_PREFIX) and name.isascii():
            footer[symbol(name[len(p.FOOTER_PREFIX) :])] = value
        else:
            application[name] = value
    if message.producer_message_id is not None:
        application[h.FERRYMQ_PRODUCER_MESSAGE_ID] = message.producer_message_id
    if message.original_destination is not None:
        application[h.ORIGINAL_DESTINATION] = address_for(message.original_destination)
    encoded = encode_section(sections.MESSAGE_ANNOTATIONS, annotations) + encode_section(
        sections.PROPERTIES, fields
    )
    if application:
        encoded += encode_section(sections.APPLICATION_PROPERTIES, application)
    encoded += body
    if footer:
        encoded += encode_section(sections.FOOTER, footer)
    return encoded


def _body(message: Message, encoding: str | None) -> tuple[bytes, int | None]:
    """The body section(s), and the ``x-opt-jms-msg-type`` to add (None: keep the sender's)."""
    if encoding is not None and is_decimal(encoding):
        original = sections.body_sections(message.body, int(encoding))
        if original is not None:
            return original, None
    if sections.is_text(message.body, message.properties.get(h.CONTENT_TYPE)):
        return sections.string_section(message.body), p.TEXT_MESSAGE
    return sections.data_section(message.body), p.BYTES_MESSAGE


def _fields(
    message: Message, properties: dict[str, str], annotations: dict[symbol, object]
) -> list[object]:
    """The properties section (AMQP 1.0 3.2.4), taking its values out of ``properties``."""
    pop = properties.pop
    user_id = pop(p.USER_ID, None)
    correlation_id = pop(CORRELATION_ID, None)
    content_type = _pop_symbol(properties, h.CONTENT_TYPE)
    content_encoding = _pop_symbol(properties, p.CONTENT_ENCODING)
    fields: list[object] = [
        p.id_value(message.message_id),
        user_id.encode() if user_id is not None else None,
        address_for(message.destination),
        pop(TYPE, None),
        _amqp_reply_to(pop(REPLY_TO, None), annotations),
        p.id_value(correlation_id) if correlation_id is not None else None,
        content_type,
        content_encoding,
        timestamp(message.expires) if message.expires else None,
        timestamp(message.timestamp) if message.timestamp else None,
        pop(GROUP_ID, None),
        _group_sequence(properties),
        pop(p.REPLY_TO_GROUP_ID, None),
    ]
    while fields[-1] is None:
        fields.pop()
    return fields


def _pop_symbol(properties: dict[str, str], name: str) -> symbol | None:
    """A property that goes out as a symbol field, if it is ASCII (else it stays a property)."""
    text = properties.get(name)
    if text is None or not text.isascii():
        return None
    del properties[name]
    return symbol(text)


def _amqp_reply_to(reply_to: str | None, annotations: dict[symbol, object]) -> str | None:
    """A STOMP reply-to as an AMQP address, typed by ``x-opt-jms-reply-to``; one that names no
    single destination goes out as the text the STOMP producer wrote."""
    if reply_to is None:
        return None
    try:
        targets, _ = parse_destinations(reply_to)
    except BrokerError:
        return reply_to
    if len(targets) != 1:
        return reply_to
    annotations[symbol(JMS_REPLY_TO)] = byte(destination_type_code(targets[0]))
    return address_for(targets[0])


def _group_sequence(properties: dict[str, str]) -> uint | None:
    """JMSXGroupSeq as group-sequence when it is a uint; otherwise it stays a property."""
    text = properties.get(GROUP_SEQ)
    if text is None or not is_decimal(text) or int(text) > _MAX_UINT:
        return None
    del properties[GROUP_SEQ]
    return uint(int(text))


def relay_destination(encoded: bytes) -> Destination:
    """Where a message sent on an anonymous-relay link (null target) goes: its ``to``, typed by
    ``x-opt-jms-dest`` when it is a plain name, as Qpid JMS's anonymous producer sends it."""
    parts = sections.split(encoded)
    view = encoded
    fields = _list(view, parts.head.get(sections.PROPERTIES), 13, "properties")
    to = _typed(fields, 2, str, "to")
    if not to:
        raise BrokerError(
            "a message on an anonymous-relay link needs a 'to' address (queue://NAME, "
            "topic://NAME or a queue name)",
            fatal=False,
        )
    code = _map(view, parts.head.get(sections.MESSAGE_ANNOTATIONS), "message-annotations").get(
        JMS_DEST
    )
    return destination_for_code(to, code if isinstance(code, int) else None)
