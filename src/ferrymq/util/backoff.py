"""How long to wait after the Nth failure in a row: ActiveMQ's exponential back-off, once.

ActiveMQ writes the rule three times (``FailoverTransport``, ``SimpleDiscoveryAgent``,
``MulticastDiscoveryAgent``), each with the same four options: ``initialReconnectDelay``,
``maxReconnectDelay``, ``useExponentialBackOff`` and ``backOffMultiplier``. FerryMQ's failover
transport, static discovery agent and multicast/zeroconf service table all ask this one frozen
policy instead (redis-py's ``ExponentialBackoff.compute(failures)`` is the model): no clock, no
state, the same answer for the same failure count.

The rule, for ``failures`` >= 1 (fewer count as 1):

* the first wait is ``initial_ms``; without ``exponential`` every wait is;
* each further failure multiplies the wait by ``multiplier``, until it reaches ``maximum_ms``,
  where it stays;
* ``cap_initial``: the first wait is capped at ``maximum_ms`` too. Off, the first wait is
  ``initialReconnectDelay`` even when that is longer than the maximum (the failover transport's
  and the static agent's rule: ActiveMQ only caps a wait once it has grown); on, no wait ever
  exceeds ``maxReconnectDelay`` (FerryMQ's multicast agent, which holds a failed service back for
  at most the maximum, however long its first hold-back was configured);
* ``jitter_ms``: a random share of this is added to the wait, never beyond the larger of the wait
  and the maximum (``reconnectDelayJitter``, stompest's option that FerryMQ's failover transport
  adopts); the caller draws the share, so the policy stays deterministic.

The wait grows by repeated multiplication, not by a power, so a huge failure count neither
overflows nor costs more than the few steps up to the maximum, and the three callers' former
hand-written loops give bit-for-bit the same numbers (``tests/util/test_backoff.py`` checks them
against those loops).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["BackOffOptions", "ExponentialBackOff"]


class BackOffOptions(Protocol):
    """The four ActiveMQ options every back-off reads, as the options records spell them."""

    @property
    def initial_reconnect_delay_ms(self) -> int: ...
    @property
    def max_reconnect_delay_ms(self) -> int: ...
    @property
    def use_exponential_back_off(self) -> bool: ...
    @property
    def back_off_multiplier(self) -> float: ...


@dataclass(frozen=True, slots=True)
class ExponentialBackOff:
    """ActiveMQ's reconnect back-off; see the module docstring for the rule and its options."""

    initial_ms: int
    """``initialReconnectDelay``: the wait after the first failure."""
    maximum_ms: int
    """``maxReconnectDelay``: a grown wait never exceeds it."""
    multiplier: float = 2.0
    """``backOffMultiplier``: at least 1, so a wait never shrinks (the URL parsers refuse less)."""
    exponential: bool = True
    """``useExponentialBackOff``: off, every wait is the first one."""
    cap_initial: bool = False
    """Cap the first wait at ``maximum_ms`` too (the multicast agent's hold-back)."""
    jitter_ms: int = 0
    """``reconnectDelayJitter``: the most a drawn jitter adds."""

    def __post_init__(self) -> None:
        if not self.multiplier >= 1.0:
            raise ValueError(f"a back-off multiplier is at least 1, not {self.multiplier!r}")

    @classmethod
    def of(
        cls,
        options: BackOffOptions,
        *,
        initial_ms: int | None = None,
        cap_initial: bool = False,
        jitter_ms: int = 0,
    ) -> ExponentialBackOff:
        """The policy an options record describes; ``initial_ms`` overrides its first wait (the
        failover transport's ``reconnectDelay`` before the first connection)."""
        return cls(
            initial_ms=options.initial_reconnect_delay_ms if initial_ms is None else initial_ms,
            maximum_ms=options.max_reconnect_delay_ms,
            multiplier=options.back_off_multiplier,
            exponential=options.use_exponential_back_off,
            cap_initial=cap_initial,
            jitter_ms=jitter_ms,
        )

    def delay_ms(self, failures: int, jitter: float = 0.0) -> int:
        """The wait after ``failures`` failures in a row; ``jitter`` in [0, 1) is the drawn share
        of ``jitter_ms``."""
        maximum = float(self.maximum_ms)
        step = float(min(self.initial_ms, self.maximum_ms) if self.cap_initial else self.initial_ms)
        if self.exponential:
            for _ in range(failures - 1):
                if not step:
                    break
                step *= self.multiplier
                if step >= maximum:
                    step = maximum
                    break
        if self.jitter_ms and jitter:
            step = min(step + jitter * self.jitter_ms, max(step, maximum))
        return int(step)
