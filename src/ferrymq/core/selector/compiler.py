"""Turns a selector tree into nested closures, once, so that dispatch only calls functions.

Three kinds of closure are built from a tree:

* a *value* returns a property value, a literal or an arithmetic result (None when unknown);
* a *truth* returns the three-valued result of a condition: True, False or None (UNKNOWN);
* a *test* answers only "is it TRUE?", which is all that dispatch needs.  AND and OR short-circuit
  on it, as ActiveMQ's ``matches`` does, and the common shape ``property <op> literal`` gets a
  specialised test that does one lookup and one Python comparison when the types already agree.

A test must always equal ``truth(...) is True``; the property tests hold the two to it.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any, TypeAlias

from ferrymq.core.selector import values
from ferrymq.core.selector.like import like_matcher
from ferrymq.core.selector.tree import (
    And,
    Arithmetic,
    Between,
    Comparison,
    Expression,
    Identifier,
    In,
    IsNull,
    Like,
    Literal,
    Negate,
    Not,
    Or,
)

Lookup: TypeAlias = Callable[[str], object]
Value: TypeAlias = Callable[[Lookup], object]
Truth: TypeAlias = Callable[[Lookup], bool | None]
Test: TypeAlias = Callable[[Lookup], bool]

_MIRRORED = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_PYTHON_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "<>": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
_VARIABLE = object()
"""What ``_constant`` returns for an expression that depends on properties."""


def compile_test(node: Expression) -> Test:
    match node:
        case And(operands):
            tests = [compile_test(operand) for operand in operands]
            if len(tests) == 2:
                first, second = tests
                return lambda lookup: first(lookup) and second(lookup)
            return lambda lookup: all(test(lookup) for test in tests)
        case Or(operands):
            tests = [compile_test(operand) for operand in operands]
            if len(tests) == 2:
                first, second = tests
                return lambda lookup: first(lookup) or second(lookup)
            return lambda lookup: any(test(lookup) for test in tests)
        case Not(operand):
            truth = compile_truth(operand)
            return lambda lookup: truth(lookup) is False
        case Comparison(op, Identifier(name), right) if _is_constant(right):
            return _property_test(op, name, _constant(right))
        case Comparison(op, left, Identifier(name)) if _is_constant(left):
            return _property_test(_MIRRORED[op], name, _constant(left))
        case In(Identifier(name), listed, negated):
            members = frozenset(listed)
            if negated:
                return lambda lookup: isinstance(v := lookup(name), str) and v not in members
            return lambda lookup: isinstance(v := lookup(name), str) and v in members
        case Like(Identifier(name), pattern, escape, negated):
            matches = like_matcher(pattern, escape)
            if negated:  # TRUE for a non-string too: ActiveMQ's LIKE is FALSE there
                return lambda lookup: (
                    (v := lookup(name)) is not None and not (isinstance(v, str) and matches(v))
                )
            return lambda lookup: isinstance(v := lookup(name), str) and matches(v)
    truth = compile_truth(node)
    return lambda lookup: truth(lookup) is True


def compile_truth(node: Expression) -> Truth:
    match node:
        case And(operands):
            return _all_of([compile_truth(operand) for operand in operands])
        case Or(operands):
            return _any_of([compile_truth(operand) for operand in operands])
        case Not(operand):
            truth = compile_truth(operand)
            return lambda lookup: None if (result := truth(lookup)) is None else not result
        case Comparison(op, left, right):
            compare = values.COMPARISONS[op]
            left_value, right_value = compile_value(left), compile_value(right)
            return lambda lookup: compare(left_value(lookup), right_value(lookup))
        case Between(value, low, high, negated):
            return _between(compile_value(value), compile_value(low), compile_value(high), negated)
        case In(identifier, listed, negated):
            return _in(identifier.name, frozenset(listed), negated)
        case Like(value, pattern, escape, negated):
            return _like(compile_value(value), like_matcher(pattern, escape), negated)
        case IsNull(value, negated):
            tested = compile_value(value)
            if negated:
                return lambda lookup: tested(lookup) is not None
            return lambda lookup: tested(lookup) is None
    cast = compile_value(node)  # a property or literal used as a condition
    return lambda lookup: values.as_condition(cast(lookup))


def compile_value(node: Expression) -> Value:
    constant = _constant(node)
    if constant is not _VARIABLE:
        return lambda lookup: constant
    match node:
        case Identifier(name):
            return lambda lookup: lookup(name)
        case Negate(operand):
            inner = compile_value(operand)
            return lambda lookup: values.negate(inner(lookup))
        case Arithmetic(op, left, right):
            compute = values.ARITHMETIC[op]
            left_value, right_value = compile_value(left), compile_value(right)
            return lambda lookup: compute(left_value(lookup), right_value(lookup))
    return compile_truth(node)


def _is_constant(node: Expression) -> bool:
    return _constant(node) is not _VARIABLE


def _constant(node: Expression) -> object:
    """The value of a property-free arithmetic expression (``-5``, ``2 * 3``), else _VARIABLE."""
    match node:
        case Literal(value):
            return value
        case Negate(operand):
            inner = _constant(operand)
            return _VARIABLE if inner is _VARIABLE else values.negate(inner)
        case Arithmetic(op, left, right):
            left_value, right_value = _constant(left), _constant(right)
            if left_value is _VARIABLE or right_value is _VARIABLE:
                return _VARIABLE
            return values.ARITHMETIC[op](left_value, right_value)
    return _VARIABLE


def _property_test(op: str, name: str, constant: object) -> Test:
    """``name <op> constant``, fast when the property already has the constant's type."""
    compare = _PYTHON_COMPARISONS[op]
    slow = values.COMPARISONS[op]
    if constant.__class__ is str and op in ("=", "<>"):
        text = constant

        def string_test(lookup: Lookup) -> bool:
            value = lookup(name)
            if value.__class__ is str:
                return compare(value, text)
            return value is not None and slow(value, text) is True

        return string_test
    if constant.__class__ is int or constant.__class__ is float:
        number = constant
        mismatch = op == "<>"  # ActiveMQ's <> is NOT =, so non-like types satisfy it

        def number_test(lookup: Lookup) -> bool:
            value = lookup(name)
            kind = value.__class__
            if kind is int or kind is float:
                return compare(value, number)
            if isinstance(value, str):
                converted = values.number_from_string(value)
                return mismatch if converted is None else compare(converted, number)
            return value is not None and slow(value, number) is True

        return number_test
    return lambda lookup: slow(lookup(name), constant) is True


def _all_of(truths: list[Truth]) -> Truth:
    def all_of(lookup: Lookup) -> bool | None:
        unknown = False
        for truth in truths:
            result = truth(lookup)
            if result is False:
                return False
            unknown = unknown or result is None
        return None if unknown else True

    return all_of


def _any_of(truths: list[Truth]) -> Truth:
    def any_of(lookup: Lookup) -> bool | None:
        unknown = False
        for truth in truths:
            result = truth(lookup)
            if result is True:
                return True
            unknown = unknown or result is None
        return None if unknown else False

    return any_of


def _between(value: Value, low: Value, high: Value, negated: bool) -> Truth:
    # ActiveMQ rewrites BETWEEN as (v >= low AND v <= high), NOT BETWEEN as (v < low OR v > high).
    def between(lookup: Lookup) -> bool | None:
        subject, lowest, highest = value(lookup), low(lookup), high(lookup)
        if negated:
            return values.or_(values.less(subject, lowest), values.greater(subject, highest))
        return values.and_(
            values.greater_equal(subject, lowest), values.less_equal(subject, highest)
        )

    return between


def _in(name: str, members: frozenset[str], negated: bool) -> Truth:
    # ActiveMQ's InExpression: UNKNOWN for an absent property and for one that is not a string.
    def contains(lookup: Lookup) -> bool | None:
        value = lookup(name)
        if not isinstance(value, str):
            return None
        return (value in members) is not negated

    return contains


def _like(value: Value, matches: Callable[[str], bool], negated: bool) -> Truth:
    # ActiveMQ's LikeExpression: UNKNOWN when absent, FALSE for a value that is not a string.
    def like(lookup: Lookup) -> bool | None:
        subject = value(lookup)
        if subject is None:
            return None
        result = isinstance(subject, str) and matches(subject)
        return result is not negated

    return like
