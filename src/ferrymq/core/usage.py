"""Resource accounting behind paging and producer flow control (ActiveMQ's ``systemUsage``).

Three budgets: memory (messages held in RAM), store (persistent messages on disk) and temp
(non-persistent messages spooled to disk because memory was short).  A container stops keeping
new messages in memory once memory use passes the cursor high-water mark (70%, ActiveMQ's
``cursorMemoryHighWaterMark``) and writes them to the store to be paged in later; producers wait
only when the store or temp budget is exhausted, or memory itself is full.
"""

from __future__ import annotations

from dataclasses import dataclass

CURSOR_HIGH_WATER_PERCENT = 70


@dataclass(frozen=True, slots=True)
class UsageLimits:
    memory_bytes: int = 512 * 1024 * 1024
    store_bytes: int = 100 * 1024**3
    temp_bytes: int = 50 * 1024**3


class SystemUsage:
    __slots__ = ("_high_water", "limits", "memory_used", "store_used", "temp_used")

    def __init__(self, limits: UsageLimits | None = None) -> None:
        self.limits = limits or UsageLimits()
        self.memory_used = 0
        self.store_used = 0
        self.temp_used = 0
        self._high_water = self.limits.memory_bytes * CURSOR_HIGH_WATER_PERCENT // 100

    def should_page_out(self, size: int) -> bool:
        return self.memory_used + size > self._high_water

    @property
    def memory_full(self) -> bool:
        return self.memory_used >= self.limits.memory_bytes

    @property
    def store_full(self) -> bool:
        return self.store_used >= self.limits.store_bytes

    @property
    def temp_full(self) -> bool:
        return self.temp_used >= self.limits.temp_bytes

    def full_for(self, persistent: bool) -> str | None:
        """Which budget stops a producer of this kind of message, or None when there is room."""
        if persistent and self.store_full:
            return "store"
        if not persistent and self.temp_full and self.memory_used >= self._high_water:
            return "temp"
        if self.memory_full:
            return "memory"
        return None

    def percent(self) -> dict[str, float]:
        limits = self.limits
        return {
            "memory": 100.0 * self.memory_used / limits.memory_bytes,
            "store": 100.0 * self.store_used / limits.store_bytes,
            "temp": 100.0 * self.temp_used / limits.temp_bytes,
        }
