"""Which broker next, how long to wait, when to give up: the failover policy, as pure code.

No clock and no I/O: the loop in ``transport`` asks, sleeps and connects. The rules are
ActiveMQ's FailoverTransport (reference §1.3):

* A *pass* tries every URI of the connect list once. The list is the updated URIs (pushed by a
  broker or read from ``updateURIsURL``), which take precedence, then the static ones; with
  ``randomize`` each group is shuffled again on every pass; the URI that just failed goes last.
* Waits: none before the very first connect; ``initialReconnectDelay`` before the first pass
  after an established connection dropped; after each failed pass the back-off step, which
  starts at ``initialReconnectDelay`` (``reconnectDelay`` before the first connection, if set)
  and is multiplied by ``backOffMultiplier`` up to ``maxReconnectDelay``. ActiveMQ 5.17 also
  sleeps the step again before every later pass (so it waits twice per failed pass); FerryMQ
  waits once, as the reference describes it.
* Limits count passes: ``startupMaxReconnectAttempts`` until the first connection (-1: use
  ``maxReconnectAttempts``), then ``maxReconnectAttempts``. -1 is unlimited; 0 is one pass at
  start-up and no reconnect at all after a drop; N is N passes.
* ``warnAfterReconnectAttempts`` N: warn on failed pass 1 and every Nth.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import Final

from ferrymq.client.failover.options import INFINITE, FailoverOptions
from ferrymq.util.backoff import ExponentialBackOff
from ferrymq.util.uri import URI

STOMP_PORT: Final = 61613
"""The port of a URL that names none (as ``TcpTransport`` assumes)."""

BrokerKey = tuple[str, int]


def broker_key(uri: URI) -> BrokerKey:
    """What makes two URIs the same broker: host (case-insensitive) and port. ``tcp:`` and
    ``stomp:`` are the same protocol here, and options do not change the broker (ActiveMQ's
    ``compareURIs`` also ignores scheme and options, and resolves host names, which a pure
    policy cannot)."""
    return ((uri.host or "").lower(), uri.port if uri.port is not None else STOMP_PORT)


def unique(uris: Iterable[URI], exclude: Iterable[URI] = ()) -> list[URI]:
    """``uris`` without repeats (by broker) and without those in ``exclude``."""
    seen = {broker_key(uri) for uri in exclude}
    result: list[URI] = []
    for uri in uris:
        key = broker_key(uri)
        if key not in seen:
            seen.add(key)
            result.append(uri)
    return result


class ReconnectPolicy:
    """The decisions of the failover loop, from its options alone."""

    __slots__ = ("_back_off", "_startup_back_off", "options")

    def __init__(self, options: FailoverOptions) -> None:
        self.options = options
        # An initial wait longer than maxReconnectDelay is kept (ActiveMQ caps grown waits only).
        self._back_off = ExponentialBackOff.of(options, jitter_ms=options.reconnect_delay_jitter_ms)
        self._startup_back_off = ExponentialBackOff.of(
            options,
            initial_ms=options.reconnect_delay_ms,
            jitter_ms=options.reconnect_delay_jitter_ms,
        )

    # ---- waiting ----

    def back_off_ms(self, failed_passes: int, *, startup: bool, jitter: float = 0.0) -> int:
        """The wait after ``failed_passes`` (>= 1) failed passes in a row. ``jitter`` in
        [0, 1) scales ``reconnectDelayJitter``."""
        if failed_passes < 1:
            raise ValueError("back-off follows at least one failed pass")
        back_off = self._startup_back_off if startup else self._back_off
        return back_off.delay_ms(failed_passes, jitter)

    def delay_before_pass_ms(self, pass_number: int, *, startup: bool, jitter: float = 0.0) -> int:
        """How long to wait before pass ``pass_number`` (1-based) of a connect episode:
        ``startup`` for the first connection, else a reconnect after a drop."""
        if pass_number < 1:
            raise ValueError("passes are numbered from 1")
        if pass_number == 1:
            return 0 if startup else self.options.initial_reconnect_delay_ms
        return self.back_off_ms(pass_number - 1, startup=startup, jitter=jitter)

    # ---- giving up ----

    def pass_limit(self, *, startup: bool) -> int | None:
        """How many passes an episode may make (None: no limit)."""
        options = self.options
        limit = options.max_reconnect_attempts
        if startup:
            if options.startup_max_reconnect_attempts != INFINITE:
                limit = options.startup_max_reconnect_attempts
            return None if limit < 0 else max(limit, 1)
        return None if limit < 0 else limit

    def may_reconnect(self) -> bool:
        """Whether a dropped connection is re-established at all (``maxReconnectAttempts``
        0: no)."""
        return self.pass_limit(startup=False) != 0

    def gives_up(self, failed_passes: int, *, startup: bool) -> bool:
        limit = self.pass_limit(startup=startup)
        return limit is not None and failed_passes >= limit

    def warns(self, failed_passes: int) -> bool:
        """Whether failed pass number ``failed_passes`` deserves a WARNING log line."""
        every = self.options.warn_after_reconnect_attempts
        return every > 0 and (failed_passes == 1 or failed_passes % every == 0)

    # ---- choosing ----

    def connect_list(
        self,
        static: Sequence[URI],
        updated: Sequence[URI],
        failed: URI | None,
        rng: random.Random,
    ) -> list[URI]:
        """The URIs of one pass, in the order to try them."""
        first = unique(updated)
        rest = unique(static, exclude=first)
        if self.options.randomize:
            rng.shuffle(first)
            rng.shuffle(rest)
        candidates = first + rest
        if failed is not None:
            key = broker_key(failed)
            moved = [uri for uri in candidates if broker_key(uri) == key]
            candidates = [uri for uri in candidates if broker_key(uri) != key] + moved
        return candidates

    def priority_list(self, static: Sequence[URI]) -> list[URI]:
        """The priority brokers in order: ``priorityURIs``, else the first static URI."""
        if self.options.priority_uris:
            return unique(self.options.priority_uris)
        return list(static[:1])

    def is_priority(self, uri: URI, static: Sequence[URI]) -> bool:
        """Whether ``uri`` is a priority broker (only ever true with ``priorityBackup``)."""
        if not self.options.priority_backup:
            return False
        key = broker_key(uri)
        return any(broker_key(candidate) == key for candidate in self.priority_list(static))
