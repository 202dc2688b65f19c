"""Tokens of the message selector language.

JMS 1.1 §3.8.1.1 "Message Selector Syntax" borrows Java's literal syntax; ActiveMQ's
``SelectorParser.jj`` narrows it and adds comments.  What this lexer accepts:

* string literals in single quotes, ``''`` standing for one quote;
* exact numerics: decimal (``57``), hex (``0x1F``), octal (``017``), each with an optional
  ``L`` suffix as in Java;
* approximate numerics: ``7.``, ``.5``, ``95.7``, ``6.02e23``, ``7E3``, with an optional
  ``F``/``D`` suffix as in Java;
* keywords, case-insensitive; identifiers, case-sensitive, by Java's identifier rules;
* ActiveMQ's comments, ``-- to the end of a line`` and ``/* ... */``.

A number running straight into letters, digits or a dot (``1abc``, ``1.2.3``, ``08``) is one bad
literal rather than two tokens, so the error points at the literal.
"""

from __future__ import annotations

import enum
import re
import unicodedata
from dataclasses import dataclass

from ferrymq.core.selector.errors import SelectorError

KEYWORDS = frozenset(
    {"NOT", "AND", "OR", "BETWEEN", "LIKE", "ESCAPE", "IN", "IS", "TRUE", "FALSE", "NULL"}
)
# ActiveMQ reserves these for its XPath/XQuery selectors on XML bodies; FerryMQ does not evaluate
# bodies, but keeps the words reserved so a selector means the same thing on both brokers.
RESERVED_WORDS = frozenset({"XPATH", "XQUERY"})

OPERATORS = ("<>", "<=", ">=", "=", "<", ">", "+", "-", "*", "/", "%", "(", ")", ",")

# JavaCC's SPECIAL_TOKEN whitespace in SelectorParser.jj.
WHITESPACE = " \t\n\r\f"

# Java's Long range, widened by one so that -9223372036854775808 can be written.
MAX_EXACT_LITERAL = 2**63

_HEX = re.compile(r"0[xX][0-9a-fA-F]+[lL]?")
_APPROXIMATE = re.compile(
    r"(?:\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+(?=[fFdD]))[fFdD]?",
    re.ASCII,
)
_EXACT = re.compile(r"\d+[lL]?", re.ASCII)
_OCTAL_DIGITS = frozenset("01234567")
_IDENTIFIER_START = frozenset({"Lu", "Ll", "Lt", "Lm", "Lo", "Nl", "Sc", "Pc"})
_IDENTIFIER_PART = _IDENTIFIER_START | {"Nd", "Mn", "Mc"}


class TokenKind(enum.Enum):
    IDENTIFIER = "identifier"
    KEYWORD = "keyword"
    STRING = "string"
    EXACT = "number"
    APPROXIMATE = "approximate number"
    OPERATOR = "operator"
    END = "end"


@dataclass(frozen=True, slots=True)
class Token:
    kind: TokenKind
    text: str
    """The source text; for keywords, upper-cased."""
    position: int
    value: str | int | float | None = None
    """The decoded literal, for STRING, EXACT and APPROXIMATE tokens."""

    def is_keyword(self, word: str) -> bool:
        return self.kind is TokenKind.KEYWORD and self.text == word

    def is_operator(self, symbol: str) -> bool:
        return self.kind is TokenKind.OPERATOR and self.text == symbol

    def describe(self) -> str:
        """How an error message names this token."""
        if self.kind is TokenKind.END:
            return "end of selector"
        if self.kind is TokenKind.KEYWORD:
            return f"keyword {self.text}"
        if self.kind is TokenKind.OPERATOR:
            return repr(self.text)
        return f"{self.kind.value} {self.text}"


def is_identifier_start(char: str) -> bool:
    if char.isascii():
        return char.isalpha() or char in "_$"
    return unicodedata.category(char) in _IDENTIFIER_START


def is_identifier_part(char: str) -> bool:
    if char.isascii():
        return char.isalnum() or char in "_$"
    return unicodedata.category(char) in _IDENTIFIER_PART


def tokenize(text: str) -> list[Token]:
    """All tokens of ``text``, ending with one END token."""
    tokens: list[Token] = []
    length = len(text)
    i = 0
    while i < length:
        char = text[i]
        if char in WHITESPACE:
            i += 1
        elif text.startswith("--", i) and (newline := _line_end(text, i)) >= 0:
            i = newline + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise SelectorError("unterminated comment", i, text)
            i = end + 2
        elif char == "'":
            token = _string(text, i)
            tokens.append(token)
            i += len(token.text)
        elif _digit_at(text, i) or (char == "." and _digit_at(text, i + 1)):
            token = _number(text, i)
            tokens.append(token)
            i += len(token.text)
        elif is_identifier_start(char):
            end = i + 1
            while end < length and is_identifier_part(text[end]):
                end += 1
            tokens.append(_word(text[i:end], i))
            i = end
        else:
            symbol = next((op for op in OPERATORS if text.startswith(op, i)), None)
            if symbol is None:
                raise SelectorError(_unexpected_character(text, i), i, text)
            tokens.append(Token(TokenKind.OPERATOR, symbol, i))
            i += len(symbol)
    tokens.append(Token(TokenKind.END, "", length))
    return tokens


def _line_end(text: str, start: int) -> int:
    """Where a ``--`` comment ends, or -1 if no line break follows.

    ActiveMQ's LINE_COMMENT token needs its line break; without one, ``--`` is two minus signs
    (so ``a--1`` is ``a - -1`` there, and here too).
    """
    ends = [found for found in (text.find("\n", start), text.find("\r", start)) if found >= 0]
    return min(ends, default=-1)


def _digit_at(text: str, i: int) -> bool:
    return i < len(text) and text[i].isascii() and text[i].isdigit()


def _string(text: str, start: int) -> Token:
    parts: list[str] = []
    i = start + 1
    while True:
        quote = text.find("'", i)
        if quote < 0:
            raise SelectorError("unterminated string literal", start, text)
        parts.append(text[i:quote])
        if text.startswith("''", quote):
            parts.append("'")
            i = quote + 2
        else:
            return Token(TokenKind.STRING, text[start : quote + 1], start, "".join(parts))


def _number(text: str, start: int) -> Token:
    literal = text[start : _literal_end(text, start)]
    if _HEX.fullmatch(literal):
        token = Token(TokenKind.EXACT, literal, start, int(literal.rstrip("lL")[2:], 16))
    elif _APPROXIMATE.fullmatch(literal):
        token = Token(TokenKind.APPROXIMATE, literal, start, float(literal.rstrip("fFdD")))
    elif _EXACT.fullmatch(literal):
        digits = literal.rstrip("lL")
        if len(digits) > 1 and digits.startswith("0"):
            if not set(digits) <= _OCTAL_DIGITS:
                raise SelectorError(f"invalid octal literal {literal}", start, text)
            token = Token(TokenKind.EXACT, literal, start, int(digits, 8))
        elif len(digits) > len(str(MAX_EXACT_LITERAL)):  # before int() refuses thousands of digits
            raise SelectorError(f"integer literal {literal} is out of range", start, text)
        else:
            token = Token(TokenKind.EXACT, literal, start, int(digits))
    else:
        raise SelectorError(f"invalid numeric literal {literal}", start, text)
    if isinstance(token.value, int) and token.value > MAX_EXACT_LITERAL:
        raise SelectorError(f"integer literal {literal} is out of range", start, text)
    return token


def _literal_end(text: str, start: int) -> int:
    """End of the run of characters that could belong to one numeric literal."""
    hexadecimal = text.startswith(("0x", "0X"), start)
    end = start
    while end < len(text):
        char = text[end]
        exponent_sign = char in "+-" and text[end - 1] in "eE" and not hexadecimal
        if not (is_identifier_part(char) or char == "." or exponent_sign):
            break
        end += 1
    return end


def _word(word: str, start: int) -> Token:
    upper = word.upper() if word.isascii() else word
    if upper in KEYWORDS or upper in RESERVED_WORDS:
        return Token(TokenKind.KEYWORD, upper, start)
    return Token(TokenKind.IDENTIFIER, word, start)


def _unexpected_character(text: str, i: int) -> str:
    char = text[i]
    if text.startswith("!=", i):
        return "unexpected '!=' (not-equal is written <>)"
    if char == '"':
        return "unexpected '\"' (string literals use single quotes)"
    return f"unexpected character {char!r}"
