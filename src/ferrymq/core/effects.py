"""What the core decided and the service must now do ("decide, then do").

The core appends to one ``Effects`` while it handles a batch of calls; the service drains it once
per batch, submits all store operations as one write (one commit), and only then sends what
depends on that commit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ferrymq.core.consumer import Consumer
from ferrymq.core.entry import Entry
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


@dataclass(slots=True)
class Effects:
    deliveries: list[Delivery] = field(default_factory=list)
    store_ops: list[StoreOp] = field(default_factory=list)
    closes: list[CloseConnection] = field(default_factory=list)
    page_ins: list[PageIn] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.deliveries or self.store_ops or self.closes or self.page_ins)
