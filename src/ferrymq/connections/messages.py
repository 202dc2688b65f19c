"""A message crossing a sender or a receiver: the local broker's delivery (STOMP-shaped, as the
client library hands it) to an AMQP transfer, and an AMQP transfer to a local send.

Both ways reuse the client's AMQP mapping (``ferrymq.amqp.client_mapping``: ``persistent`` ->
header durable, ``priority``, ``expires`` -> absolute-expiry-time, properties -> application
properties), and keep what makes the message the same message on the other side: its message
id (the AMQP ``message-id``; locally the ``message-id`` a forwarding connection may keep), its
creation time, and ``ferrymq.producer-message-id``, which a FerryMQ at either end uses to drop
the copy a resend after a lost settlement would make.
"""

from __future__ import annotations

from proton import Message as AmqpMessage

from ferrymq.amqp.client_mapping import message_for_send, message_headers
from ferrymq.client import Message
from ferrymq.stomp import constants as h
from ferrymq.util.text import is_decimal

__all__ = ["DELIVERY_HEADERS", "amqp_for_local", "local_for_amqp"]

DELIVERY_HEADERS = h.DELIVERY_HEADERS | frozenset(
    {
        h.MESSAGE_ID,
        h.TIMESTAMP,
        "JMS_AMQP_ORIGINAL_ENCODING",  # the AMQP adapter's note of how the body came in
    }
)
"""Headers of a MESSAGE frame that describe this delivery, not the message."""


def amqp_for_local(message: Message, address: str) -> bytes:
    """The AMQP message that carries a local delivery to ``address`` on the remote end."""
    headers = {k: v for k, v in message.headers.items() if k not in DELIVERY_HEADERS}
    amqp = message_for_send(address, message.body, headers)
    amqp.address = address  # as given: the remote's own name, never rewritten to queue://
    if message.message_id:
        amqp.id = message.message_id
    created = message.headers.get(h.TIMESTAMP, "")
    if is_decimal(created):
        amqp.creation_time = int(created) / 1000
    return bytes(amqp.encode())


def local_for_amqp(encoded: bytes, now_ms: int) -> tuple[bytes, dict[str, str]]:
    """Body and SEND headers that route an AMQP transfer into a local queue (the destination is
    the receiver's queue, not the message's ``to``). A ``ttl`` without an expiry time counts
    from now, as a broker receiving it would (AMQP 1.0, 3.2.1 "header")."""
    amqp = AmqpMessage()
    amqp.decode(encoded)
    _destination, _message_id, headers, body = message_headers(amqp)
    for name in (h.DESTINATION, h.REDELIVERED, h.CONTENT_LENGTH):
        headers.pop(name, None)
    if h.EXPIRES not in headers and amqp.ttl:
        headers[h.EXPIRES] = str(now_ms + round(amqp.ttl * 1000))
    return body, headers
