"""SeqTally: the count behind "every message exactly once"."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ferrymq.bench.tally import MISSING_EXAMPLES, SeqTally


def test_new_duplicate_and_missing() -> None:
    tally = SeqTally(5)
    assert tally.add(0)
    assert tally.add(2)
    assert not tally.add(2)
    assert tally.unique == 2
    assert tally.dups == 1
    assert tally.missing(5) == (3, (1, 3, 4))
    assert tally.count_below(3) == 2


def test_it_grows_past_its_capacity_and_counts_strangers() -> None:
    tally = SeqTally()
    for seq in (0, 1, 9000):
        tally.add(seq)
    assert tally.beyond(2) == 1
    assert tally.beyond(10_000) == 0
    assert tally.missing(2) == (0, ())


def test_reordering_is_counted() -> None:
    tally = SeqTally()
    for seq in (0, 2, 1, 3):
        tally.add(seq)
    assert tally.reordered == 1


def test_missing_examples_are_the_first_few() -> None:
    tally = SeqTally(100)
    count, examples = tally.missing(100)
    assert count == 100
    assert examples == tuple(range(MISSING_EXAMPLES))


@given(st.lists(st.integers(min_value=0, max_value=500)), st.integers(1, 600))
def test_counts_agree_with_a_set(seqs: list[int], total: int) -> None:
    tally = SeqTally()
    for seq in seqs:
        tally.add(seq)
    distinct = set(seqs)
    assert tally.unique == len(distinct)
    assert tally.dups == len(seqs) - len(distinct)
    assert tally.count_below(total) == len({s for s in distinct if s < total})
    assert tally.beyond(total) == len({s for s in distinct if s >= total})
    missing, examples = tally.missing(total)
    expected_missing = sorted(set(range(total)) - distinct)
    assert missing == len(expected_missing)
    assert list(examples) == expected_missing[:MISSING_EXAMPLES]
