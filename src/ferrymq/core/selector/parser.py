"""Parser for JMS message selectors (JMS 1.1 §3.8.1.1 "Message Selector Syntax").

Grammar, weakest binding first::

    selector   := condition END
    condition  := negation ((AND | OR) negation)*        -- AND binds tighter than OR
    negation   := NOT* predicate
    predicate  := sum [ ("=" | "<>" | "<" | "<=" | ">" | ">=") sum
                      | [NOT] BETWEEN sum AND sum
                      | [NOT] IN "(" string ("," string)* ")"
                      | [NOT] LIKE string [ESCAPE string]
                      | IS [NOT] NULL ]
    sum        := operand (("+" | "-" | "*" | "/" | "%") operand)*   -- * / % bind tighter
    operand    := ("+" | "-")* (literal | identifier | "(" condition ")")

Where it departs from ActiveMQ's ``SelectorParser.jj``, it does so to follow JMS and SQL: NOT
negates a whole predicate (ActiveMQ's grammar attaches it to the next operand), comparisons do
not chain (``a = b = c`` is an error), and ``+`` is arithmetic only (ActiveMQ concatenates
strings with it).  ``%`` is ActiveMQ's remainder extension.

Types are checked wherever the text alone decides them, with ActiveMQ's rules: a condition must
be boolean ("Expression will not result in a boolean value"), ``<``-style comparisons and
BETWEEN take numbers, arithmetic takes numbers, NULL is only tested with IS NULL, LIKE takes a
string pattern and IN a list of strings on an identifier.  Properties have no static type; their
values are checked at evaluation (see ``values``).

Loops replace recursion for operator chains, so only parentheses recurse (five stack frames
each: condition, predicate, sum, operand, parenthesized); both the tree's depth
and the parenthesis nesting are capped by ``MAX_NESTING_DEPTH`` so that neither parsing,
compiling nor evaluating can exhaust Python's stack.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

from ferrymq.core.selector.errors import SelectorError
from ferrymq.core.selector.lexer import Token, TokenKind, tokenize
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

# ActiveMQ's STOMP transport refuses a header line longer than 10 KiB
# (StompWireFormat.MAX_HEADER_LENGTH), so no selector a STOMP client can send to ActiveMQ is
# refused here for its length.
MAX_SELECTOR_LENGTH = 10 * 1024
# Far beyond any hand-written selector; low enough that parsing (5 frames per parenthesis),
# compiling and evaluating stay well inside Python's default recursion limit of 1000.
MAX_NESTING_DEPTH = 100

_COMPARISON_OPERATORS = frozenset({"=", "<>", "<", "<=", ">", ">="})
_ADDITIVE = frozenset({"+", "-"})
_MULTIPLICATIVE = frozenset({"*", "/", "%"})
_NEGATABLE = frozenset({"BETWEEN", "IN", "LIKE"})


class _Type(enum.Enum):
    BOOLEAN = "a boolean"
    NUMBER = "a number"
    STRING = "a string"
    NULL = "NULL"
    PROPERTY = "a property"
    """Known only when a message supplies the value."""


class _Parsed(NamedTuple):
    node: Expression
    start: int
    depth: int


def parse(text: str) -> Expression:
    """The tree of a selector; raises SelectorError with the offending position."""
    if len(text) > MAX_SELECTOR_LENGTH:
        raise SelectorError(
            f"selector is longer than {MAX_SELECTOR_LENGTH} characters", MAX_SELECTOR_LENGTH, text
        )
    tokens = tokenize(text)
    if tokens[0].kind is TokenKind.END:
        raise SelectorError("selector is empty", 0, text)
    return _Parser(text, tokens).selector()


def _is_operator_in(token: Token, symbols: frozenset[str]) -> bool:
    return token.kind is TokenKind.OPERATOR and token.text in symbols


def _type_of(node: Expression) -> _Type:
    match node:
        case Literal(value):
            if value is None:
                return _Type.NULL
            if isinstance(value, bool):
                return _Type.BOOLEAN
            return _Type.STRING if isinstance(value, str) else _Type.NUMBER
        case Identifier():
            return _Type.PROPERTY
        case Negate() | Arithmetic():
            return _Type.NUMBER
    return _Type.BOOLEAN  # comparisons, BETWEEN, IN, LIKE, IS NULL, NOT, AND, OR


class _Parser:
    def __init__(self, text: str, tokens: list[Token]) -> None:
        self._text = text
        self._tokens = tokens
        self._index = 0
        self._open_parentheses = 0

    def selector(self) -> Expression:
        parsed = self._condition()
        token = self._peek()
        if token.kind is not TokenKind.END:
            raise self._unexpected(token)
        self._require_condition(parsed)
        return parsed.node

    # -- tokens ---------------------------------------------------------------------------

    def _peek(self, ahead: int = 0) -> Token:
        return self._tokens[min(self._index + ahead, len(self._tokens) - 1)]

    def _advance(self) -> Token:
        token = self._tokens[self._index]
        if token.kind is not TokenKind.END:
            self._index += 1
        return token

    def _accept_keyword(self, word: str) -> Token | None:
        return self._advance() if self._peek().is_keyword(word) else None

    def _expect_keyword(self, word: str, context: str) -> None:
        if self._accept_keyword(word) is None:
            token = self._peek()
            raise self._error(f"expected {word} {context}, found {token.describe()}", token)

    def _expect_operator(self, symbol: str, context: str) -> None:
        token = self._peek()
        if not token.is_operator(symbol):
            raise self._error(f"expected {symbol!r} {context}, found {token.describe()}", token)
        self._advance()

    def _expect_string(self, context: str) -> Token:
        token = self._peek()
        if token.kind is not TokenKind.STRING:
            raise self._error(f"{context} must be a string literal", token)
        return self._advance()

    def _error(self, message: str, where: Token | int) -> SelectorError:
        position = where if isinstance(where, int) else where.position
        return SelectorError(message, position, self._text)

    def _unexpected(self, token: Token) -> SelectorError:
        if token.is_keyword("XPATH") or token.is_keyword("XQUERY"):
            return self._error(f"{token.text} selectors are not supported", token)
        return self._error(f"unexpected {token.describe()}", token)

    # -- conditions -----------------------------------------------------------------------

    def _condition(self) -> _Parsed:
        disjuncts: list[_Parsed] = []
        conjuncts: list[_Parsed] = []
        while True:
            negations: list[Token] = []
            while (token := self._accept_keyword("NOT")) is not None:
                negations.append(token)
            conjuncts.append(self._negate(negations, self._predicate()))
            if self._accept_keyword("AND"):
                continue
            disjuncts.append(self._combine(And, conjuncts))
            if not self._accept_keyword("OR"):
                return self._combine(Or, disjuncts)
            conjuncts = []

    def _negate(self, negations: list[Token], parsed: _Parsed) -> _Parsed:
        for token in reversed(negations):
            self._require_condition(parsed)
            parsed = self._nest(Not(parsed.node), token.position, parsed)
        return parsed

    def _combine(self, kind: type[And] | type[Or], parts: list[_Parsed]) -> _Parsed:
        if len(parts) == 1:
            return parts[0]
        for part in parts:
            self._require_condition(part)
        node = kind(tuple(part.node for part in parts))
        return self._nest(node, parts[0].start, *parts)

    def _require_condition(self, parsed: _Parsed) -> None:
        if _type_of(parsed.node) in (_Type.NUMBER, _Type.STRING):
            raise self._error("expression will not result in a boolean value", parsed.start)

    def _predicate(self) -> _Parsed:
        left = self._sum()
        token = self._peek()
        if _is_operator_in(token, _COMPARISON_OPERATORS):
            self._advance()
            return self._comparison(token, left, self._sum())
        if token.is_keyword("IS"):
            self._advance()
            negated = self._accept_keyword("NOT") is not None
            self._expect_keyword("NULL", "after IS" + (" NOT" if negated else ""))
            return self._nest(IsNull(left.node, negated), left.start, left)
        negated = False
        if token.is_keyword("NOT"):
            following = self._peek(1)
            if following.kind is not TokenKind.KEYWORD or following.text not in _NEGATABLE:
                raise self._error("expected BETWEEN, IN or LIKE after NOT", following)
            self._advance()
            negated = True
            token = self._peek()
        if token.is_keyword("BETWEEN"):
            self._advance()
            return self._between(left, negated)
        if token.is_keyword("IN"):
            self._advance()
            return self._in(left, token, negated)
        if token.is_keyword("LIKE"):
            self._advance()
            return self._like(left, negated)
        return left

    def _comparison(self, operator: Token, left: _Parsed, right: _Parsed) -> _Parsed:
        for operand in (left, right):
            operand_type = _type_of(operand.node)
            if operand_type is _Type.NULL:
                raise self._error("NULL cannot be compared; use IS NULL", operand.start)
            if operator.text not in ("=", "<>"):
                self._require_orderable(operand, operator.text)
        types = {_type_of(left.node), _type_of(right.node)}
        if types == {_Type.BOOLEAN, _Type.NUMBER}:
            raise self._error("a boolean cannot be compared with a number", operator)
        node = Comparison(operator.text, left.node, right.node)
        return self._nest(node, left.start, left, right)

    def _require_orderable(self, operand: _Parsed, operator: str) -> None:
        operand_type = _type_of(operand.node)
        if operand_type in (_Type.BOOLEAN, _Type.STRING, _Type.NULL):
            raise self._error(
                f"{operand_type.value} cannot be used with {operator}; "
                "only = and <> apply to strings and booleans",
                operand.start,
            )

    def _between(self, value: _Parsed, negated: bool) -> _Parsed:
        low = self._sum()
        self._expect_keyword("AND", "between the bounds of BETWEEN")
        high = self._sum()
        for operand in (value, low, high):
            self._require_orderable(operand, "BETWEEN")
        node = Between(value.node, low.node, high.node, negated)
        return self._nest(node, value.start, value, low, high)

    def _in(self, value: _Parsed, keyword: Token, negated: bool) -> _Parsed:
        if not isinstance(value.node, Identifier):
            raise self._error("IN applies to an identifier only", value.start)
        self._expect_operator("(", "after IN")
        listed = [self._expect_string("an IN list item").value]
        while self._peek().is_operator(","):
            self._advance()
            listed.append(self._expect_string("an IN list item").value)
        self._expect_operator(")", "to close the IN list")
        node = In(value.node, tuple(str(item) for item in listed), negated)
        return self._nest(node, value.start, value)

    def _like(self, value: _Parsed, negated: bool) -> _Parsed:
        value_type = _type_of(value.node)
        if value_type in (_Type.BOOLEAN, _Type.NUMBER):
            raise self._error(f"LIKE applies to strings, not to {value_type.value}", value.start)
        pattern = str(self._expect_string("a LIKE pattern").value)
        escape: str | None = None
        if self._accept_keyword("ESCAPE"):
            token = self._expect_string("an ESCAPE character")
            escape = str(token.value)
            if len(escape) != 1:
                raise self._error("ESCAPE must be a single character", token)
        return self._nest(Like(value.node, pattern, escape, negated), value.start, value)

    # -- values ---------------------------------------------------------------------------

    def _sum(self) -> _Parsed:
        """Left-associative + - over left-associative * / %, in one loop."""
        total: _Parsed | None = None
        additive: Token | None = None  # the + or - between total and the next term
        while True:
            term = self._operand()
            while _is_operator_in(token := self._peek(), _MULTIPLICATIVE):
                self._advance()
                term = self._arithmetic(token, term, self._operand())
            if total is None or additive is None:
                total = term
            else:
                total = self._arithmetic(additive, total, term)
            if not _is_operator_in(token, _ADDITIVE):
                return total
            additive = self._advance()

    def _arithmetic(self, operator: Token, left: _Parsed, right: _Parsed) -> _Parsed:
        for operand in (left, right):
            self._require_number(operand, operator.text)
        node = Arithmetic(operator.text, left.node, right.node)
        return self._nest(node, left.start, left, right)

    def _require_number(self, operand: _Parsed, operator: str) -> None:
        operand_type = _type_of(operand.node)
        if operand_type in (_Type.BOOLEAN, _Type.STRING):
            raise self._error(f"{operand_type.value} cannot be used with {operator}", operand.start)

    def _operand(self) -> _Parsed:
        signs: list[Token] = []
        while (token := self._peek()).is_operator("-") or token.is_operator("+"):
            signs.append(self._advance())
        token = self._advance()
        parsed = self._parenthesized(token) if token.is_operator("(") else self._primary(token)
        for sign in reversed(signs):
            self._require_number(parsed, "unary " + sign.text)
            if sign.text == "-":  # unary plus changes nothing, as in ActiveMQ
                parsed = self._nest(Negate(parsed.node), sign.position, parsed)
        return parsed

    def _primary(self, token: Token) -> _Parsed:
        match token.kind:
            case TokenKind.STRING | TokenKind.EXACT | TokenKind.APPROXIMATE:
                return _Parsed(Literal(token.value), token.position, 0)
            case TokenKind.IDENTIFIER:
                return _Parsed(Identifier(token.text), token.position, 0)
            case TokenKind.KEYWORD if token.text in ("TRUE", "FALSE", "NULL"):
                value = None if token.text == "NULL" else token.text == "TRUE"
                return _Parsed(Literal(value), token.position, 0)
        raise self._unexpected(token)

    def _parenthesized(self, opening: Token) -> _Parsed:
        self._open_parentheses += 1
        if self._open_parentheses > MAX_NESTING_DEPTH:
            raise self._error(f"nesting is deeper than {MAX_NESTING_DEPTH} levels", opening)
        inner = self._condition()
        closing = self._peek()
        if not closing.is_operator(")"):
            if closing.kind is TokenKind.END:
                message = f"missing ')' for the '(' at position {opening.position}"
                raise self._error(message, closing)
            raise self._unexpected(closing)
        self._advance()
        self._open_parentheses -= 1
        return self._nest(inner.node, opening.position, inner)

    def _nest(self, node: Expression, start: int, *children: _Parsed) -> _Parsed:
        depth = 1 + max(child.depth for child in children)
        if depth > MAX_NESTING_DEPTH:
            raise self._error(f"nesting is deeper than {MAX_NESTING_DEPTH} levels", start)
        return _Parsed(node, start, depth)
