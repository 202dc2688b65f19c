"""Summaries of latency samples.

Percentiles use the nearest-rank method (the smallest sample with at least p% of the samples at
or below it), so every reported number is a latency that was really measured, and p100 is the
maximum. With few samples the high percentiles are the maximum: the report prints the count so a
reader can tell.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

NS_PER_MS = 1_000_000
CDF_PERCENTILES: tuple[float, ...] = (
    *range(1, 100),
    99.5,
    99.9,
    100,
)
"""Where the report samples the latency distribution, for the CDF that ``--plot`` draws."""


def percentile(sorted_samples: Sequence[int], p: float) -> int:
    """The nearest-rank ``p``-th percentile (0 < p <= 100) of already sorted samples."""
    if not sorted_samples:
        raise ValueError("no samples")
    if not 0 < p <= 100:
        raise ValueError(f"percentile {p} is not in (0, 100]")
    rank = math.ceil(p / 100 * len(sorted_samples))
    return sorted_samples[max(rank, 1) - 1]


@dataclass(frozen=True, slots=True)
class LatencySummary:
    """Round-trip latencies in milliseconds."""

    samples: int
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    mean_ms: float
    min_ms: float
    cdf_ms: tuple[float, ...] = ()
    """The latency at each of ``CDF_PERCENTILES`` (empty in reports written before it)."""

    @classmethod
    def from_ns(cls, samples_ns: Sequence[int]) -> LatencySummary:
        ordered = sorted(samples_ns)
        if not ordered:
            raise ValueError("no samples")

        def ms(p: float) -> float:
            return percentile(ordered, p) / NS_PER_MS

        return cls(
            samples=len(ordered),
            p50_ms=ms(50),
            p90_ms=ms(90),
            p99_ms=ms(99),
            max_ms=ordered[-1] / NS_PER_MS,
            mean_ms=sum(ordered) / len(ordered) / NS_PER_MS,
            min_ms=ordered[0] / NS_PER_MS,
            cdf_ms=tuple(ms(p) for p in CDF_PERCENTILES),
        )


def rate(count: int, seconds: float) -> float:
    """Messages per second; 0 when no time was measured."""
    return count / seconds if seconds > 0 else 0.0
