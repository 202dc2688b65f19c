"""The durability checker is itself checked: each violation it exists to catch is caught."""

from __future__ import annotations

from .ledger import tally
from .peers import Delivery


def delivery(ordinal: int, seq: int, message_id: str, *, redelivered: bool = False) -> Delivery:
    return Delivery(ordinal, seq, message_id, redelivered, None, f"message {seq}", 1)


def test_a_flagged_redelivery_is_no_violation() -> None:
    copies = [delivery(0, 0, "m0"), delivery(1, 1, "m1"), delivery(2, 0, "m0", redelivered=True)]
    result = tally({0, 1}, 2, {0, 1}, copies, {0: 3, 1: 2})
    assert result.problems() == []
    counts = (result.delivered, result.distinct, result.redelivered, result.duplicates)
    assert counts == (3, 2, 1, 1)


def test_every_kind_of_violation_is_reported() -> None:
    deliveries = [
        delivery(0, 0, "m0"),
        delivery(1, 0, "m0"),  # delivered again without the flag
        delivery(2, 1, "m1"),
        delivery(3, 1, "m1-copy", redelivered=True),  # a second stored copy
        delivery(4, 2, "m0"),  # someone else's message-id
        delivery(5, 9, "m9"),  # never sent
        delivery(6, 2, "m0", redelivered=True),  # after its ack was receipted at ordinal 5
    ]
    result = tally({0, 1, 2, 3}, 4, {0, 1, 2, 3}, deliveries, {2: 5})
    assert result.missing == (3,)
    assert [[d.ordinal for d in group] for group in result.unflagged] == [[0, 1]]
    assert [d.ordinal for d in result.unknown] == [5]
    assert [d.ordinal for d in result.resurrected] == [6]
    assert [[d.ordinal for d in group] for group in result.renamed] == [[2, 3]]
    assert [[d.ordinal for d in group] for group in result.shared_ids] == [[0, 1, 4, 6]]
    assert len(result.problems()) == 6
