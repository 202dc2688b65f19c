"""Messages waiting for a consumer, in dispatch order: highest priority first, then oldest first.

One ``OrderedDict`` per JMS priority (0-9) keyed by sequence number: appending, popping the head
and removing from the middle (a message skipped by selectors, then taken) are all O(1), which a
plain dict used as a FIFO is not.  Redelivered messages go back to their original place, so the
per-priority dicts are kept sorted by sequence, which costs a re-sort only on that rare path.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator

from ferrymq.core.entry import Entry
from ferrymq.core.message import MAX_PRIORITY, MIN_PRIORITY

_LEVELS = MAX_PRIORITY - MIN_PRIORITY + 1


class PendingList:
    __slots__ = ("_count", "_levels", "_top")

    def __init__(self) -> None:
        self._levels: list[OrderedDict[int, Entry]] = [OrderedDict() for _ in range(_LEVELS)]
        self._count = 0
        self._top = -1
        """Highest level that may be non-empty (a hint that saves scanning empty levels)."""

    def __len__(self) -> int:
        return self._count

    def __bool__(self) -> bool:
        return self._count > 0

    def append(self, entry: Entry) -> None:
        """Add a new entry; its sequence is higher than any already present at its level."""
        level = self._levels[entry.priority]
        level[entry.seq] = entry
        self._count += 1
        if entry.priority > self._top:
            self._top = entry.priority

    def restore(self, entry: Entry) -> None:
        """Put a redelivered entry back at its original position."""
        level = self._levels[entry.priority]
        needs_sort = bool(level) and next(reversed(level)) > entry.seq
        level[entry.seq] = entry
        if needs_sort:
            for seq in sorted(level):
                level.move_to_end(seq)
        self._count += 1
        if entry.priority > self._top:
            self._top = entry.priority

    def remove(self, entry: Entry) -> bool:
        removed = self._levels[entry.priority].pop(entry.seq, None)
        if removed is None:
            return False
        self._count -= 1
        return True

    def __iter__(self) -> Iterator[Entry]:
        """Entries in dispatch order.  Do not mutate while iterating; collect, then remove."""
        for priority in range(self._top, MIN_PRIORITY - 1, -1):
            level = self._levels[priority]
            if level:
                yield from level.values()

    def first(self) -> Entry | None:
        for priority in range(self._top, MIN_PRIORITY - 1, -1):
            level = self._levels[priority]
            if level:
                self._top = priority
                return next(iter(level.values()))
        self._top = -1
        return None

    def clear(self) -> list[Entry]:
        entries = list(self)
        for level in self._levels:
            level.clear()
        self._count = 0
        self._top = -1
        return entries
