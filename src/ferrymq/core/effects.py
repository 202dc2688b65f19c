"""What the core decided and the service must now do ("decide, then do").

The core appends to one ``Effects`` while it handles a batch of calls; the service drains it once
per batch, submits all store operations as one write (one commit), and only then sends what
depends on that commit.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from ferrymq.core.consumer import Consumer
from ferrymq.core.destination import Destination
from ferrymq.core.entry import Entry
from ferrymq.core.message import Message
from ferrymq.store.base import StoreOp


@dataclass(slots=True)
class Delivery:
    """Send ``entry`` to ``consumer`` under ``ack_id``.

    ``after_commit``: the store must first record that this message may have been delivered
    (or that it exists at all), so a crash cannot lose it or bring it back unflagged; the service
    writes the frame only after the commit that carries this batch's store operations.
    """

    consumer: Consumer
    entry: Entry
    ack_id: str
    after_commit: bool


@dataclass(frozen=True, slots=True)
class CloseConnection:
    connection_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class PageIn:
    """Load up to ``limit`` messages of ``container`` from ``from_seq`` and hand them back."""

    container: str
    from_seq: int
    limit: int


class TraceKind(enum.StrEnum):
    SENT = "sent"
    """Accepted from a producer (a network bridge is one too: the broker path says so)."""
    STORED = "stored"
    """Written to the store, in ``container`` (a queue, or one durable subscription)."""
    DELIVERED = "delivered"
    """Handed to a consumer; the service tells a forward (network consumer) and a redelivery
    apart."""
    ACKED = "acked"
    EXPIRED = "expired"
    DEAD_LETTERED = "dead_lettered"
    SUBSCRIBED = "subscribed"
    UNSUBSCRIBED = "unsubscribed"


@dataclass(frozen=True, slots=True)
class TraceEvent:
    """A message event for the message trace (collected only while ``RegionBroker.tracing``).

    The core has no clock: the service stamps each event with the time it drains it.
    """

    kind: TraceKind
    message: Message | None
    """None for a consumer's arrival or departure."""
    destination: Destination
    container: str | None = None
    consumer: Consumer | None = None
    redelivery_count: int = 0
    cause: str | None = None
    """Why a message was dead-lettered."""
    target: Destination | None = None
    """The dead-letter queue it went to (None: discarded)."""


@dataclass(slots=True)
class Effects:
    deliveries: list[Delivery] = field(default_factory=list)
    store_ops: list[StoreOp] = field(default_factory=list)
    closes: list[CloseConnection] = field(default_factory=list)
    page_ins: list[PageIn] = field(default_factory=list)
    trace: list[TraceEvent] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.deliveries or self.store_ops or self.closes or self.page_ins or self.trace)
