"""Broker-side duplicate detection by producer message id.

A failover client re-sends what it is unsure about, each message carrying the producer's own id
(``ferrymq.producer-message-id``).  A re-sent id still in the window is acknowledged (receipt)
but not stored or dispatched again.  The window is a count of the most recent ids (ActiveMQ's
producer audit is 2048 per producer for 64 producers; FerryMQ keeps one broker-wide window), and
the store keeps it so a new master inherits it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

DEFAULT_WINDOW = 65536


class DuplicateDetector:
    __slots__ = ("_ids", "duplicates", "window")

    def __init__(self, window: int = DEFAULT_WINDOW) -> None:
        self.window = window
        self._ids: OrderedDict[str, None] = OrderedDict()
        self.duplicates = 0

    def seed(self, ids: Iterable[str]) -> None:
        for producer_message_id in ids:
            self.record(producer_message_id)

    def is_duplicate(self, producer_message_id: str) -> bool:
        if producer_message_id in self._ids:
            self.duplicates += 1
            return True
        return False

    def record(self, producer_message_id: str) -> None:
        ids = self._ids
        ids[producer_message_id] = None
        if len(ids) > self.window:
            ids.popitem(last=False)

    def ids(self) -> list[str]:
        """The window, oldest first."""
        return list(self._ids)

    def __len__(self) -> int:
        return len(self._ids)
