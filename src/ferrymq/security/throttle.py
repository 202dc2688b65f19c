"""Slowing down repeated failed logins from one address, as a pure policy.

A password guesser gets a few tries at full speed (a person mistypes), then each further failure
from the same address is answered only after a delay that doubles up to a ceiling; one success,
or a quiet spell, forgets the address.  The enforcing code (the admin API's basic auth, a
protocol adapter's CONNECT) asks ``delay_s`` after recording a failure and waits that long
before it answers, holding only that one connection.  Time comes in as an argument (monotonic
seconds), so the policy is tested without a clock; the table of addresses is bounded, dropping
the longest-quiet address first, so a spray of source addresses cannot grow it without end.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Final

FREE_FAILURES: Final = 3
"""Failures answered at once: a person who mistypes a password is not slowed down."""
FIRST_DELAY_S: Final = 0.25
MAX_DELAY_S: Final = 5.0
"""The ceiling: long enough to make guessing slow, short enough for a client's timeout."""
FORGET_AFTER_S: Final = 300.0
"""An address with no failure for this long starts again with free failures."""
MAX_ADDRESSES: Final = 10_000


@dataclass(slots=True)
class _Record:
    failures: int
    last_s: float


class LoginThrottle:
    def __init__(
        self,
        *,
        free_failures: int = FREE_FAILURES,
        first_delay_s: float = FIRST_DELAY_S,
        max_delay_s: float = MAX_DELAY_S,
        forget_after_s: float = FORGET_AFTER_S,
        max_addresses: int = MAX_ADDRESSES,
    ) -> None:
        self.free_failures = free_failures
        self.first_delay_s = first_delay_s
        self.max_delay_s = max_delay_s
        self.forget_after_s = forget_after_s
        self.max_addresses = max_addresses
        self._records: OrderedDict[str, _Record] = OrderedDict()

    def failed(self, address: str | None, now_s: float) -> float:
        """Record a failed login from ``address``; how long to wait before answering it."""
        key = address or ""
        record = self._records.pop(key, None)
        if record is None or now_s - record.last_s >= self.forget_after_s:
            record = _Record(0, now_s)
        record.failures += 1
        record.last_s = now_s
        self._records[key] = record  # most recent last
        while len(self._records) > self.max_addresses:
            self._records.popitem(last=False)
        return self.delay_s(record.failures)

    def succeeded(self, address: str | None) -> None:
        """A good login from ``address``: its earlier failures are forgiven."""
        self._records.pop(address or "", None)

    def delay_s(self, failures: int) -> float:
        """The wait before answering the ``failures``-th failure in a row."""
        over = failures - self.free_failures
        if over <= 0:
            return 0.0
        return min(self.max_delay_s, self.first_delay_s * float(2 ** min(over - 1, 32)))

    def failures(self, address: str | None) -> int:
        record = self._records.get(address or "")
        return 0 if record is None else record.failures
