"""Percentiles and latency summaries (nearest rank: every reported latency was measured)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ferrymq.bench.stats import LatencySummary, percentile, rate


def test_nearest_rank_on_a_hundred_samples() -> None:
    samples = list(range(1, 101))
    assert percentile(samples, 50) == 50
    assert percentile(samples, 90) == 90
    assert percentile(samples, 99) == 99
    assert percentile(samples, 100) == 100
    assert percentile(samples, 0.5) == 1


def test_few_samples_make_high_percentiles_the_maximum() -> None:
    assert percentile([3, 7, 9], 99) == 9
    assert percentile([3, 7, 9], 50) == 7
    assert percentile([5], 1) == 5


@pytest.mark.parametrize("p", [0, -1, 100.5])
def test_percentile_outside_its_range_is_refused(p: float) -> None:
    with pytest.raises(ValueError, match="not in"):
        percentile([1, 2, 3], p)


def test_no_samples_is_refused() -> None:
    with pytest.raises(ValueError, match="no samples"):
        percentile([], 50)
    with pytest.raises(ValueError, match="no samples"):
        LatencySummary.from_ns([])


@given(st.lists(st.integers(min_value=0, max_value=10**9), min_size=1), st.floats(1, 100))
def test_a_percentile_is_a_sample_with_at_least_p_percent_at_or_below(
    samples: list[int], p: float
) -> None:
    ordered = sorted(samples)
    value = percentile(ordered, p)
    assert value in samples
    at_or_below = sum(1 for s in samples if s <= value)
    assert at_or_below / len(samples) >= p / 100
    below = sum(1 for s in samples if s < value)
    assert below / len(samples) < p / 100


@given(st.lists(st.integers(min_value=0, max_value=10**9), min_size=1))
def test_summary_is_ordered(samples: list[int]) -> None:
    summary = LatencySummary.from_ns(samples)
    assert summary.samples == len(samples)
    assert summary.min_ms <= summary.p50_ms <= summary.p90_ms <= summary.p99_ms <= summary.max_ms
    assert summary.min_ms <= summary.mean_ms <= summary.max_ms


def test_summary_converts_nanoseconds_to_milliseconds() -> None:
    summary = LatencySummary.from_ns([1_000_000 * n for n in range(1, 101)])
    assert (summary.p50_ms, summary.p90_ms, summary.p99_ms) == (50.0, 90.0, 99.0)
    assert summary.max_ms == 100.0
    assert summary.mean_ms == pytest.approx(50.5)


def test_rate_without_time_is_zero() -> None:
    assert rate(100, 0.0) == 0.0
    assert rate(100, 0.5) == 200.0
