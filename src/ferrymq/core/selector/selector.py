"""A parsed, compiled message selector: what a subscription keeps and dispatch calls."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ferrymq.core.selector.compiler import compile_test, compile_truth
from ferrymq.core.selector.parser import parse
from ferrymq.core.selector.tree import Expression, identifiers

Lookup = Callable[[str], object]
"""Returns a property's value (``str``, ``int``, ``float`` or ``bool``), or None when absent."""


@dataclass(frozen=True, slots=True)
class Selector:
    """A JMS message selector, compiled once and evaluated on every dispatch.

    Build one with ``parse_selector``.  A message is selected only when the selector is TRUE
    for it; FALSE and UNKNOWN (an absent property, a comparison of non-like types) both refuse.
    """

    text: str
    """The selector as the consumer sent it."""
    expression: Expression = field(repr=False)
    identifiers: frozenset[str] = field(init=False, repr=False, compare=False)
    """Every property name the selector reads; empty when it never reads one."""
    _test: Callable[[Lookup], bool] = field(init=False, repr=False, compare=False)
    _truth: Callable[[Lookup], bool | None] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "identifiers", identifiers(self.expression))
        object.__setattr__(self, "_test", compile_test(self.expression))
        object.__setattr__(self, "_truth", compile_truth(self.expression))

    def matches(self, lookup: Lookup) -> bool:
        """True when the selector is TRUE for the message whose properties ``lookup`` reads."""
        return self._test(lookup)

    def evaluate(self, lookup: Lookup) -> bool | None:
        """The three-valued result: True, False, or None for UNKNOWN."""
        return self._truth(lookup)


def parse_selector(text: str) -> Selector:
    """Parses and compiles ``text``; raises SelectorError, naming the position, if it is invalid.

    An empty selector is an error here: a consumer without a selector simply has none.
    """
    return Selector(text, parse(text))
