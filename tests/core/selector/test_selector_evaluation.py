"""Evaluation: every operator, three-valued logic, types, STOMP string conversion, LIKE escapes."""

from __future__ import annotations

import pytest

from ferrymq.core.selector import parse_selector

T, F, U = True, False, None  # TRUE, FALSE, UNKNOWN


def truth(text: str, **properties: object) -> bool | None:
    """The three-valued result, checking that ``matches`` agrees with it."""
    selector = parse_selector(text)
    result = selector.evaluate(properties.get)
    assert selector.matches(properties.get) is (result is True)
    return result


def boolean(value: bool | None) -> dict[str, object]:
    return {} if value is None else {"value": value}


# SQL-92 / JMS 1.1 §3.8.1.1 truth tables, written out rather than computed.
AND_TABLE = [
    (T, T, T),
    (T, F, F),
    (T, U, U),
    (F, T, F),
    (F, F, F),
    (F, U, F),
    (U, T, U),
    (U, F, F),
    (U, U, U),
]
OR_TABLE = [
    (T, T, T),
    (T, F, T),
    (T, U, T),
    (F, T, T),
    (F, F, F),
    (F, U, U),
    (U, T, T),
    (U, F, U),
    (U, U, U),
]


@pytest.mark.parametrize(("p", "q", "expected"), AND_TABLE)
def test_and_truth_table(p: bool | None, q: bool | None, expected: bool | None) -> None:
    properties = {"p": p, "q": q}
    assert truth("p AND q", **{k: v for k, v in properties.items() if v is not None}) is expected
    # The same through comparisons, whose UNKNOWN comes from an absent property.
    values = {k: 1 if v else 0 for k, v in properties.items() if v is not None}
    assert truth("p = 1 AND q = 1", **values) is expected


@pytest.mark.parametrize(("p", "q", "expected"), OR_TABLE)
def test_or_truth_table(p: bool | None, q: bool | None, expected: bool | None) -> None:
    values = {k: 1 if v else 0 for k, v in {"p": p, "q": q}.items() if v is not None}
    assert truth("p = 1 OR q = 1", **values) is expected
    assert truth("p = 1 OR q = 1 OR FALSE", **values) is expected
    assert truth("(p = 1 OR q = 1) AND TRUE", **values) is expected


@pytest.mark.parametrize(("p", "expected"), [(T, F), (F, T), (U, U)])
def test_not_truth_table(p: bool | None, expected: bool | None) -> None:
    assert truth("NOT value", **boolean(p)) is expected
    assert truth("NOT NOT NOT value", **boolean(p)) is expected


def test_literal_conditions() -> None:
    assert truth("TRUE") is T
    assert truth("FALSE") is F
    assert truth("NULL") is U
    assert truth("NOT NULL") is U
    assert truth("NULL OR TRUE") is T


@pytest.mark.parametrize(
    ("text", "value", "expected"),
    [
        ("a = 1", 1, T),
        ("a = 1", 1.0, T),
        ("a = 1.5", 1.5, T),
        ("a <> 1", 2, T),
        ("a <> 1", 1.0, F),
        ("a > 2.5", 3, T),
        ("a > 2.5", 2.5, F),
        ("a >= 2.5", 2.5, T),
        ("a < 2", 2.0, F),
        ("a < 2", 1.99, T),
        ("a <= 2", 2, T),
        ("a <= 2", 3, F),
        ("2 < a", 3, T),
        ("2 >= a", 3, F),
        ("a = 'x'", "x", T),
        ("a = 'x'", "X", F),
        ("a <> 'x'", "y", T),
        ("'x' = a", "x", T),
        ("a = TRUE", True, T),
        ("a <> FALSE", True, T),
        ("a = FALSE", True, F),
    ],
)
def test_comparisons(text: str, value: object, expected: bool) -> None:
    assert truth(text, a=value) is expected


@pytest.mark.parametrize("operator", ["=", "<>", "<", "<=", ">", ">="])
def test_comparison_with_an_absent_property_is_unknown(operator: str) -> None:
    assert truth(f"a {operator} 1") is U
    assert truth(f"1 {operator} a") is U
    assert truth(f"a {operator} b", a=1) is U
    assert truth(f"a {operator} b") is U


def test_strings_are_ordered_as_activemq_orders_them() -> None:
    # ActiveMQ compares two string values with String.compareTo; literals are refused at parse.
    assert truth("a < b", a="apple", b="banana") is T
    assert truth("a > b", a="apple", b="Banana") is T
    assert truth("a >= b", a="10", b="9") is F  # two strings stay strings
    assert truth("a BETWEEN b AND c", a="m", b="a", c="z") is T


@pytest.mark.parametrize(
    ("text", "properties", "expected"),
    [
        # JMS: "If the comparison of non-like type values is attempted, the value of the
        # operation is false"; ActiveMQ's <> is NOT =, so it is true.
        ("a = 1", {"a": "abc"}, F),
        ("a <> 1", {"a": "abc"}, T),
        ("a > 1", {"a": "abc"}, F),
        ("NOT a > 1", {"a": "abc"}, T),
        ("a = 'x'", {"a": 5}, F),
        ("a = TRUE", {"a": 1}, F),
        ("a <> TRUE", {"a": 1}, T),
        ("a > 0", {"a": True}, F),
        ("a < b", {"a": False, "b": True}, F),  # booleans have no order
        ("a = b", {"a": 1, "b": "one"}, F),
        ("a = b", {"a": True, "b": 1}, F),
        ("a = b", {"a": b"bytes", "b": b"bytes"}, F),  # not a selector type at all
    ],
)
def test_non_like_types_are_false(text: str, properties: dict[str, object], expected: bool) -> None:
    assert truth(text, **properties) is expected


@pytest.mark.parametrize(
    ("text", "value", "expected"),
    [
        ("weight > 2.5", "3", T),
        ("weight > 2.5", "2", F),
        ("weight > 2", "2.5", T),  # ActiveMQ reads "2.5" as a Long here and says FALSE
        ("weight = 3", "3.0", T),
        ("weight = 3", "3", T),
        ("weight = 3", "+3", T),
        ("weight = 3", "003", T),
        ("weight = 0.003", "3e-3", T),
        ("weight = 3", " 3", F),
        ("weight = 3", "3 ", F),
        ("weight = 1000", "1_000", F),
        ("weight = 3", "٣", F),
        ("weight > 0", "NaN", F),
        ("weight > 0", "Infinity", F),
        ("weight <> 3", "heavy", T),
        ("weight BETWEEN 1 AND 5", "4.5", T),
        ("weight + 1 = 3", "2", T),
        ("-weight = -2", "2", T),
        ("weight * 2 = 5", "2.5", T),
        ("weight + 1 IS NULL", "heavy", T),
        ("weight = '5'", 5, T),
        ("weight = '5'", 5.0, T),
        ("weight > 4", "9" * 5000, F),  # longer than Python will read as an int
    ],
)
def test_numeric_strings_compare_as_numbers(text: str, value: object, expected: bool) -> None:
    """ActiveMQ's STOMP ``convert_string_expressions:`` mode, always on in FerryMQ."""
    assert truth(text, weight=value) is expected


def test_two_numeric_strings_are_added_as_numbers() -> None:
    assert truth("a + b = 5", a="2", b="3") is T
    assert truth("a * b > 5", a="2", b="3.5") is T


@pytest.mark.parametrize(
    ("text", "value", "expected"),
    [
        ("urgent = TRUE", "true", T),
        ("urgent = TRUE", "TRUE", T),
        ("urgent = FALSE", "False", T),
        ("urgent = TRUE", "yes", F),
        ("urgent = FALSE", "yes", F),  # ActiveMQ's Boolean.valueOf("yes") would say TRUE here
        ("urgent <> TRUE", "yes", T),
        ("urgent", "true", T),
        ("urgent", "false", F),
        ("NOT urgent", "false", T),
        ("urgent", "x", F),
        ("urgent", 1, F),
        ("urgent", True, T),
        ("urgent AND TRUE", None, U),
    ],
)
def test_boolean_strings_compare_as_booleans(
    text: str, value: object, expected: bool | None
) -> None:
    properties = {} if value is None else {"urgent": value}
    assert truth(text, **properties) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1 + 2 * 3 = 7", T),
        ("(1 + 2) * 3 = 9", T),
        ("10 - 4 - 3 = 3", T),
        ("2 * 3 % 4 = 2", T),
        ("-2 * -3 = 6", T),
        ("- -2 = 2", T),
        ("5 / 2 = 2.5", T),  # ActiveMQ divides in double
        ("7 % 3 = 1", T),
        ("-7 % 3 = -1", T),  # Java's remainder keeps the dividend's sign
        ("7.5 % 2 = 1.5", T),
        ("1 / 0 > 0", U),
        ("1.0 / 0 > 0", U),
        ("1 % 0 = 0", U),
        ("0x10 + 010 = 24", T),
        ("1e999 > 1e308", T),
        ("1e999 - 1e999 = 0", F),  # NaN equals nothing
        ("NOT 1 = 2 AND 2 = 2", T),
        ("1 = 1 OR 1 = 2 AND 1 = 3", T),
        ("(1 = 1 OR 1 = 2) AND 1 = 3", F),
        ("a + NULL IS NULL", T),
    ],
)
def test_arithmetic_and_precedence(text: str, expected: bool | None) -> None:
    assert truth(text, a=1) is expected


def test_arithmetic_overflow_is_unknown() -> None:
    assert truth("a * 1.5 > 0", a=10**400) is U
    assert truth("a / 3 > 0", a=10**400) is U
    assert truth("a * a > 0", a=10**200) is T  # integers do not overflow


def test_arithmetic_on_booleans_and_words_is_unknown() -> None:
    assert truth("a + 1 = 2", a=True) is U
    assert truth("a + 1 = 2", a="one") is U
    assert truth("-a = -1", a=True) is U


@pytest.mark.parametrize(
    ("text", "value", "expected"),
    [
        ("a BETWEEN 1 AND 3", 1, T),
        ("a BETWEEN 1 AND 3", 3, T),
        ("a BETWEEN 1 AND 3", 3.5, F),
        ("a BETWEEN 3 AND 1", 2, F),
        ("a NOT BETWEEN 1 AND 3", 0, T),
        ("a NOT BETWEEN 1 AND 3", 2, F),
        ("a BETWEEN 1 AND 3", None, U),
        ("a NOT BETWEEN 1 AND 3", None, U),
        ("a BETWEEN 1 AND b", 0, F),  # FALSE AND UNKNOWN
        ("a BETWEEN 1 AND b", 5, U),
        ("a NOT BETWEEN 1 AND b", 0, T),  # TRUE OR UNKNOWN
        ("a NOT BETWEEN 1 AND b", 5, U),
        ("a BETWEEN 1 AND 3", "x", F),
        ("a NOT BETWEEN 1 AND 3", "x", F),  # both halves are non-like comparisons
    ],
)
def test_between(text: str, value: object, expected: bool | None) -> None:
    properties = {} if value is None else {"a": value}
    assert truth(text, **properties) is expected


@pytest.mark.parametrize(
    ("text", "value", "expected"),
    [
        ("a IN ('x', 'y')", "x", T),
        ("a IN ('x', 'y')", "z", F),
        ("a IN ('x', 'y')", "X", F),
        ("a NOT IN ('x', 'y')", "z", T),
        ("a NOT IN ('x', 'y')", "y", F),
        ("a IN ('x', 'y')", None, U),
        ("a NOT IN ('x', 'y')", None, U),  # ActiveMQ's "Command NOT IN (...)" case
        ("a IN ('1')", 1, U),  # ActiveMQ: IN on a non-string is UNKNOWN
        ("a NOT IN ('1')", 1, U),
        ("a IN ('it''s')", "it's", T),
    ],
)
def test_in(text: str, value: object, expected: bool | None) -> None:
    properties = {} if value is None else {"a": value}
    assert truth(text, **properties) is expected


@pytest.mark.parametrize(
    ("pattern", "value", "expected"),
    [
        ("'abc'", "abc", T),
        ("'abc'", "abcd", F),
        ("'a%'", "abc", T),
        ("'a%'", "a", T),
        ("'a%'", "ba", F),
        ("'%c'", "abc", T),
        ("'%b%'", "abc", T),
        ("'%b%'", "ac", F),
        ("'%'", "", T),
        ("'a_c'", "abc", T),
        ("'a_c'", "ac", F),
        ("'a_c'", "abbc", F),
        ("'_'", "é", T),
        ("'a%b%c'", "aXbYc", T),
        ("'a%b%c'", "acb", F),
        ("'ab%ba'", "aba", F),
        ("'ab%ba'", "abba", T),
        ("'%a_b%'", "xxaQbyy", T),
        ("'%'", "line\nbreak", T),
        ("'a%z'", "a\nz", T),
        ("'ABC'", "abc", F),
        ("'.*'", "anything", F),
        ("'!#$&()*+,-./:;<=>?@[\\]^`{|}~'", "!#$&()*+,-./:;<=>?@[\\]^`{|}~", T),
        ("'''In G_d We Trust'''", "'In God We Trust'", T),
        ("'''In Gd_ We Trust'''", "'In God We Trust'", F),
    ],
)
def test_like(pattern: str, value: str, expected: bool) -> None:
    assert truth(f"a LIKE {pattern}", a=value) is expected
    assert truth(f"a NOT LIKE {pattern}", a=value) is (not expected)


@pytest.mark.parametrize(
    ("clause", "value", "expected"),
    [
        ("'!_%' ESCAPE '!'", "_foo", T),
        ("'!_%' ESCAPE '!'", "foo", F),
        ("'100!%' ESCAPE '!'", "100%", T),
        ("'100!%' ESCAPE '!'", "1000", F),
        ("'a!!b' ESCAPE '!'", "a!b", T),
        ("'a!b' ESCAPE '!'", "a!b", T),  # before an ordinary character it stands for itself
        ("'a!' ESCAPE '!'", "a!", T),  # and at the end of the pattern
        ("'%\\%%' ESCAPE '\\'", "50% off", T),
        ("'%\\%%' ESCAPE '\\'", "50 off", F),
        ("'a%%' ESCAPE '%'", "a%", T),  # the escape may be a wildcard character itself
        ("'a%%' ESCAPE '%'", "ab", F),
        ("'a%_' ESCAPE '%'", "a_", T),
        ("'x''_' ESCAPE ''''", "x_", T),
        ("'x''_' ESCAPE ''''", "xy", F),
    ],
)
def test_like_escape(clause: str, value: str, expected: bool) -> None:
    assert truth(f"a LIKE {clause}", a=value) is expected
    assert truth(f"a NOT LIKE {clause}", a=value) is (not expected)


def test_like_on_absent_and_non_string_values() -> None:
    assert truth("a LIKE 'x%'") is U
    assert truth("a NOT LIKE 'x%'") is U
    # ActiveMQ's LikeExpression: FALSE for a value that is not a string, so NOT LIKE is TRUE.
    assert truth("a LIKE '1%'", a=12) is F
    assert truth("a NOT LIKE '1%'", a=12) is T


def test_like_does_not_backtrack_exponentially() -> None:
    # ".*a.*a.*a.*a.*a.*a.*b" against many a's is exponential for a backtracking regex.
    selector = parse_selector("a LIKE '%a%a%a%a%a%a%a%a%a%a%b'")
    assert not selector.matches({"a": "a" * 100_000}.get)
    assert selector.matches({"a": "a" * 100_000 + "b"}.get)
    underscores = parse_selector("a LIKE '%a_a%a_a%a_a%a_a%b_'")
    assert not underscores.matches({"a": "a" * 100_000}.get)


@pytest.mark.parametrize(
    ("text", "properties", "expected"),
    [
        ("a IS NULL", {}, T),
        ("a IS NULL", {"a": ""}, F),
        ("a IS NOT NULL", {"a": 0}, T),
        ("a IS NOT NULL", {}, F),
        ("a + 1 IS NULL", {}, T),
        ("(a = 1) IS NULL", {}, T),
        ("(a = 1) IS NOT NULL", {"a": "x"}, T),
        ("NOT a IS NULL", {}, F),
    ],
)
def test_is_null(text: str, properties: dict[str, object], expected: bool) -> None:
    assert truth(text, **properties) is expected


def test_comparing_conditions() -> None:
    assert truth("(a = 1) = (b = 2)", a=1, b=2) is T
    assert truth("(a = 1) <> (b = 2)", a=1, b=3) is T
    assert truth("(a = 1) = TRUE", a=1) is T
    assert truth("(a = 1) = TRUE") is U


def test_activemq_selector_test_cases() -> None:
    """Examples from ActiveMQ's own selector tests, with its property values."""
    message: dict[str, object] = {
        "name": "James",
        "rank": 123,
        "version": 2,
        "byteProp": 123,
        "floatProp": 123.0,
        "trueProp": True,
        "falseProp": False,
        "quote": "'In God We Trust'",
        "foo": "_foo",
    }
    expectations = {
        "name = 'James'": T,
        "rank > 100": T,
        "rank >= 124": F,
        "floatProp = 123": T,
        "name = 'James' and rank < 200": T,
        "unknown = 'Foo' and anotherUnknown < 200": U,
        "unknown = 'Foo' or anotherUnknown < 200": U,
        "name = 'Foo' or rank < 200": T,
        "rank + 2 = 125": T,
        "125 = (rank + 2)": T,
        "rank + version = 125": T,
        "rank - version = 121": T,
        "rank * version = 246": T,
        "rank / version = 61.5": T,
        "version / 2 = 1": T,
        "rank between 100 and 150": T,
        "rank between 10 and 120": F,
        "name in ('Gromit', 'Bob', 'James')": T,
        "name not in ('Gromit', 'Bob', 'Cheddar')": T,
        "dummy is null": T,
        "name is not null": T,
        "(trueProp OR falseProp) AND trueProp": T,
        "(trueProp OR falseProp) AND falseProp": F,
        "quote = '''In God We Trust'''": T,
        "foo LIKE '%oo'": T,
        "quote NOT LIKE '!_%' ESCAPE '!'": T,
        "-1.1 < 1.0": T,
        "1.E1 < 1.1E1": T,
        "-.5E1 < .1E1": T,
        "4E-10 < 5E-10": T,
    }
    for text, expected in expectations.items():
        assert truth(text, **message) is expected, text


def test_lookup_is_asked_only_for_identifiers_of_the_selector() -> None:
    asked: list[str] = []

    def lookup(name: str) -> object:
        asked.append(name)
        return {"color": "red", "weight": "3"}.get(name)

    selector = parse_selector("color = 'red' AND weight > 2.5")
    assert selector.matches(lookup)
    assert set(asked) <= selector.identifiers == {"color", "weight"}
