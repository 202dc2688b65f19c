"""Parsing: trees, precedence, literals, identifiers, limits and error positions."""

from __future__ import annotations

import math
from dataclasses import FrozenInstanceError

import pytest

from ferrymq.core.selector import (
    MAX_NESTING_DEPTH,
    MAX_SELECTOR_LENGTH,
    SelectorError,
    parse_selector,
    to_text,
)
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
    LiteralValue,
    Negate,
    Not,
    Or,
)

a, b, c, d = Identifier("a"), Identifier("b"), Identifier("c"), Identifier("d")


def cmp(operator: str, left: Expression, right: Expression | LiteralValue) -> Comparison:
    if right is None or isinstance(right, str | int | float | bool):
        right = Literal(right)
    return Comparison(operator, left, right)


NOTHING: dict[str, object] = {}


def parsed(text: str) -> Expression:
    return parse_selector(text).expression


@pytest.mark.parametrize(
    ("text", "tree"),
    [
        ("a = 1 OR b = 2 AND c = 3", Or((cmp("=", a, 1), And((cmp("=", b, 2), cmp("=", c, 3)))))),
        ("(a = 1 OR b = 2) AND c = 3", And((Or((cmp("=", a, 1), cmp("=", b, 2))), cmp("=", c, 3)))),
        ("a AND b AND c OR d", Or((And((a, b, c)), d))),
        ("a AND (b AND c)", And((a, And((b, c))))),
        ("NOT a = 1 AND b", And((Not(cmp("=", a, 1)), b))),
        ("NOT NOT a", Not(Not(a))),
        ("NOT (a OR b)", Not(Or((a, b)))),
        (
            "a + b * c - d / 2 % 3 > 0",
            cmp(
                ">",
                Arithmetic(
                    "-",
                    Arithmetic("+", a, Arithmetic("*", b, c)),
                    Arithmetic("%", Arithmetic("/", d, Literal(2)), Literal(3)),
                ),
                0,
            ),
        ),
        ("a - b - c = 0", cmp("=", Arithmetic("-", Arithmetic("-", a, b), c), 0)),
        ("a - (b - c) = 0", cmp("=", Arithmetic("-", a, Arithmetic("-", b, c)), 0)),
        ("-a * b = 1", cmp("=", Arithmetic("*", Negate(a), b), 1)),
        ("- -5 = +5", cmp("=", Negate(Negate(Literal(5))), 5)),
        ("+a = 1", cmp("=", a, 1)),
        (
            "a BETWEEN 1 + 1 AND 2 * 3 AND b",
            And(
                (
                    Between(
                        a,
                        Arithmetic("+", Literal(1), Literal(1)),
                        Arithmetic("*", Literal(2), Literal(3)),
                    ),
                    b,
                )
            ),
        ),
        ("a NOT BETWEEN -1 AND 1", Between(a, Negate(Literal(1)), Literal(1), negated=True)),
        ("a IN ('x')", In(a, ("x",))),
        ("a NOT IN ('x', 'y''z', '')", In(a, ("x", "y'z", ""), negated=True)),
        ("a LIKE 'x%'", Like(a, "x%")),
        ("a NOT LIKE 'x!%' ESCAPE '!'", Like(a, "x!%", "!", negated=True)),
        ("'abc' LIKE 'a%'", Like(Literal("abc"), "a%")),
        ("a IS NULL", IsNull(a)),
        ("a + 1 IS NOT NULL", IsNull(Arithmetic("+", a, Literal(1)), negated=True)),
        ("(a = 1) = TRUE", cmp("=", cmp("=", a, 1), Literal(True))),
        ("a", a),
        ("TRUE", Literal(True)),
        ("false", Literal(False)),
        ("NULL", Literal(None)),
        ("a = 1 -- the rest of the line\n AND b", And((cmp("=", a, 1), b))),
        ("/* leading */ a /* = 2 */ = 1 --\r", cmp("=", a, 1)),
        ("a--1 = 2", cmp("=", Arithmetic("-", a, Negate(Literal(1))), 2)),
    ],
)
def test_parses_to_tree(text: str, tree: Expression) -> None:
    assert parsed(text) == tree


def test_keywords_are_case_insensitive() -> None:
    lower = "a is not null and b between 1 and 2 or c like 'x' escape '!' or d not in ('q')"
    mixed = "a Is NoT nUlL AnD b BeTwEeN 1 aNd 2 Or c LiKe 'x' EsCaPe '!' oR d NoT iN ('q')"
    assert parsed(lower) == parsed(mixed)


@pytest.mark.parametrize("name", ["a", "A", "_x", "$price", "x1", "JMSType", "café", "ünïcödé_2"])
def test_identifiers_follow_java_rules_and_keep_their_case(name: str) -> None:
    assert parsed(f"{name} = 1") == cmp("=", Identifier(name), 1)
    assert parse_selector(f"{name} = 1").identifiers == {name}


def test_identifiers_differing_in_case_are_distinct() -> None:
    assert parse_selector("color = 'x' OR COLOR = 'y'").identifiers == {"color", "COLOR"}


@pytest.mark.parametrize(
    ("literal", "value"),
    [
        ("57", 57),
        ("57L", 57),
        ("57l", 57),
        ("0", 0),
        ("00", 0),
        ("0x1F", 31),
        ("0X1fL", 31),
        ("017", 15),
        ("017L", 15),
        ("9223372036854775808", 2**63),
        ("7.", 7.0),
        (".5", 0.5),
        ("95.7", 95.7),
        ("6.02e23", 6.02e23),
        ("7E3", 7000.0),
        ("1E+2", 100.0),
        ("1e-2", 0.01),
        ("1.e5", 1e5),
        ("1.5F", 1.5),
        ("2d", 2.0),
        ("5f", 5.0),
        ("1e999", math.inf),
    ],
)
def test_numeric_literals(literal: str, value: float) -> None:
    tree = parsed(f"a = {literal}")
    assert tree == cmp("=", a, Literal(value))
    assert type(tree.right.value) is type(value)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("literal", "value"),
    [("'it''s'", "it's"), ("''", ""), ("''''", "'"), ("'日本 %_'", "日本 %_"), ("'a\nb'", "a\nb")],
)
def test_string_literals(literal: str, value: str) -> None:
    assert parsed(f"a = {literal}") == cmp("=", a, Literal(value))


def test_literal_equality_includes_the_type() -> None:
    assert Literal(1) != Literal(1.0)
    assert Literal(1) != Literal(True)
    assert Literal(0) != Literal(None)
    assert len({Literal(1), Literal(1.0), Literal(True)}) == 3


@pytest.mark.parametrize(
    ("text", "position", "message"),
    [
        ("a >< 1", 3, "unexpected '<'"),
        ("(a = 1", 6, "missing ')' for the '(' at position 0"),
        ("a = 1)", 5, "unexpected ')'"),
        ("a = 'abc", 4, "unterminated string literal"),
        ("a = 'it''s", 4, "unterminated string literal"),
        ("a + 1", 0, "expression will not result in a boolean value"),
        ("a = 1 AND 5", 10, "expression will not result in a boolean value"),
        ("NOT 'x'", 4, "expression will not result in a boolean value"),
        ("a LIKE b", 7, "a LIKE pattern must be a string literal"),
        ("a LIKE 'x' ESCAPE 'ab'", 18, "ESCAPE must be a single character"),
        ("a LIKE 'x' ESCAPE ''", 18, "ESCAPE must be a single character"),
        ("5 LIKE 'x'", 0, "LIKE applies to strings, not to a number"),
        ("a IN (1, 2)", 6, "an IN list item must be a string literal"),
        ("a IN ('x' 'y')", 10, "expected ')' to close the IN list, found string 'y'"),
        ("a + 1 IN ('x')", 0, "IN applies to an identifier only"),
        ("a = 1 b", 6, "unexpected identifier b"),
        ("a = 08", 4, "invalid octal literal 08"),
        ("a = 1.2.3", 4, "invalid numeric literal 1.2.3"),
        ("a = 1abc", 4, "invalid numeric literal 1abc"),
        ("a = 0x", 4, "invalid numeric literal 0x"),
        ("a = 1e", 4, "invalid numeric literal 1e"),
        ("a = 1.5L", 4, "invalid numeric literal 1.5L"),
        ("a = 99999999999999999999", 4, "integer literal 99999999999999999999 is out of range"),
        ("a = " + "9" * 5000, 4, f"integer literal {'9' * 5000} is out of range"),
        ("a = 0x1" + "0" * 16, 4, f"integer literal 0x1{'0' * 16} is out of range"),
        ("a = NULL", 4, "NULL cannot be compared; use IS NULL"),
        (
            "a < 'x'",
            4,
            "a string cannot be used with <; only = and <> apply to strings and booleans",
        ),
        (
            "TRUE >= a",
            0,
            "a boolean cannot be used with >=; only = and <> apply to strings and booleans",
        ),
        (
            "a BETWEEN 'a' AND 'z'",
            10,
            "a string cannot be used with BETWEEN; only = and <> apply to strings and booleans",
        ),
        ("TRUE = 1", 5, "a boolean cannot be compared with a number"),
        ("1 + 'a' = 2", 4, "a string cannot be used with +"),
        ("-'a' = 2", 1, "a string cannot be used with unary -"),
        ("a = # 1", 4, "unexpected character '#'"),
        ("a != 1", 2, "unexpected '!=' (not-equal is written <>)"),
        ('a = "x"', 4, "unexpected '\"' (string literals use single quotes)"),
        ("NOT", 3, "unexpected end of selector"),
        ("a =", 3, "unexpected end of selector"),
        ("a NOT 5", 6, "expected BETWEEN, IN or LIKE after NOT"),
        ("AND = 1", 0, "unexpected keyword AND"),
        ("a = 1 = 2", 6, "unexpected '='"),
        ("a BETWEEN 1 OR 2", 12, "expected AND between the bounds of BETWEEN, found keyword OR"),
        ("x IS 5", 5, "expected NULL after IS, found number 5"),
        ("x IS NOT 5", 9, "expected NULL after IS NOT, found number 5"),
        ("a = 1 /* open", 6, "unterminated comment"),
        ("XPATH '//a'", 0, "XPATH selectors are not supported"),
        ("xquery = 1", 0, "XQUERY selectors are not supported"),
        ("", 0, "selector is empty"),
        ("  \t\n", 0, "selector is empty"),
        ("-- only a comment\n", 0, "selector is empty"),
        ("a = 1 -- no line break ends this", 12, "unexpected identifier line"),
    ],
)
def test_errors_name_the_position(text: str, position: int, message: str) -> None:
    with pytest.raises(SelectorError) as raised:
        parse_selector(text)
    assert (raised.value.message, raised.value.position, raised.value.text) == (
        message,
        position,
        text,
    )


def test_error_reads_like_a_sentence() -> None:
    with pytest.raises(SelectorError) as raised:
        parse_selector("a >< 1")
    assert str(raised.value) == "Invalid selector \"a >< 1\" at position 3: unexpected '<'"
    assert isinstance(raised.value, ValueError)


def test_error_quotes_only_the_neighbourhood_of_a_long_selector() -> None:
    text = "a = 1 AND " * 100 + "b >< 2" + " AND c = 3" * 100
    with pytest.raises(SelectorError) as raised:
        parse_selector(text)
    assert raised.value.position == 1003
    assert raised.value.text == text
    assert str(raised.value) == (
        f"Invalid selector \"...{text[1003 - 60 : 1003 + 60]}...\" at position 1003: unexpected '<'"
    )


def test_longest_selector_is_accepted_and_one_more_character_is_not() -> None:
    longest = "a = 1" + " " * (MAX_SELECTOR_LENGTH - 5)
    assert parse_selector(longest).matches({"a": 1}.get)
    with pytest.raises(SelectorError) as raised:
        parse_selector(longest + " ")
    assert raised.value.position == MAX_SELECTOR_LENGTH
    assert raised.value.message == f"selector is longer than {MAX_SELECTOR_LENGTH} characters"


def nested_parentheses(depth: int) -> str:
    return "(" * depth + "a" + ")" * depth


def nested_nots(depth: int) -> str:
    return "NOT " * depth + "a"


def chained_sum(depth: int) -> str:
    return "a" + " + 1" * depth + " IS NULL"


def test_deepest_selectors_parse_compile_and_evaluate() -> None:
    # Evaluating the deepest trees must not exhaust the stack.
    parentheses = parse_selector(nested_parentheses(MAX_NESTING_DEPTH))
    assert (parentheses.evaluate(NOTHING.get), parentheses.evaluate({"a": True}.get)) == (
        None,
        True,
    )
    nots = parse_selector(nested_nots(MAX_NESTING_DEPTH))
    assert (nots.evaluate(NOTHING.get), nots.evaluate({"a": False}.get)) == (None, False)
    chain = parse_selector(chained_sum(MAX_NESTING_DEPTH - 1))
    assert (chain.evaluate(NOTHING.get), chain.evaluate({"a": 1}.get)) == (True, False)


@pytest.mark.parametrize(
    ("text", "position"),
    [
        (nested_parentheses(MAX_NESTING_DEPTH + 1), MAX_NESTING_DEPTH),
        (nested_parentheses(5_000), MAX_NESTING_DEPTH),
        (nested_nots(MAX_NESTING_DEPTH + 1), 0),
        (chained_sum(MAX_NESTING_DEPTH), 0),
        ("- " * 5000 + "a = 1", 2 * (5000 - MAX_NESTING_DEPTH - 1)),
    ],
)
def test_nesting_beyond_the_limit_is_an_error(text: str, position: int) -> None:
    with pytest.raises(SelectorError) as raised:
        parse_selector(text)
    assert raised.value.message == f"nesting is deeper than {MAX_NESTING_DEPTH} levels"
    assert raised.value.position == position


def test_a_long_flat_conjunction_is_not_deep() -> None:
    text = " AND ".join(f"p{i} = {i}" for i in range(600))
    selector = parse_selector(text)
    assert len(selector.identifiers) == 600
    assert selector.matches({f"p{i}": i for i in range(600)}.get)


def test_identifiers_lists_every_property_read() -> None:
    text = "a = 1 AND b IN ('x') OR c LIKE 'y' OR d IS NULL OR -e BETWEEN f AND g * 2 OR NOT h"
    assert parse_selector(text).identifiers == frozenset("abcdefgh")
    assert parse_selector("TRUE OR 1 = 2").identifiers == frozenset()


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("a=1 and not(b)", "a = 1 AND NOT b"),
        ("((a)) or (b and c)", "a OR b AND c"),
        ("(a or b) and c", "(a OR b) AND c"),
        ("a - (b - c) * -(-d) > 0x10", "a - (b - c) * - -d > 16"),
        ("x like '%''' escape '!'", "x LIKE '%''' ESCAPE '!'"),
        ("x not between 1. and 2e0", "x NOT BETWEEN 1.0 AND 2.0"),
        ("(a = 1) <> (b IS NULL)", "(a = 1) <> (b IS NULL)"),
        ("y in ( 'a' , 'b' )", "y IN ('a', 'b')"),
    ],
)
def test_to_text_prints_canonical_selectors(text: str, canonical: str) -> None:
    assert to_text(parsed(text)) == canonical
    assert parsed(canonical) == parsed(text)


def test_selector_is_immutable_and_compares_by_text() -> None:
    selector = parse_selector("a = 1")
    with pytest.raises(FrozenInstanceError):
        selector.text = "b = 1"  # type: ignore[misc]
    assert selector == parse_selector("a = 1")
    assert hash(selector) == hash(parse_selector("a = 1"))
    assert selector != parse_selector("a=1")
    assert repr(selector) == "Selector(text='a = 1')"
