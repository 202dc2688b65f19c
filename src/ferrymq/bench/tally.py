"""Counting sequence numbers: which arrived, which twice, which never.

Every message of a run carries a sequence number (0 .. total-1, warm-up first), so a consumer can
prove it got each one exactly once and a producer can do the same for its receipts. One byte per
number keeps a million messages in a megabyte.
"""

from __future__ import annotations

MISSING_EXAMPLES = 10


class SeqTally:
    __slots__ = ("dups", "highest", "reordered", "seen", "unique")

    def __init__(self, capacity: int = 0) -> None:
        self.seen = bytearray(capacity)
        self.unique = 0
        self.dups = 0
        self.reordered = 0
        self.highest = -1

    def add(self, seq: int) -> bool:
        """Count ``seq`` (>= 0); True if it is new."""
        seen = self.seen
        if seq >= len(seen):
            seen.extend(bytes(max(seq + 1 - len(seen), len(seen), 4096)))
        if seen[seq]:
            self.dups += 1
            return False
        seen[seq] = 1
        self.unique += 1
        if seq < self.highest:
            self.reordered += 1
        else:
            self.highest = seq
        return True

    def count_below(self, stop: int) -> int:
        """How many distinct numbers below ``stop`` arrived."""
        return self.seen.count(1, 0, stop)

    def beyond(self, total: int) -> int:
        """Distinct numbers at or past ``total``: messages nobody sent in this run."""
        return self.seen.count(1, total) if total < len(self.seen) else 0

    def missing(self, total: int) -> tuple[int, tuple[int, ...]]:
        """How many of 0 .. total-1 never arrived, and the first few of them."""
        seen = self.seen
        if len(seen) < total:
            seen.extend(bytes(total - len(seen)))
        count = total - seen.count(1, 0, total)
        examples: list[int] = []
        position = seen.find(0, 0, total)
        while position >= 0 and len(examples) < MISSING_EXAMPLES:
            examples.append(position)
            position = seen.find(0, position + 1, total)
        return count, tuple(examples)
