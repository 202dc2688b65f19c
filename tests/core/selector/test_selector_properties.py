"""Property tests: selectors agree with SQLite where the grammars agree, and with themselves.

The generator builds well-typed trees from constructs whose meaning is the same in JMS and in
SQLite: integer and real arithmetic without division, comparisons of like types, AND/OR/NOT,
BETWEEN, IN, LIKE without ESCAPE (with ``PRAGMA case_sensitive_like=ON``) and IS NULL.  Numbers
are small and reals are multiples of 1/8, so every intermediate result is exact in a double and
both engines must produce exactly the same values.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ferrymq.core.selector import parse_selector, to_text
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
from ferrymq.core.selector.values import number_from_string

NUMERIC = ("n1", "n2")
TEXT = ("s1", "s2")
BOOLEAN = ("b1",)
ALPHABET = "ab%_'"
WIDE_ALPHABET = "aAb%_'é\n"
ORDERINGS = ("=", "<>", "<", "<=", ">", ">=")

# Mostly tiny values, so that equal operands and BETWEEN bounds come up often.
small_integers = st.one_of(st.integers(0, 3), st.integers(0, 30))
small_reals = st.one_of(st.integers(0, 24), st.integers(0, 240)).map(lambda eighths: eighths / 8)
numbers = st.recursive(
    st.one_of(
        small_integers.map(Literal),
        small_reals.map(Literal),
        st.sampled_from(NUMERIC).map(Identifier),
    ),
    lambda inner: st.one_of(
        inner.map(Negate),
        st.builds(Arithmetic, st.sampled_from("+-*"), inner, inner),
    ),
    max_leaves=6,
)
text_properties = st.sampled_from(TEXT).map(Identifier)
strings = st.one_of(text_properties, st.text(ALPHABET, max_size=4).map(Literal))
predicates = st.one_of(
    st.builds(Comparison, st.sampled_from(ORDERINGS), numbers, numbers),
    st.builds(Comparison, st.sampled_from(("=", "<>")), strings, strings),
    st.builds(Comparison, st.sampled_from(ORDERINGS), text_properties, text_properties),
    st.builds(
        Comparison,
        st.sampled_from(("=", "<>")),
        st.just(Identifier("b1")),
        st.booleans().map(Literal),
    ),
    st.builds(Between, numbers, numbers, numbers, st.booleans()),
    st.builds(
        In,
        text_properties,
        st.lists(st.text(ALPHABET, max_size=3), min_size=1, max_size=3).map(tuple),
        st.booleans(),
    ),
    st.builds(Like, strings, st.text(WIDE_ALPHABET, max_size=5), st.none(), st.booleans()),
    st.builds(IsNull, st.one_of(numbers, strings), st.booleans()),
    st.just(Identifier("b1")),
    st.booleans().map(Literal),
)
conditions = st.recursive(
    predicates,
    lambda inner: st.one_of(
        inner.map(Not),
        st.lists(inner, min_size=2, max_size=3).map(lambda operands: And(tuple(operands))),
        st.lists(inner, min_size=2, max_size=3).map(lambda operands: Or(tuple(operands))),
    ),
    max_leaves=8,
)
property_values = st.fixed_dictionaries(
    {
        "n1": st.one_of(st.none(), small_integers, small_reals),
        "n2": st.one_of(st.none(), small_integers, small_reals),
        "s1": st.one_of(
            st.none(), st.text(ALPHABET, max_size=3), st.text(WIDE_ALPHABET, max_size=4)
        ),
        "s2": st.one_of(
            st.none(), st.text(ALPHABET, max_size=3), st.text(WIDE_ALPHABET, max_size=4)
        ),
        "b1": st.one_of(st.none(), st.booleans()),
    }
)
# Any value at all for any property: types that do not match exercise the non-like rules.
any_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-50, 50),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(WIDE_ALPHABET, max_size=4),
    st.sampled_from(["1", "2.5", "-3", "1e1", "true", "FALSE", " 1", "x"]),
)
mixed_values = st.fixed_dictionaries(dict.fromkeys(NUMERIC + TEXT + BOOLEAN, any_values))

PROPERTY_SETTINGS = settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@pytest.fixture(scope="module")
def sqlite() -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(":memory:")
    connection.execute("PRAGMA case_sensitive_like = ON")
    yield connection
    connection.close()


def sqlite_truth(
    connection: sqlite3.Connection, sql: str, values: dict[str, object]
) -> bool | None:
    columns = ", ".join(f"? AS {name}" for name in values)
    query = f"SELECT CASE WHEN ({sql}) THEN 1 WHEN NOT ({sql}) THEN 0 END FROM (SELECT {columns})"
    (result,) = connection.execute(query, tuple(values.values())).fetchone()
    return None if result is None else bool(result)


@PROPERTY_SETTINGS
@given(tree=conditions, values=property_values)
def test_selectors_agree_with_sqlite(
    sqlite: sqlite3.Connection, tree: Expression, values: dict[str, object]
) -> None:
    text = to_text(tree)
    selector = parse_selector(text)
    expected = sqlite_truth(sqlite, text, values)
    assert selector.evaluate(values.get) is expected
    assert selector.matches(values.get) is (expected is True)


@settings(max_examples=600, deadline=None)
@given(predicate=predicates, values=property_values)
def test_single_predicates_agree_with_sqlite(
    sqlite: sqlite3.Connection, predicate: Expression, values: dict[str, object]
) -> None:
    """Each predicate on its own, where no AND or OR can hide a wrong answer."""
    for tree in (predicate, Not(predicate)):
        text = to_text(tree)
        assert parse_selector(text).evaluate(values.get) is sqlite_truth(sqlite, text, values)


@PROPERTY_SETTINGS
@given(tree=conditions)
def test_text_round_trips_to_the_same_tree(tree: Expression) -> None:
    text = to_text(tree)
    assert parse_selector(text).expression == tree
    assert to_text(parse_selector(text).expression) == text


@PROPERTY_SETTINGS
@given(tree=conditions, values=mixed_values)
def test_matches_is_evaluate_is_true_for_any_values(
    tree: Expression, values: dict[str, object]
) -> None:
    """The specialised fast paths of ``matches`` never disagree with the three-valued result."""
    selector = parse_selector(to_text(tree))
    result = selector.evaluate(values.get)
    assert result in (True, False, None)
    assert selector.matches(values.get) is (result is True)
    # The same tree read back from its text evaluates the same way.
    assert parse_selector(to_text(selector.expression)).evaluate(values.get) is result


simple_predicates = st.one_of(
    st.builds(Comparison, st.sampled_from(ORDERINGS), st.just(Identifier("n1")), numbers),
    st.builds(Comparison, st.sampled_from(ORDERINGS), numbers, st.just(Identifier("n1"))),
    st.builds(Comparison, st.sampled_from(("=", "<>")), st.just(Identifier("n1")), strings),
    st.builds(
        Comparison,
        st.sampled_from(("=", "<>")),
        st.just(Identifier("n1")),
        st.booleans().map(Literal),
    ),
    st.builds(In, st.just(Identifier("n1")), st.just(("1", "x", "")), st.booleans()),
    st.builds(
        Like,
        st.just(Identifier("n1")),
        st.sampled_from(["1%", "%", "x", "_"]),
        st.none(),
        st.booleans(),
    ),
)


@settings(max_examples=500, deadline=None)
@given(predicate=simple_predicates, value=any_values)
def test_fast_paths_agree_on_single_predicates(predicate: Expression, value: object) -> None:
    for tree in (
        predicate,
        Not(predicate),
        And((predicate, Literal(True))),
        Or((predicate, Literal(False))),
    ):
        selector = parse_selector(to_text(tree))
        assert selector.matches({"n1": value}.get) is (selector.evaluate({"n1": value}.get) is True)


finite_numbers = st.one_of(
    st.integers(-(10**6), 10**6), st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
)


@settings(max_examples=300, deadline=None)
@given(operator=st.sampled_from(ORDERINGS), value=finite_numbers, literal=finite_numbers)
def test_a_number_sent_as_a_stomp_string_selects_like_the_number(
    operator: str, value: float, literal: float
) -> None:
    selector = parse_selector(f"x {operator} {literal!r}")
    assert selector.matches(lambda _: str(value)) is selector.matches(lambda _: value)
    assert selector.evaluate(lambda _: str(value)) is selector.evaluate(lambda _: value)


def reference_like(pattern: str, escape: str | None, value: str) -> bool:
    """ActiveMQ's LikeExpression as a regular expression, for comparison."""
    regex: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == escape and i + 1 < len(pattern) and pattern[i + 1] in ("%", "_", escape):
            regex.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        regex.append(".*" if char == "%" else "." if char == "_" else re.escape(char))
        i += 1
    return re.fullmatch("".join(regex), value, re.DOTALL) is not None


LIKE_ALPHABET = "ab%_!\n"


@settings(max_examples=1000, deadline=None)
@given(
    pattern=st.text(LIKE_ALPHABET, max_size=8),
    escape=st.sampled_from([None, "!", "%", "_", "a"]),
    value=st.text(LIKE_ALPHABET, max_size=8),
)
def test_like_agrees_with_a_regular_expression(
    pattern: str, escape: str | None, value: str
) -> None:
    selector = parse_selector(to_text(Like(Identifier("v"), pattern, escape)))
    assert selector.matches({"v": value}.get) is reference_like(pattern, escape, value)


DECIMAL = re.compile(
    r"[+-]?(?:(\d+)|\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)", re.ASCII
)


@settings(max_examples=2000, deadline=None)
@given(text=st.text("0123456789+-.eE_ nafity\u0663\t", max_size=8))
def test_numeric_strings_are_exactly_decimal_numbers(text: str) -> None:
    """No spaces, "_", NaN, Infinity or non-ASCII digits, which int() and float() would take."""
    match = DECIMAL.fullmatch(text)
    expected = None if match is None else int(text) if match.group(1) else float(text)
    number = number_from_string(text)
    assert number == expected
    assert type(number) is type(expected)
