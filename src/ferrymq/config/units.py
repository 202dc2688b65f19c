"""Value syntaxes of activemq.xml: booleans, integers, byte sizes with units.

Each parser raises `ValueError` with a message meant for the user; the XML reader adds the file,
line and attribute. Durations in activemq.xml are plain integers of milliseconds, so they use
`parse_int`.
"""

from __future__ import annotations

import re

__all__ = ["parse_bool", "parse_float", "parse_int", "parse_size"]

# ActiveMQ's MemoryPropertyEditor: an integer, optionally followed by b, k, m or g, each but b
# with an optional b (kb, mb, gb; any case, blanks allowed: "62k", "2 g"); units are powers of
# 1024. "t"/"tb" is a FerryMQ addition for store limits.
_SIZE = re.compile(r"\s*(\d+)\s*(b|[kmgt]b?)?\s*", re.IGNORECASE)
_UNITS = {"b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_INT = re.compile(r"\s*[+-]?\d+\s*")


def parse_bool(text: str) -> bool:
    """`true` or `false`, in any case (what Spring's boolean editor and XML Schema agree on)."""
    value = text.strip().lower()
    if value == "true":
        return True
    if value == "false":
        return False
    raise ValueError(f"expected true or false, got {text!r}")


def parse_int(text: str, *, minimum: int | None = None) -> int:
    """A decimal integer (Java long range), optionally bounded below."""
    if not _INT.fullmatch(text):
        raise ValueError(f"expected an integer, got {text!r}")
    value = int(text)
    if not -(1 << 63) <= value < (1 << 63):
        raise ValueError(f"{text!r} is out of range")
    if minimum is not None and value < minimum:
        raise ValueError(f"must be at least {minimum}, got {value}")
    return value


def parse_float(text: str, *, minimum: float | None = None) -> float:
    """A decimal number such as `5.0` or `0.15`."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"expected a number, got {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"expected a finite number, got {text!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"must be at least {minimum}, got {text!r}")
    return value


def parse_size(text: str) -> int:
    """A byte count: `1024`, `64 mb`, `100 gb`, `62k` (1 kb = 1024 bytes)."""
    match = _SIZE.fullmatch(text)
    if not match:
        raise ValueError(f"expected a size such as 1024, 64 mb or 100 gb, got {text!r}")
    unit = (match.group(2) or "b").lower()[0]
    return int(match.group(1)) * _UNITS[unit]
