"""Reading numbers out of text the way Java does."""

from __future__ import annotations


def is_decimal(text: str) -> bool:
    """Only ASCII digits 0-9, at least one: ``str.isdigit`` also takes "²" and other Unicode
    digits, which ``int`` then refuses, so a check with it lets a traceback through."""
    return text.isascii() and text.isdigit()
