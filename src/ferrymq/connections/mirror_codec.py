"""A mirror event, as the forwarder reads it from the mirror queue, to the AMQP transfer Artemis's
mirror sends (ActiveMQ Artemis manual, "Broker Connections", "Mirroring").

The core's tap (``ferrymq.core.mirror``) wrote each event as a message of the mirror queue whose
``ferrymq.mirror.*`` properties say what it is; the forwarder takes it in process
(``LocalMessage``: the message's own properties, ``encode_local``) or, as a client, STOMP-shaped
(``encode_event``), and this module makes the wire form, the same from either:

- a send: the original message (message id, creation time, durable, priority, expiry, its
  properties as application properties, the body in one data section, as the broker's other
  AMQP bridges carry it: ``connections.messages``), after delivery annotations
  ``x-opt-amq-mr-id`` (the origin's message id), ``x-opt-amq-bkr-id`` (the origin node, when it
  is not this broker) and ``x-opt-amq-mr-dst`` (``queue://X`` or ``topic://X``);
- a control event (``postAck``, ``createQueue``, ``deleteQueue``, ``addAddress``,
  ``deleteAddress``): header durable, message annotations ``x-opt-amq-mr-ev-type`` (a symbol),
  ``x-opt-amq-mr-adr``, ``x-opt-amq-mr-qu``, ``x-opt-amq-bkr-id``, ``x-opt-amq-mr-ack-reason``
  (a ubyte, left out for a plain ack), and an amqp-value string body (the message id, the
  JSON description, or the name).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass

from proton import symbol, timestamp, ubyte, uint

from ferrymq.amqp.client_mapping import address_for
from ferrymq.amqp.encoding import encode, encode_section
from ferrymq.client import Message
from ferrymq.connections.api import LocalMessage
from ferrymq.connections.messages import DELIVERY_HEADERS
from ferrymq.stomp import constants as h
from ferrymq.util.text import is_decimal

__all__ = [
    "BROKER_ID",
    "MIRROR_CAPABILITY",
    "MirrorEvent",
    "encode_event",
    "encode_local",
    "read_event",
]

MIRROR_CAPABILITY = "amq.mirror"
BROKER_ID = "x-opt-amq-bkr-id"
MESSAGE_ID = "x-opt-amq-mr-id"
DESTINATION = "x-opt-amq-mr-dst"
EVENT_TYPE = "x-opt-amq-mr-ev-type"
ADDRESS = "x-opt-amq-mr-adr"
QUEUE = "x-opt-amq-mr-qu"
ACK_REASON = "x-opt-amq-mr-ack-reason"
ROUTE = "x-opt-ferrymq-mr-route"
"""FerryMQ's: a message the operator routed again (move, retry) is a new send for the target's
duplicate detection, though its message id is the same (Artemis gives such a copy a new id)."""
ACKED_AT = "x-opt-ferrymq-mr-acked-at"
"""FerryMQ's, on a ``postAck`` passed along a chain: the node where the consumer acked (absent:
the sender of the transfer), which the ack is never sent to."""

# The tap's property names (``ferrymq.core.mirror``, which this layer may not import; a test
# checks both spell them alike).
PREFIX = "ferrymq.mirror."
P_EVENT = PREFIX + "event"
P_DESTINATION = PREFIX + "dst"
P_ORIGIN = PREFIX + "origin"
P_SKIP = PREFIX + "skip"
P_QUEUE = PREFIX + "queue"
P_REASON = PREFIX + "reason"
P_MESSAGE = PREFIX + "id"
P_PERSISTENT = PREFIX + "persistent"
P_PRIORITY = PREFIX + "priority"
P_EXPIRES = PREFIX + "expires"
P_ROUTE = PREFIX + "route"
P_ACKED_AT = PREFIX + "acked-at"
SEND = "send"

_SCHEDULING = ("AMQ_SCHEDULED_DELAY", "AMQ_SCHEDULED_PERIOD", "AMQ_SCHEDULED_REPEAT")
"""Already applied on the source: the target must not hold the message back again."""
_DELIVERY_ANNOTATIONS, _HEADER, _PROPERTIES, _APPLICATION_PROPERTIES = 0x71, 0x70, 0x73, 0x74
_DATA, _VALUE = 0x75, 0x77
_MESSAGE_ANNOTATIONS = 0x72
_DURABLE_HEADER = encode_section(_HEADER, [True])
_UINT = struct.Struct(">I")
_ORIGINAL_ENCODING = "JMS_AMQP_ORIGINAL_ENCODING"
"""How the AMQP adapter noted a body that came over AMQP (its ``body`` module's codes)."""
_ENCODED = frozenset({"0", "3", "7", "8"})
"""Codes whose body is the sender's encoded body section(s)."""
_USER_ID = "JMSXUserID"
_FIELD_HEADERS = frozenset(
    {
        h.PERSISTENT,
        h.PRIORITY,
        h.EXPIRES,
        "type",
        "reply-to",
        "correlation-id",
        "content-type",
        "content-encoding",
        "JMSXGroupID",
        "JMSXGroupSeq",
        _USER_ID,
        _ORIGINAL_ENCODING,
    }
)
"""Headers that travel in an AMQP field (or not at all), not as application properties."""


@dataclass(frozen=True, slots=True)
class MirrorEvent:
    """What the forwarder needs to know of an event before it encodes it."""

    kind: str
    destination: str
    """``queue://X`` or ``topic://X``."""
    origin: str | None
    """The node the message (or the acked message) was first sent to; None: this broker."""
    skip: str | None
    """The node on whose behalf the mirror target applied what caused this event."""
    acked_at: str | None = None
    """An ack passed along a chain: the node where its consumer acked."""

    def returns_to(self, peer: str) -> bool:
        """Whether sending it to ``peer`` would send the peer its own event back (a loop): a
        send that came from it, or anything it caused here. An ack of the peer's message is
        no loop: the peer holds that message and must learn of the ack."""
        if self.kind == SEND:
            return peer in (self.origin, self.skip)
        return peer in (self.skip, self.acked_at)


def read_event(headers: Mapping[str, str]) -> MirrorEvent:
    return MirrorEvent(
        headers.get(P_EVENT, SEND),
        headers.get(P_DESTINATION, ""),
        headers.get(P_ORIGIN) or None,
        headers.get(P_SKIP) or None,
        headers.get(P_ACKED_AT) or None,
    )


def encode_event(message: Message, event: MirrorEvent) -> bytes:
    """The transfer that reproduces ``event`` (received as a STOMP client) on the target."""
    headers = message.headers
    created = headers.get(h.TIMESTAMP, "")
    return _encode(message.message_id, headers, message.body, event, created)


def encode_local(message: LocalMessage, event: MirrorEvent) -> bytes:
    """The transfer that reproduces ``event`` (taken in process) on the target."""
    return _encode(
        message.message_id, _local_headers(message), message.body, event, str(message.timestamp)
    )


def _local_headers(message: LocalMessage) -> Mapping[str, str]:
    """What a STOMP consumer would see of the message beyond the delivery (its properties, and
    the fields it carries as headers): the properties themselves when there is nothing else."""
    original, path, producer_id = (
        message.original_destination,
        message.broker_path,
        message.producer_message_id,
    )
    if original is None and not path and producer_id is None:
        return message.properties
    headers = dict(message.properties)
    if original is not None:
        kind, _, name = original.partition("://")
        headers[h.ORIGINAL_DESTINATION] = f"/{kind}/{name}"
    if path:
        headers[h.BROKER_PATH] = ",".join(path)
    if producer_id is not None:
        headers[h.FERRYMQ_PRODUCER_MESSAGE_ID] = producer_id
    return headers


def _encode(
    message_id: str, headers: Mapping[str, str], body: bytes, event: MirrorEvent, created: str
) -> bytes:
    if event.kind == SEND:
        return _send(message_id, headers, body, event, created)
    return _control(headers, body, event)


def _send(
    message_id: str, headers: Mapping[str, str], body: bytes, event: MirrorEvent, created: str
) -> bytes:
    original = {
        name: value
        for name, value in headers.items()
        if name not in DELIVERY_HEADERS
        and not name.startswith(PREFIX)
        and name not in _SCHEDULING
        and name not in _FIELD_HEADERS
    }
    priority = headers.get(P_PRIORITY, "4")
    header = _header(
        headers.get(P_PERSISTENT) == "true", min(int(priority), 9) if is_decimal(priority) else 4
    )
    annotations: list[tuple[str, object]] = [
        (MESSAGE_ID, message_id),
        (DESTINATION, event.destination),
    ]
    if event.origin is not None:
        annotations.append((BROKER_ID, event.origin))
    route = headers.get(P_ROUTE)
    if route:
        annotations.append((ROUTE, route))
    encoded = (
        header
        + _symbol_map(_DELIVERY_ANNOTATIONS, annotations)
        + encode_section(_PROPERTIES, _fields(message_id, headers, event, created))
    )
    if original:
        encoded += encode_section(_APPLICATION_PROPERTIES, original)
    return encoded + _body(body, headers)


def _fields(
    message_id: str, headers: Mapping[str, str], event: MirrorEvent, created: str
) -> list[object]:
    """The properties section (AMQP 1.0 part 3, 3.2.4) of the original message."""
    get = headers.get
    expires = get(P_EXPIRES, "")
    reply_to, sequence = get("reply-to"), get("JMSXGroupSeq", "")
    content_type, encoding = get("content-type"), get("content-encoding")
    user = get(_USER_ID)
    fields: list[object] = [
        message_id,
        user.encode() if user is not None else None,
        event.destination,
        get("type"),
        address_for(reply_to) if reply_to is not None else None,
        get("correlation-id"),
        symbol(content_type) if content_type is not None else None,
        symbol(encoding) if encoding is not None else None,
        timestamp(int(expires)) if is_decimal(expires) and int(expires) > 0 else None,
        timestamp(int(created)) if is_decimal(created) and int(created) > 0 else None,
        get("JMSXGroupID"),
        uint(int(sequence)) if is_decimal(sequence) and int(sequence) < 2**32 else None,
    ]
    while fields[-1] is None:
        fields.pop()
    return fields


def _body(body: bytes, headers: Mapping[str, str]) -> bytes:
    """The body as the broker's AMQP consumers get it: a message that came over AMQP as its
    sender wrote it (the AMQP adapter's ``JMS_AMQP_ORIGINAL_ENCODING`` codes), text as an
    amqp-value string, anything else as one data section."""
    code = headers.get(_ORIGINAL_ENCODING, "")
    if code in _ENCODED:
        return body  # the encoded body section(s), kept byte for byte
    if code == "1":
        return b""
    if code == "4":
        return b"\x00\x53\x77\x40"
    if code == "6":
        return encode_section(_VALUE, body)
    text = code == "5" or (code == "" and _is_text(body, headers.get("content-type")))
    if text:
        return encode_section(_VALUE, body.decode())
    return encode_section(_DATA, body)


def _is_text(body: bytes, content_type: str | None) -> bool:
    if content_type is not None and not content_type.lower().startswith("text/"):
        return False
    try:
        body.decode()
    except UnicodeDecodeError:
        return False
    return True


def _control(headers: Mapping[str, str], body: bytes, event: MirrorEvent) -> bytes:
    annotations: list[tuple[str, object]] = [
        (EVENT_TYPE, symbol(event.kind)),
        (ADDRESS, event.destination),
    ]
    queue = headers.get(P_QUEUE)
    if queue is not None:
        annotations.append((QUEUE, queue))
    if event.origin is not None:
        annotations.append((BROKER_ID, event.origin))
    if event.acked_at is not None:
        annotations.append((ACKED_AT, event.acked_at))
    reason = headers.get(P_REASON, "0")
    if is_decimal(reason) and int(reason):
        annotations.append((ACK_REASON, ubyte(int(reason))))
    value = headers.get(P_MESSAGE, "") if event.kind == "postAck" else body.decode()
    # The house encoder, not proton's Message: one of these goes out per acknowledgement, and
    # proton's costs several times as much per event (issue 18, "Performance").
    return (
        _DURABLE_HEADER
        + _symbol_map(_MESSAGE_ANNOTATIONS, annotations)
        + encode_section(_VALUE, value)
    )


_KEYS: dict[str, bytes] = {
    name: encode(symbol(name))
    for name in (
        BROKER_ID,
        MESSAGE_ID,
        DESTINATION,
        EVENT_TYPE,
        ADDRESS,
        QUEUE,
        ACK_REASON,
        ROUTE,
        ACKED_AT,
    )
}
"""The annotation keys, encoded once (two or more go out with every event)."""
_HEADERS = {
    (durable, priority): encode_section(_HEADER, [durable, ubyte(priority)])
    for durable in (False, True)
    for priority in range(10)
}


def _header(durable: bool, priority: int) -> bytes:
    return _HEADERS[durable, priority]


def _symbol_map(descriptor: int, entries: list[tuple[str, object]]) -> bytes:
    """An annotations section (a map of symbol keys, AMQP 1.0 part 3, 3.2.10), the keys'
    encodings taken from ``_KEYS``: what ``encode_section`` makes of the same dict."""
    body = b"".join([_KEYS[key] + encode(value) for key, value in entries])
    count = 2 * len(entries)
    if len(body) + 1 < 256:
        head = bytes((0x00, 0x53, descriptor, 0xC1, len(body) + 1, count))
    else:
        head = bytes((0x00, 0x53, descriptor, 0xD1)) + _UINT.pack(len(body) + 4)
        head += _UINT.pack(count)
    return head + body
