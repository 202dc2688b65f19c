"""Escaping tables (STOMP 1.2 "Value Encoding")."""

from __future__ import annotations

import pytest

from ferrymq.stomp.escaping import ESCAPES, JAVA_WHITESPACE, UNESCAPES, escape, unescape


def test_tables() -> None:
    assert ESCAPES["1.0"] == {}
    assert ESCAPES["1.1"] == {"\\": "\\\\", "\n": "\\n", ":": "\\c"}
    assert ESCAPES["1.2"] == {"\\": "\\\\", "\r": "\\r", "\n": "\\n", ":": "\\c"}
    assert UNESCAPES["1.2"] == {"\\": "\\", "r": "\r", "n": "\n", "c": ":"}


@pytest.mark.parametrize("version", ["1.1", "1.2"])
def test_round_trip(version: str) -> None:
    text = "a\\b:c\nd\\\\n"
    assert unescape(escape(text, version), version) == text


def test_1_0_is_identity() -> None:
    assert escape("a:b\n", "1.0") == "a:b\n"
    assert unescape("a\\nb", "1.0") == "a\\nb"


def test_escape_order_does_not_double_escape() -> None:
    assert escape("\\n", "1.2") == "\\\\n"
    assert unescape("\\\\n", "1.2") == "\\n"


@pytest.mark.parametrize(("text", "version"), [("\\r", "1.1"), ("\\t", "1.2"), ("x\\", "1.2")])
def test_undefined_sequences(text: str, version: str) -> None:
    with pytest.raises(ValueError, match="undefined escape sequence"):
        unescape(text, version)


def test_java_whitespace_is_what_string_trim_removes() -> None:
    assert "".join(chr(c) for c in range(0x21)) == JAVA_WHITESPACE
