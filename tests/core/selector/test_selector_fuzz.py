"""Fuzzing: whatever a consumer sends, parsing raises SelectorError or yields a usable selector."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ferrymq.core.selector import (
    MAX_SELECTOR_LENGTH,
    Selector,
    SelectorError,
    parse_selector,
    to_text,
)

TOKENS = [
    "a", "b", "$c", "_d", "é", "1", "0", "017", "0x1F", "1L", "1.5", ".5", "7.", "1e3",
    "6.02E+23", "2f", "1e999", "'x'", "''", "'%_'", "''''", "'it''s'",
    "(", ")", ",", "=", "<>", "<", "<=", ">", ">=", "+", "-", "*", "/", "%",
    "NOT", "AND", "OR", "BETWEEN", "LIKE", "ESCAPE", "'!'", "IN", "IS", "NULL", "TRUE", "false",
]  # fmt: skip
JUNK = ["08", "99999999999999999999", "1" * 4400, "!", "'", '"', "XPATH", "--", "\n", "/*", "*/"]
CORPUS = [
    "color = 'red' AND weight > 2.5",
    "a = 1 OR b = 2 AND NOT c = 3",
    "(a + b) * -2 >= c / 4 % 3",
    "a BETWEEN 1 AND 2 OR b NOT BETWEEN 0x10 AND 017",
    "a IN ('x', 'y''z') AND b NOT IN ('')",
    "a LIKE 'x%_' ESCAPE '!' OR b NOT LIKE '%'",
    "a IS NULL OR b IS NOT NULL",
    "(a = 1) = TRUE AND NOT (b OR c)",
    "a = 1.5e3 AND b = .5 AND c = 7. AND d = 2F",
    "/* comment */ a = 1 -- trailing\n AND b",
]
SELECTORISH = "ab1029.eExX'()=<>+-*/%,!_$ \nNOTANDORLIKEBETWENISULSCP"

values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=5),
    st.sampled_from(["1", "-2.5", "1e3", "true", "x", "9" * 5000]),
)
lookups = st.dictionaries(st.sampled_from(["a", "b", "$c", "_d", "é", "color", "weight"]), values)


def parse_or_error(text: str) -> Selector | None:
    try:
        return parse_selector(text)
    except SelectorError as raised:
        error = raised
    assert error.text == text
    assert 0 <= error.position <= len(text)
    assert error.message
    assert str(error).startswith("Invalid selector")
    return None


def check_usable(selector: Selector, lookup: dict[str, object]) -> None:
    result = selector.evaluate(lookup.get)
    assert result in (True, False, None)
    assert selector.matches(lookup.get) is (result is True)
    assert all(name in selector.text for name in selector.identifiers)
    # Whatever was accepted prints back to text that parses to the same tree.
    assert parse_selector(to_text(selector.expression)).expression == selector.expression


@settings(max_examples=500, deadline=None)
@given(text=st.text())
def test_arbitrary_text(text: str) -> None:
    parse_or_error(text)


@settings(max_examples=500, deadline=None)
@given(text=st.text(SELECTORISH, max_size=40), lookup=lookups)
def test_selector_like_text(text: str, lookup: dict[str, object]) -> None:
    selector = parse_or_error(text)
    if selector is not None:
        check_usable(selector, lookup)


@settings(max_examples=600, deadline=None)
@given(tokens=st.lists(st.sampled_from(TOKENS * 6 + JUNK), max_size=12), lookup=lookups)
def test_token_soup(tokens: list[str], lookup: dict[str, object]) -> None:
    selector = parse_or_error(" ".join(tokens))
    if selector is not None:
        check_usable(selector, lookup)


@settings(max_examples=800, deadline=None)
@given(
    selector=st.sampled_from(CORPUS),
    edits=st.lists(
        st.tuples(st.integers(0, 60), st.sampled_from(["", " ", *TOKENS, *JUNK])),
        min_size=1,
        max_size=3,
    ),
    lookup=lookups,
)
def test_edited_selectors(
    selector: str, edits: list[tuple[int, str]], lookup: dict[str, object]
) -> None:
    """Valid selectors with a character replaced by a token or deleted, a few times over."""
    text = selector
    for index, replacement in edits:
        at = index % (len(text) + 1)
        text = text[:at] + replacement + text[at + 1 :]
    parsed = parse_or_error(text)
    if parsed is not None:
        check_usable(parsed, lookup)


@settings(max_examples=20, deadline=None)
@given(tokens=st.lists(st.sampled_from(TOKENS + JUNK), min_size=1, max_size=5))
def test_very_long_token_soup(tokens: list[str]) -> None:
    text = " ".join(tokens * (MAX_SELECTOR_LENGTH // len(" ".join(tokens)) + 1))
    parse_or_error(text)
    parse_or_error(text[:MAX_SELECTOR_LENGTH])
