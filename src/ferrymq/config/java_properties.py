"""Java's `.properties` format (`java.util.Properties.load`), which ActiveMQ's credentials,
users and groups files are written in.

Comments start with `#` or `!`; a key ends at the first unescaped `=`, `:` or white space; a
line ending in an odd number of backslashes continues on the next; `\\t`, `\\n`, `\\uXXXX` and
friends are unescaped. Every value keeps the line it started on, for error messages. A file
is read as UTF-8, or as ISO-8859-1 (Java's own encoding for it) when it is not valid UTF-8.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["PropertiesFileError", "PropertyLine", "parse_properties", "read_properties"]

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_SEPARATORS = "=:"
_WHITE = " \t\f"


class PropertiesFileError(ValueError):
    """A properties file that cannot be read; the text names the file and line."""


@dataclass(frozen=True)
class PropertyLine:
    key: str
    value: str
    line: int


def read_properties(path: Path) -> list[PropertyLine]:
    """The entries of a properties file, in file order (a later duplicate wins for a dict)."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise PropertiesFileError(f"{path}: cannot read: {error.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("iso-8859-1")
    return parse_properties(text, str(path))


def parse_properties(text: str, source: str = "<string>") -> list[PropertyLine]:
    entries: list[PropertyLine] = []
    for line_number, logical in _logical_lines(text):
        key, value = _split(logical)
        entries.append(
            PropertyLine(_unescape(key, source, line_number), _unescape(value, source, line_number),
                         line_number)
        )  # fmt: skip
    return entries


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, text) of each entry, continuations joined, comments dropped."""
    result: list[tuple[int, str]] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.lstrip(_WHITE)
        if not pending:
            if not line or line[0] in "#!":
                continue
            start = number
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending.append(line[:-1])
            continue
        pending.append(line)
        result.append((start, "".join(pending)))
        pending = []
    if pending:
        result.append((start, "".join(pending)))
    return result


def _split(line: str) -> tuple[str, str]:
    index = 0
    while index < len(line):
        char = line[index]
        if char == "\\":
            index += 2
            continue
        if char in _SEPARATORS or char in _WHITE:
            break
        index += 1
    key = line[:index]
    rest = line[index:].lstrip(_WHITE)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_WHITE)
    return key, rest


def _unescape(text: str, source: str, line: int) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char != "\\" or index + 1 >= len(text):
            out.append(char)
            index += 1
            continue
        code = text[index + 1]
        if code == "u":
            digits = text[index + 2 : index + 6]
            try:
                if len(digits) != 4:
                    raise ValueError(digits)
                out.append(chr(int(digits, 16)))
            except ValueError:
                # The text is not shown: it may be a password.
                message = f"{source}:{line}: malformed \\uXXXX escape (four hex digits needed)"
                raise PropertiesFileError(message) from None
            index += 6
            continue
        out.append(_ESCAPES.get(code, code))
        index += 2
    return "".join(out)
