"""Store operation batches as bytes (the pure master/slave replication stream)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ferrymq.store.base import (
    AddDestination,
    AddDurableSubscription,
    AddMessage,
    DurableSubscriptionRecord,
    MarkDelivered,
    PurgeContainer,
    RemoveDestination,
    RemoveDurableSubscription,
    RemoveMessage,
    StoreOp,
)
from ferrymq.store.oplog import OplogError, decode_ops, encode_ops

text = st.text(max_size=20)
seqs = st.integers(min_value=0, max_value=2**62)
ops = st.one_of(
    st.builds(
        AddMessage,
        text,
        seqs,
        st.binary(max_size=64),
        st.integers(0, 9),
        st.integers(0, 2**50),
        st.booleans(),
        st.none() | text,
        st.booleans(),
    ),
    st.builds(RemoveMessage, text, seqs),
    st.builds(MarkDelivered, text, seqs),
    st.builds(PurgeContainer, text),
    st.builds(
        AddDurableSubscription,
        st.builds(
            DurableSubscriptionRecord, text, text, text, st.none() | text, st.booleans(), text
        ),
    ),
    st.builds(RemoveDurableSubscription, text, text),
    st.builds(AddDestination, text),
    st.builds(RemoveDestination, text),
)


@given(st.lists(ops, max_size=10))
def test_batches_round_trip(batch: list[StoreOp]) -> None:
    assert decode_ops(encode_ops(batch)) == batch


@pytest.mark.parametrize(
    "damaged",
    [b"", b"\x00\x00\x00\x05[]", b"\x00\x00\x00\x02[]extra", b'\x00\x00\x00\x0b[["zap",1]]'],
)
def test_damaged_batches_are_refused(damaged: bytes) -> None:
    with pytest.raises(OplogError):
        decode_ops(damaged)


def test_a_cut_blob_is_refused() -> None:
    data = encode_ops([AddMessage("queue://q", 1, b"0123456789")])
    with pytest.raises(OplogError):
        decode_ops(data[:-3])
