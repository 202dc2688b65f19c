"""MESSAGE frames for one connection, on the STOMP layer's fast path.

A message's own headers are rendered once per STOMP version and shared by all its deliveries
(``Message.wire`` keeps them while they render alike for every connection); what differs per
delivery (subscription, ack id, redelivered, the delivery count) is appended as small header
blocks, and ``ServerSession.assembled_message`` puts the frame together.  Subscription blocks are
cached per subscription.
"""

from __future__ import annotations

from collections.abc import Iterable

from ferrymq.adapters.stomp import dialect
from ferrymq.core.consumer import AckMode, Consumer
from ferrymq.core.effects import Delivery
from ferrymq.core.message import Message
from ferrymq.stomp import constants as h
from ferrymq.stomp.encoder import header_block
from ferrymq.stomp.errors import LocalProtocolError
from ferrymq.stomp.session import ServerSession

_AUTO = AckMode.AUTO
_DELIVERY_COUNT = b"\n" + dialect.DELIVERY_COUNT.encode() + b":%d"


class MessageRenderer:
    """Renders this connection's MESSAGE frames (its version, its temporary names)."""

    def __init__(self, session: ServerSession, names: dialect.TemporaryNames) -> None:
        self.session = session
        self.names = names
        self.version = h.V1_0
        self._sub_has_id: dict[str, bool] = {}
        self._sub_blocks: dict[str, bytes] = {}

    def subscribed(self, subscription_id: str, *, has_id: bool) -> None:
        """A SUBSCRIBE: whether its MESSAGEs carry a ``subscription`` header (a 1.0 SUBSCRIBE
        may have no id)."""
        self._sub_has_id[subscription_id] = has_id
        self._sub_blocks.pop(subscription_id, None)

    def delivery(self, delivery: Delivery) -> bytes:
        """The MESSAGE frame of a delivery from the core (no ack id for an auto subscription)."""
        consumer = delivery.consumer
        entry = delivery.entry
        ack = None if consumer.ack_mode is _AUTO else delivery.ack_id
        return self.message(consumer, entry.message, ack, entry.redelivery_count)

    def message(
        self, consumer: Consumer, message: Message, ack: str | None, redelivery_count: int
    ) -> bytes:
        version = self.version
        wire = message.wire
        if wire is not None and wire[0] == version:
            static = wire[1]
        else:
            fast = dialect.standard_block(message, version)
            if fast is not None:
                static = fast
            else:
                static = self.block(dialect.message_headers(message, self.names).items())
            if dialect.renders_alike_for_all(message):
                message.wire = (version, static)
        sub_block = self._sub_blocks.get(consumer.subscription_id)
        if sub_block is None:
            sub_block = self._subscription_block(consumer.subscription_id)
        # Ack ids and counts are digits: no escaping needed, so no header_block here.
        if ack is not None and version == h.V1_2:
            sub_block += b"\nack:" + ack.encode()
        if redelivery_count:
            sub_block += b"\nredelivered:true"
        return self.session.assembled_message(
            (static, sub_block, _DELIVERY_COUNT % (redelivery_count + 1)), message.body
        )

    def browse_end(self, consumer: Consumer) -> bytes:
        """ActiveMQ ends a browse with an empty MESSAGE carrying ``browser:end``."""
        sub_id = consumer.subscription_id
        headers = [
            (h.DESTINATION, dialect.format_destination(consumer.destination, self.names)),
            (h.MESSAGE_ID, "0"),
            (h.BROWSER, "end"),
        ]
        if self._sub_has_id.get(sub_id, True):
            headers.append((h.SUBSCRIPTION, sub_id))
        return self.session.assembled_message((self.block(headers),), b"")

    def _subscription_block(self, sub_id: str) -> bytes:
        block = (
            self.block([(h.SUBSCRIPTION, sub_id)]) if self._sub_has_id.get(sub_id, True) else b""
        )
        self._sub_blocks[sub_id] = block
        return block

    def block(self, items: Iterable[tuple[str, str]]) -> bytes:
        pairs = list(items)
        try:
            return header_block(pairs, self.version)
        except LocalProtocolError:
            # A header this connection's STOMP version cannot carry (a 1.0 subscriber).
            return header_block(
                list(dialect.sanitize_for_version(dict(pairs)).items()), self.version
            )
