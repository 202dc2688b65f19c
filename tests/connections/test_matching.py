"""Artemis's wildcard syntax (ActiveMQ Artemis manual, "Wildcard Syntax") for address-match:
the manual's own examples as a table, and a property test against the rules written as a
plain recursive definition."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ferrymq.connections.matching import AddressMatch, QueueSelection

# (pattern, address, matches): the manual's examples first, then the edges.
TABLE = [
    ("news.europe.#", "news.europe", True),  # "#" is zero or more words
    ("news.europe.#", "news.europe.sport", True),
    ("news.europe.#", "news.europe.politics.regional", True),
    ("news.europe.#", "news.usa", False),
    ("news.europe.#", "news.europeans", False),
    ("news.*", "news.europe", True),
    ("news.*", "news.europe.sport", False),
    ("news.*", "news", False),  # "*" is exactly one word
    ("news.*.sport", "news.europe.sport", True),
    ("news.*.sport", "news.europe.politics", False),
    ("#", "anything.at.all", True),
    ("#", "x", True),
    ("queues.#", "queues.A", True),
    ("queues.#", "queues", True),
    ("queues.#", "remotequeues.A", False),
    ("remotequeues.#", "remotequeues.A", True),
    ("#.sport", "sport", True),
    ("#.sport", "news.europe.sport", True),
    ("#.sport", "news.sports", False),
    ("a.#.z", "a.z", True),
    ("a.#.z", "a.b.c.z", True),
    ("a.#.z", "a.b.c", False),
    ("*.*", "a.b", True),
    ("*.*", "a", False),
    ("news.eu*", "news.europe", False),  # a wildcard is a whole word
    ("news.eu*", "news.eu*", True),
    ("exact", "exact", True),
    ("exact", "exactly", False),
    ("#.#", "a", True),
]


@pytest.mark.parametrize(("pattern", "address", "expected"), TABLE)
def test_manual_and_edges(pattern: str, address: str, expected: bool) -> None:
    assert AddressMatch(pattern).matches(address) is expected


WORDS = st.sampled_from(["a", "b", "news", "eu", ""])
PATTERN_WORDS = st.sampled_from(["a", "b", "news", "#", "*"])


@given(
    st.lists(PATTERN_WORDS, min_size=1, max_size=5),
    st.lists(WORDS.filter(bool), min_size=1, max_size=6),
)
def test_agrees_with_the_recursive_definition(pattern: list[str], address: list[str]) -> None:
    matched = AddressMatch(".".join(pattern)).matches(".".join(address))
    assert matched is _words_match(pattern, address)


def _words_match(pattern: list[str], words: list[str]) -> bool:
    """The definition, recursively: ``#`` takes zero or more words, ``*`` one."""
    if not pattern:
        return not words
    head, rest = pattern[0], pattern[1:]
    if head == "#":
        return any(_words_match(rest, words[i:]) for i in range(len(words) + 1))
    if not words:
        return False
    return (head in ("*", words[0])) and _words_match(rest, words[1:])


def test_queue_selection_by_name_or_match() -> None:
    by_name = QueueSelection(queue_name="localQueueB")
    assert by_name.selects("localQueueB")
    assert not by_name.selects("localQueueBB")
    by_match = QueueSelection(address_match="queues.#")
    assert by_match.selects("queues.B")
    assert not by_match.selects("remotequeues.A")
    assert str(by_match) == "address-match=queues.#"
