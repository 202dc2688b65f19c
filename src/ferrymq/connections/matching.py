"""Artemis's wildcard syntax, for the ``address-match`` of senders, receivers and peers.

ActiveMQ Artemis manual, "Wildcard Syntax": an address is words separated by ``.``; in a match
``#`` stands for zero or more words and ``*`` for exactly one. So ``news.europe.#`` matches
``news.europe`` itself as well as ``news.europe.sport.football``, ``news.*`` matches
``news.europe`` but not ``news.europe.sport``, and ``#`` matches every address. A wildcard is a
whole word: ``news.eu*`` names the one address ``news.eu*``. This is not the core's syntax
(ActiveMQ Classic's ``>`` and ``*``, ``ferrymq.core.destination``): the two vocabularies are
kept apart on purpose, each where its configuration file uses it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

__all__ = ["ANY_WORDS", "DELIMITER", "SINGLE_WORD", "AddressMatch", "QueueSelection"]

DELIMITER = "."
ANY_WORDS = "#"
SINGLE_WORD = "*"


@dataclass(frozen=True)
class AddressMatch:
    """One ``address-match`` expression, split into words once."""

    pattern: str

    @cached_property
    def words(self) -> tuple[str, ...]:
        return tuple(self.pattern.split(DELIMITER))

    @cached_property
    def is_wildcard(self) -> bool:
        return any(word in (ANY_WORDS, SINGLE_WORD) for word in self.words)

    def matches(self, address: str) -> bool:
        if not self.is_wildcard:
            return address == self.pattern
        return _match(self.words, tuple(address.split(DELIMITER)))


def _match(pattern: tuple[str, ...], words: tuple[str, ...]) -> bool:
    """Whether ``words`` match ``pattern``: ``reachable[j]`` is whether the pattern read so far
    can have consumed exactly the first ``j`` words (linear in both lengths per pattern word,
    so a pattern of many ``#`` costs no backtracking)."""
    reachable = [True] + [False] * len(words)
    for word in pattern:
        if word == ANY_WORDS:
            # Zero or more words: once a prefix is reachable, every longer one is.
            for j in range(1, len(reachable)):
                reachable[j] = reachable[j] or reachable[j - 1]
        else:
            step = [False] * len(reachable)
            for j in range(1, len(reachable)):
                step[j] = reachable[j - 1] and (word in (SINGLE_WORD, words[j - 1]))
            reachable = step
    return reachable[-1]


@dataclass(frozen=True)
class QueueSelection:
    """Which local queues an element serves: ``queue-name`` (that one queue) or
    ``address-match`` over the queues' addresses (a queue's address is the Artemis
    ``<address name>`` it was declared under in broker.xml, else its own name)."""

    address_match: str | None = None
    queue_name: str | None = None
    _match: AddressMatch | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.address_match is not None:
            object.__setattr__(self, "_match", AddressMatch(self.address_match))

    def selects(self, queue: str, address: str | None = None) -> bool:
        """Whether ``queue`` (declared under ``address``; None: its own name) is served."""
        if self.queue_name is not None and queue == self.queue_name:
            return True
        return self._match is not None and self._match.matches(address or queue)

    def __str__(self) -> str:
        if self.queue_name is not None:
            return f"queue-name={self.queue_name}"
        return f"address-match={self.address_match}"
