"""activemq.xml value syntaxes."""

from __future__ import annotations

import pytest

from ferrymq.config.units import parse_bool, parse_float, parse_int, parse_size


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("1024", 1024),
        ("64 mb", 64 << 20),
        ("100 gb", 100 << 30),
        ("512KB", 512 << 10),
        (" 1 b ", 1),
        ("2 tb", 2 << 40),
        # ActiveMQ's own examples write the short units (activemq-specjms.xml).
        ("62k", 62 << 10),
        ("1g", 1 << 30),
        ("2 g", 2 << 30),
    ],
)
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["70 %", "1.5 gb", "", "mb", "-1", "10 pb", "1 bb"])
def test_bad_sizes(text: str) -> None:
    with pytest.raises(ValueError, match="expected a size"):
        parse_size(text)


def test_booleans_integers_and_numbers() -> None:
    assert parse_bool("TRUE") is True
    assert parse_bool("false") is False
    with pytest.raises(ValueError, match="true or false"):
        parse_bool("yes")
    assert parse_int("-1", minimum=-1) == -1
    with pytest.raises(ValueError, match="at least 0"):
        parse_int("-1", minimum=0)
    with pytest.raises(ValueError, match="an integer"):
        parse_int("1e3")
    with pytest.raises(ValueError, match="out of range"):
        parse_int(str(1 << 63))
    assert parse_float("0.15") == 0.15
    with pytest.raises(ValueError, match="finite"):
        parse_float("nan")
