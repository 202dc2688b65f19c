"""The mapping's value codec against proton's: what one encodes, the other reads the same."""

from __future__ import annotations

import uuid
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from proton import Data, byte, symbol, timestamp, uint, ulong

from ferrymq.adapters.amqp.codec import Unsupported, decode, encode

VALUES: list[object] = [
    None,
    True,
    False,
    "",
    "héllo",
    "x" * 300,
    symbol("x-opt-jms-dest"),
    symbol("s" * 300),
    b"",
    b"\x00\xff" * 200,
    ulong(0),
    ulong(255),
    ulong(2**64 - 1),
    uint(0),
    uint(7),
    uint(2**32 - 1),
    byte(-128),
    byte(5),
    timestamp(1_764_000_000_123),
    timestamp(-1),
    -129,
    -3,
    2**63 - 1,
    uuid.UUID(int=7),
    [],
    ["a", None, ulong(3)],
    ["x" * 100, "y" * 100, "z" * 100],
    {},
    {symbol("k"): "v", "n": 3},
    {str(i): "v" * 10 for i in range(40)},
]


def proton_decode(raw: bytes) -> object:
    data = Data()
    assert data.decode(raw) == len(raw)
    return _plain(data.get_object())


def _plain(value: object) -> object:
    """proton hands binaries out as views into its buffer."""
    if isinstance(value, memoryview):
        return bytes(value)
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {_plain(key): _plain(item) for key, item in value.items()}
    return value


def proton_encode(value: object) -> bytes:
    data = Data()
    data.put_object(cast(Any, value))
    return bytes(data.encode())


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_proton_reads_what_the_broker_writes(value: object) -> None:
    raw = encode(value)
    assert proton_decode(raw) == value
    assert decode(memoryview(raw), 0) == (value, len(raw))


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_the_broker_reads_what_proton_writes(value: object) -> None:
    raw = proton_encode(value)
    assert decode(memoryview(raw), 0) == (value, len(raw))


def test_types_the_mapping_never_keeps_decode_as_unsupported() -> None:
    data = Data()
    data.put_array(False, Data.INT)
    data.enter()
    data.put_int(1)
    data.exit()
    raw = bytes(data.encode())
    assert decode(memoryview(raw), 0) == (Unsupported("array"), len(raw))
    described = bytes.fromhex("00a30178a10179")  # descriptor symbol "x", value "y"
    assert decode(memoryview(described), 0)[0] == Unsupported("described value")


TEXT = st.text(max_size=300)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    TEXT,
    st.text(st.characters(max_codepoint=127), max_size=300).map(symbol),  # ASCII (1.6.21)
    st.binary(max_size=300),
    st.integers(0, 2**64 - 1).map(ulong),
    st.integers(-(2**63), 2**63 - 1),
    st.uuids(),
)
TREES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(TEXT, inner, max_size=5)),
    max_leaves=20,
)


@settings(deadline=None, max_examples=300)
@given(TREES)
def test_round_trips_through_both_codecs(value: object) -> None:
    raw = encode(value)
    assert decode(memoryview(raw), 0) == (value, len(raw))
    assert proton_decode(raw) == value
