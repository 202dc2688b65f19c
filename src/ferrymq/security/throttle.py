"""Slowing down repeated failed logins, as a pure policy.

A password guesser gets a few tries at full speed (a person mistypes), then every further
attempt waits, before its password is even checked, a delay that doubles up to a ceiling; a
success waits as long as a failure would, so that a guesser cannot take "no answer yet" for "wrong
password" and move on.  Failures are counted per address and user (a success forgives only that
pair: a valid low-privilege account does not reset the count of the one being guessed) and per
address (more free failures there: several people behind one NAT mistype too); IPv6 addresses
count per /64, the block one subscriber is usually given (``address_key``).  How many logins of
one address are checked at once is the enforcing code's business (``service.security.LoginQueue``,
``admin.auth.AdminAccess``).

The enforcing code (the admin API's basic auth, a protocol adapter's CONNECT) waits ``wait_s``,
checks, then records ``failed`` or ``succeeded``.  Time comes in as an
argument (monotonic seconds), so the policy is tested without a clock; the tables are bounded,
dropping the longest-quiet entry first, so a spray of source addresses cannot grow them.
"""

from __future__ import annotations

import ipaddress
from collections import OrderedDict
from dataclasses import dataclass
from typing import Final, TypeVar

_K = TypeVar("_K")

FREE_FAILURES: Final = 3
"""Failures of one user from one address answered at once: a person mistypes."""
ADDRESS_FREE_FAILURES: Final = 10
"""Failures of any users from one address answered at once."""
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


def address_key(address: str | None) -> str:
    """What failures are counted under: the address, or its /64 for IPv6."""
    text = (address or "").strip("[]").partition("%")[0]
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return address or ""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is None:
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip.ipv4_mapped or ip) if isinstance(ip, ipaddress.IPv6Address) else str(ip)


class LoginThrottle:
    def __init__(
        self,
        *,
        free_failures: int = FREE_FAILURES,
        address_free_failures: int = ADDRESS_FREE_FAILURES,
        first_delay_s: float = FIRST_DELAY_S,
        max_delay_s: float = MAX_DELAY_S,
        forget_after_s: float = FORGET_AFTER_S,
        max_addresses: int = MAX_ADDRESSES,
    ) -> None:
        self.free_failures = free_failures
        self.address_free_failures = address_free_failures
        self.first_delay_s = first_delay_s
        self.max_delay_s = max_delay_s
        self.forget_after_s = forget_after_s
        self.max_addresses = max_addresses
        self._pairs: OrderedDict[tuple[str, str], _Record] = OrderedDict()
        self._addresses: OrderedDict[str, _Record] = OrderedDict()

    def wait_s(self, address: str | None, user: str | None, now_s: float) -> float:
        """How long the next attempt waits before it is checked (the delay its failure would
        be answered after)."""
        key = address_key(address)
        pair = self._current(self._pairs.get((key, user or "")), now_s)
        whole = self._current(self._addresses.get(key), now_s)
        return max(self.delay_s(pair + 1), self._address_delay_s(whole + 1))

    def failed(self, address: str | None, now_s: float, user: str | None = None) -> float:
        """Record a failed login of ``user`` from ``address``; the delay it earned."""
        key = address_key(address)
        pair = self._record(self._pairs, (key, user or ""), now_s)
        whole = self._record(self._addresses, key, now_s)
        return max(self.delay_s(pair), self._address_delay_s(whole))

    def succeeded(self, address: str | None, user: str | None = None) -> None:
        """A good login of ``user`` from ``address``: that pair's failures are forgiven (only
        them). Without a ``user`` (a caller that does not tell users apart), the address's."""
        key = address_key(address)
        self._pairs.pop((key, user or ""), None)
        if user is None:
            self._addresses.pop(key, None)

    def delay_s(self, failures: int) -> float:
        """The wait before answering the ``failures``-th failure of one user in a row."""
        return self._delay(failures - self.free_failures)

    def failures(self, address: str | None, user: str | None = None) -> int:
        """The failures counted for ``address`` (all users) or for one of its users."""
        key = address_key(address)
        record = self._addresses.get(key) if user is None else self._pairs.get((key, user))
        return 0 if record is None else record.failures

    def _address_delay_s(self, failures: int) -> float:
        return self._delay(failures - self.address_free_failures)

    def _delay(self, over: int) -> float:
        if over <= 0:
            return 0.0
        return min(self.max_delay_s, self.first_delay_s * float(2 ** min(over - 1, 32)))

    def _current(self, record: _Record | None, now_s: float) -> int:
        if record is None or now_s - record.last_s >= self.forget_after_s:
            return 0
        return record.failures

    def _record(self, table: OrderedDict[_K, _Record], key: _K, now_s: float) -> int:
        record = table.pop(key, None)
        if record is None or now_s - record.last_s >= self.forget_after_s:
            record = _Record(0, now_s)
        record.failures += 1
        record.last_s = now_s
        table[key] = record  # most recent last
        while len(table) > self.max_addresses:
            table.popitem(last=False)
        return record.failures
