"""The parsed form of a selector, and its canonical text.

Nodes are plain frozen records without source positions, so two selectors that differ only in
spacing, case of keywords, comments or parentheses that do not change the grouping parse to
equal trees.
``to_text`` prints a tree back with the fewest parentheses the precedence rules need
(JMS 1.1 §3.8.1.1: arithmetic, then comparison, then NOT, AND, OR), so that
``parse(to_text(tree)) == tree``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypeAlias

LiteralValue: TypeAlias = str | int | float | bool | None


@dataclass(frozen=True, slots=True, eq=False)
class Literal:
    value: LiteralValue

    # 1 == 1.0 == True in Python, but not in a selector: equality includes the type.
    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Literal)
            and type(self.value) is type(other.value)
            and self.value == other.value
        )

    def __hash__(self) -> int:
        return hash((type(self.value), self.value))


@dataclass(frozen=True, slots=True)
class Identifier:
    name: str


@dataclass(frozen=True, slots=True)
class Negate:
    operand: Expression


@dataclass(frozen=True, slots=True)
class Arithmetic:
    operator: str
    """One of ``+ - * / %``."""
    left: Expression
    right: Expression


@dataclass(frozen=True, slots=True)
class Comparison:
    operator: str
    """One of ``= <> < <= > >=``."""
    left: Expression
    right: Expression


@dataclass(frozen=True, slots=True)
class Between:
    value: Expression
    low: Expression
    high: Expression
    negated: bool = False


@dataclass(frozen=True, slots=True)
class In:
    identifier: Identifier
    values: tuple[str, ...]
    negated: bool = False


@dataclass(frozen=True, slots=True)
class Like:
    value: Expression
    pattern: str
    escape: str | None = None
    negated: bool = False


@dataclass(frozen=True, slots=True)
class IsNull:
    value: Expression
    negated: bool = False


@dataclass(frozen=True, slots=True)
class Not:
    operand: Expression


@dataclass(frozen=True, slots=True)
class And:
    operands: tuple[Expression, ...]


@dataclass(frozen=True, slots=True)
class Or:
    operands: tuple[Expression, ...]


Expression: TypeAlias = (
    Literal
    | Identifier
    | Negate
    | Arithmetic
    | Comparison
    | Between
    | In
    | Like
    | IsNull
    | Not
    | And
    | Or
)


def identifiers(expression: Expression) -> frozenset[str]:
    names: set[str] = set()
    pending: list[Expression] = [expression]
    while pending:
        node = pending.pop()
        match node:
            case Identifier(name):
                names.add(name)
            case In(identifier):
                names.add(identifier.name)
            case Negate(operand) | Not(operand):
                pending.append(operand)
            case Arithmetic(_, left, right) | Comparison(_, left, right):
                pending += (left, right)
            case Between(value, low, high):
                pending += (value, low, high)
            case Like(value) | IsNull(value):
                pending.append(value)
            case And(operands) | Or(operands):
                pending += operands
    return frozenset(names)


# Binding strength, weakest first.  Comparisons do not chain, so a comparison's operands
# bind at least as tightly as addition.
_OR, _AND, _NOT, _PREDICATE, _ADDITIVE, _MULTIPLICATIVE, _UNARY, _PRIMARY = range(8)


def to_text(expression: Expression) -> str:
    """Canonical selector text for ``expression``."""
    return _render(expression, _OR)


def quote(value: str) -> str:
    """A string literal for ``value``."""
    return "'" + value.replace("'", "''") + "'"


def _render(node: Expression, context: int) -> str:
    level, text = _render_bare(node)
    return f"({text})" if level < context else text


def _render_bare(node: Expression) -> tuple[int, str]:
    match node:
        case Literal(value):
            return _PRIMARY, _literal(value)
        case Identifier(name):
            return _PRIMARY, name
        case Negate(operand):
            text = _render(operand, _UNARY)
            # "--" would start a comment.
            return _UNARY, ("- " if text.startswith("-") else "-") + text
        case Arithmetic(operator, left, right):
            level = _ADDITIVE if operator in "+-" else _MULTIPLICATIVE
            return level, f"{_render(left, level)} {operator} {_render(right, level + 1)}"
        case Comparison(operator, left, right):
            return _PREDICATE, f"{_operand(left)} {operator} {_operand(right)}"
        case Between(value, low, high, negated):
            keyword = "NOT BETWEEN" if negated else "BETWEEN"
            text = f"{_operand(value)} {keyword} {_operand(low)} AND {_operand(high)}"
            return _PREDICATE, text
        case In(identifier, values, negated):
            keyword = "NOT IN" if negated else "IN"
            listed = ", ".join(quote(value) for value in values)
            return _PREDICATE, f"{identifier.name} {keyword} ({listed})"
        case Like(value, pattern, escape, negated):
            keyword = "NOT LIKE" if negated else "LIKE"
            text = f"{_operand(value)} {keyword} {quote(pattern)}"
            if escape is not None:
                text += f" ESCAPE {quote(escape)}"
            return _PREDICATE, text
        case IsNull(value, negated):
            return _PREDICATE, f"{_operand(value)} IS {'NOT NULL' if negated else 'NULL'}"
        case Not(operand):
            return _NOT, "NOT " + _render(operand, _NOT)
        case And(operands):
            return _AND, " AND ".join(_render(operand, _NOT) for operand in operands)
        case Or(operands):
            return _OR, " OR ".join(_render(operand, _AND) for operand in operands)


def _operand(node: Expression) -> str:
    return _render(node, _ADDITIVE)


def _literal(value: LiteralValue) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, float) and math.isinf(value):
        # 1e999 overflows to infinity, as Java's Double.valueOf does.
        return "1e999" if value > 0 else "-1e999"
    return repr(value)
