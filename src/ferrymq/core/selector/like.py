"""LIKE patterns (JMS 1.1 §3.8.1.1): ``_`` stands for any one character, ``%`` for any run of
characters, and everything else for itself, case-sensitively.

ESCAPE follows ActiveMQ's ``LikeExpression``: the escape character escapes a following ``%``,
``_`` or itself, and anywhere else stands for itself.

A pattern is matched as ``%``-separated segments of fixed length: the first is anchored at the
start, the last at the end, and each one between is placed at its leftmost fit, which is always a
correct choice.  So matching costs string searches, never the exponential backtracking a regular
expression like ``.*a.*a.*a.*b`` can fall into on a hostile header value.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

ANY_RUN = "%"
ANY_ONE = "_"


@dataclass(frozen=True, slots=True)
class _Segment:
    text: str
    """The segment with each ``_`` wildcard kept as a placeholder character."""
    wildcards: re.Pattern[str] | None
    """Set when the segment has ``_`` wildcards; plain string operations serve otherwise."""

    def at(self, value: str, position: int) -> bool:
        if self.wildcards is None:
            return value.startswith(self.text, position)
        return self.wildcards.match(value, position) is not None

    def find(self, value: str, start: int, end: int) -> int:
        if self.wildcards is None:
            return value.find(self.text, start, end)
        found = self.wildcards.search(value, start, end)
        return -1 if found is None else found.start()


def like_matcher(pattern: str, escape: str | None) -> Callable[[str], bool]:
    """A predicate telling whether a string matches ``pattern``."""
    pieces = _split(pattern, escape)
    if all(not any(c is None for c in piece) for piece in pieces):
        plain = ["".join(c for c in piece if c is not None) for piece in pieces]
        shortcut = _plain_shortcut(plain)
        if shortcut is not None:
            return shortcut
    segments = [_segment(piece) for piece in pieces]
    if len(segments) == 1:
        only = segments[0]
        return lambda value: len(value) == len(only.text) and only.at(value, 0)
    first, last = segments[0], segments[-1]
    middle = [segment for segment in segments[1:-1] if segment.text]

    def matches(value: str) -> bool:
        end = len(value) - len(last.text)
        if end < len(first.text) or not first.at(value, 0) or not last.at(value, end):
            return False
        position = len(first.text)
        for segment in middle:
            found = segment.find(value, position, end)
            if found < 0:
                return False
            position = found + len(segment.text)
        return True

    return matches


def _split(pattern: str, escape: str | None) -> list[list[str | None]]:
    """The pattern's segments between ``%`` wildcards; None marks a ``_`` wildcard."""
    pieces: list[list[str | None]] = [[]]
    i = 0
    while i < len(pattern):
        char = pattern[i]
        following = pattern[i + 1 : i + 2]
        if char == escape and following and following in (ANY_RUN, ANY_ONE, escape):
            pieces[-1].append(following)
            i += 2
            continue
        if char == ANY_RUN:
            pieces.append([])
        else:
            pieces[-1].append(None if char == ANY_ONE else char)
        i += 1
    return pieces


def _segment(piece: list[str | None]) -> _Segment:
    text = "".join("\0" if c is None else c for c in piece)
    if all(c is not None for c in piece):
        return _Segment(text, None)
    regex = "".join("." if c is None else re.escape(c) for c in piece)
    return _Segment(text, re.compile(regex, re.DOTALL))


def _plain_shortcut(plain: list[str]) -> Callable[[str], bool] | None:
    """Patterns without ``_`` that a single string method decides."""
    if len(plain) == 1:
        return plain[0].__eq__
    if len(plain) == 2:
        prefix, suffix = plain
        if not suffix:
            return lambda value: value.startswith(prefix)
        if not prefix:
            return lambda value: value.endswith(suffix)
        least = len(prefix) + len(suffix)

        def both_ends(value: str) -> bool:
            return len(value) >= least and value.startswith(prefix) and value.endswith(suffix)

        return both_ends
    if len(plain) == 3 and not plain[0] and not plain[2]:
        infix = plain[1]
        return lambda value: infix in value
    return None
