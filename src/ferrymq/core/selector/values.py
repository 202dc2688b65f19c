"""What the selector operators do to values.

Every function here is three-valued: ``None`` is SQL's UNKNOWN (and an absent property),
``True``/``False`` are TRUE/FALSE.  Values are what a property lookup returns: ``str``, ``int``,
``float`` or ``bool``.

JMS 1.1 §3.8.1.1: "Only like type values can be compared ... exact numeric values and approximate
numeric values" may be mixed; "if the comparison of non-like type values is attempted, the value
of the operation is false"; a NULL operand makes it unknown.  ActiveMQ implements ``<>`` as
``NOT =``, so a non-like ``<>`` is TRUE; FerryMQ does the same.

STOMP headers are all strings, so ActiveMQ's STOMP transport parses selectors in its
``convert_string_expressions:`` mode, where a string compared with a number is read as a number
and a string compared with a boolean is read as a boolean.  FerryMQ always behaves that way, and
goes one step further than ActiveMQ: a numeric string is read as ``int`` or ``float`` by its own
form rather than by the other operand's Java type (ActiveMQ turns ``'2.5' > 2`` into
``Long.valueOf("2.5")``, which fails, so it is FALSE there and TRUE here).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any, TypeAlias

Truth: TypeAlias = bool | None
Number: TypeAlias = int | float

# A numeric string is a decimal number as STOMP producers write one: ASCII digits, sign, point and
# exponent, nothing else.  Python's int() and float() also take surrounding spaces, "_"
# separators, non-ASCII digits, "nan" and "inf"; checking the first and last characters, ASCII and
# "_" rules all of those out without a slower full scan.
_FIRST_CHARACTERS = frozenset("0123456789+-.")
_LAST_CHARACTERS = frozenset("0123456789.")
_BOOLEAN_WORDS = {"true": True, "false": False}
_SCALARS = (str, int, float, bool)


def number_from_string(text: str) -> Number | None:
    """The number a string property stands for when it meets a number, or None."""
    if (
        not text
        or text[-1] not in _LAST_CHARACTERS
        or text[0] not in _FIRST_CHARACTERS
        or not text.isascii()
        or "_" in text
    ):
        return None
    try:
        if "." in text or "e" in text or "E" in text:
            return float(text)
        return int(text)
    except ValueError:  # malformed, or longer than sys.get_int_max_str_digits()
        return None


def boolean_from_string(text: str) -> bool | None:
    """``'true'``/``'false'`` in any case, as Java's ``Boolean.valueOf`` spells them; else None."""
    return _BOOLEAN_WORDS.get(text.lower()) if len(text) <= 5 else None


def as_number(value: object) -> Number | None:
    """An arithmetic operand: a number, or a string that reads as one; else None (UNKNOWN)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    if isinstance(value, str):
        return number_from_string(value)
    return None


def as_condition(value: object) -> Truth:
    """A property used on its own as a condition (ActiveMQ's "boolean cast")."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return boolean_from_string(value) is True
    return False


def like_typed(left: object, right: object) -> tuple[Any, Any] | None:
    """Both operands as one comparable type, or None when JMS calls them non-like types.

    Neither operand may be None.
    """
    if left.__class__ is right.__class__ and left.__class__ in _SCALARS:
        return left, right
    left_kind, right_kind = _kind(left), _kind(right)
    if left_kind == right_kind:
        return (left, right) if left_kind else None
    if isinstance(left, str) and right_kind:
        converted = _convert(left, right_kind)
        return None if converted is None else (converted, right)
    if isinstance(right, str) and left_kind:
        converted = _convert(right, left_kind)
        return None if converted is None else (left, converted)
    return None


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return ""


def _convert(text: str, kind: str) -> object:
    return number_from_string(text) if kind == "number" else boolean_from_string(text)


def equal(left: object, right: object) -> Truth:
    if left is None or right is None:
        return None
    pair = like_typed(left, right)
    return False if pair is None else bool(pair[0] == pair[1])


def not_equal(left: object, right: object) -> Truth:
    result = equal(left, right)
    return None if result is None else not result


def _ordering(compare: Callable[[Any, Any], bool]) -> Callable[[object, object], Truth]:
    def ordered(left: object, right: object) -> Truth:
        if left is None or right is None:
            return None
        pair = like_typed(left, right)
        # Booleans have no order in JMS.  Strings are ordered as ActiveMQ's String.compareTo
        # orders them, by character (Java compares UTF-16 units, so the two differ only for
        # characters beyond U+FFFF against U+E000..U+FFFF).
        if pair is None or isinstance(pair[0], bool):
            return False
        return compare(pair[0], pair[1])

    return ordered


less = _ordering(operator.lt)
less_equal = _ordering(operator.le)
greater = _ordering(operator.gt)
greater_equal = _ordering(operator.ge)

COMPARISONS: dict[str, Callable[[object, object], Truth]] = {
    "=": equal,
    "<>": not_equal,
    "<": less,
    "<=": less_equal,
    ">": greater,
    ">=": greater_equal,
}


def _arithmetic(
    compute: Callable[[Number, Number], Number | None],
) -> Callable[[object, object], object]:
    def arithmetic(left: object, right: object) -> Number | None:
        x, y = as_number(left), as_number(right)
        if x is None or y is None:
            return None
        try:
            return compute(x, y)
        except (ArithmeticError, ValueError):  # overflow, division by zero, fmod of infinity
            return None

    return arithmetic


def _divide(x: Number, y: Number) -> Number:
    # ActiveMQ divides in double even for two integers (5 / 2 is 2.5).  Division by zero is
    # UNKNOWN here; ActiveMQ would produce Infinity or NaN.
    return x / y


def _modulo(x: Number, y: Number) -> Number:
    # ActiveMQ's "%" extension: Java's remainder, which takes the sign of the dividend.
    if isinstance(x, int) and isinstance(y, int):
        remainder = abs(x) % abs(y)
        return -remainder if x < 0 else remainder
    return math.fmod(x, y)


ARITHMETIC: dict[str, Callable[[object, object], object]] = {
    "+": _arithmetic(operator.add),
    "-": _arithmetic(operator.sub),
    "*": _arithmetic(operator.mul),
    "/": _arithmetic(_divide),
    "%": _arithmetic(_modulo),
}


def negate(value: object) -> Number | None:
    number = as_number(value)
    return None if number is None else -number


def and_(left: Truth, right: Truth) -> Truth:
    if left is False or right is False:
        return False
    return None if left is None or right is None else True


def or_(left: Truth, right: Truth) -> Truth:
    if left is True or right is True:
        return True
    return None if left is None or right is None else False
