"""ActiveMQ-style URIs: plain (`tcp://host:61616?opt=v`) and composite (`failover:(a,b)?opt=v`).

The composite grammar follows ActiveMQ's `URISupport.parseComposite`:

* `scheme:(c1,c2,...)?options` or `scheme://(c1,...)?options`: the options belong to the composite;
* `scheme:c1,c2,...` (only for the schemes in `COMPOSITE_SCHEMES`): no options of its own; a query
  after the last member belongs to that member, as in ActiveMQ (`static:failover:(a,b)?x=0` is a
  static agent with one member, `failover:(a,b)?x=0`);
* members are split on commas outside parentheses, so composites nest.

Query values are percent-decoded with `+` meaning a space (Java's `URLDecoder`, which ActiveMQ
uses). Printing percent-encodes what would be ambiguous, so `parse_uri(str(u)) == u` for every URI
this module can represent. `raw` keeps the text as written and does not take part in equality.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TypeAlias
from urllib.parse import quote, unquote_plus

__all__ = [
    "COMPOSITE_SCHEMES",
    "URI",
    "AnyURI",
    "CompositeURI",
    "URIError",
    "parse_uri",
    "redact_url",
]

COMPOSITE_SCHEMES = frozenset(
    {"failover", "static", "simple", "masterslave", "fanout", "discovery"}
)
"""Schemes whose members may be listed without parentheses (`failover:a,b`)."""

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*")
# RFC 3986 reg-name characters, minus the ones that delimit composite members.
_HOST = re.compile(r"[A-Za-z0-9\-._~!$'*+;=%]*")
_EMPTY: Mapping[str, str] = MappingProxyType({})
# Characters printed as-is in query keys and values; everything else is percent-encoded.
_SAFE_TOP = ":/@!$'*;~,()[]"
_SAFE_NESTED = ":/@!$'*;~[]"


@dataclass(eq=False)
class URIError(ValueError):
    """A URI that cannot be parsed; `position` is a 0-based index into `uri`."""

    uri: str
    position: int
    part: str
    message: str

    def __str__(self) -> str:
        shown = f" at {self.part!r}" if self.part else ""
        return f"{self.message}{shown} (position {self.position} of {redact_url(repr(self.uri))})"


def _freeze(options: Mapping[str, str] | None) -> Mapping[str, str]:
    return MappingProxyType(dict(options)) if options else _EMPTY


@dataclass(frozen=True)
class URI:
    """A plain URI: `scheme://[userinfo@]host[:port][/path][?query]` or opaque `scheme:path`."""

    scheme: str
    host: str | None = None
    """None for an opaque URI (no `//`); "" for an empty authority as in `file:///x`."""
    port: int | None = None
    path: str = ""
    query: Mapping[str, str] = field(default_factory=lambda: _EMPTY, hash=False)
    """Options in the order written; values are decoded."""
    userinfo: str | None = None
    raw: str = field(default="", compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "query", _freeze(self.query))

    def __str__(self) -> str:
        return self.render(nested=False)

    def __repr__(self) -> str:  # a repr reaches logs and tracebacks: no password in it
        return f"URI({redact_url(str(self))!r})"

    def render(self, *, nested: bool) -> str:
        """Print; `nested` also encodes `,()` in the query so the URI can sit inside a composite."""
        text = f"{self.scheme}:"
        if self.host is not None:
            host = f"[{self.host}]" if ":" in self.host else self.host
            user = f"{self.userinfo}@" if self.userinfo is not None else ""
            port = f":{self.port}" if self.port is not None else ""
            text += f"//{user}{host}{port}"
        return text + self.path + _render_query(self.query, nested=nested)

    @property
    def options(self) -> Mapping[str, str]:
        """The query options (the name ActiveMQ's code uses)."""
        return self.query


@dataclass(frozen=True)
class CompositeURI:
    """A URI made of member URIs: `failover:(tcp://a:1,tcp://b:2)?randomize=false`."""

    scheme: str
    components: tuple[AnyURI, ...]
    options: Mapping[str, str] = field(default_factory=lambda: _EMPTY, hash=False)
    slashes: bool = False
    """Written as `scheme://(...)` (older Fuse documents) rather than `scheme:(...)`."""
    parenthesised: bool = field(default=True, compare=False)
    """Written with parentheses; printing adds them back wherever they are needed."""
    raw: str = field(default="", compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "components", tuple(self.components))
        object.__setattr__(self, "options", _freeze(self.options))

    def __str__(self) -> str:
        return self.render(nested=False)

    def __repr__(self) -> str:
        return f"CompositeURI({redact_url(str(self))!r})"

    def render(self, *, nested: bool) -> str:
        """Print; a nested list without parentheses is only unambiguous with one member."""
        head = f"{self.scheme}:{'//' if self.slashes else ''}"
        bare = (
            not self.parenthesised
            and not self.options
            and self.components
            and self.scheme.lower() in COMPOSITE_SCHEMES
        )
        if bare and (not nested or len(self.components) == 1):
            return head + ",".join(c.render(nested=True) for c in self.components)
        members = ",".join(c.render(nested=True) for c in self.components)
        return f"{head}({members}){_render_query(self.options, nested=nested)}"

    @property
    def query(self) -> Mapping[str, str]:
        return self.options


AnyURI: TypeAlias = URI | CompositeURI


def parse_uri(text: str) -> AnyURI:
    """Parse a plain or composite URI; raise `URIError` naming the offending part and position."""
    return _Parser(text).parse(0, len(text))


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text

    def fail(self, position: int, part: str, message: str) -> URIError:
        return URIError(self.text, position, part, message)

    def parse(self, start: int, end: int) -> AnyURI:
        text = self.text
        if start == end:
            raise self.fail(start, "", "empty URI")
        blank = re.search(r"\s", text[start:end])
        if blank:
            raise self.fail(start + blank.start(), blank.group(), "whitespace in URI")
        match = _SCHEME.match(text, start, end)
        if not match or match.end() == end or text[match.end()] != ":":
            part = text[start:end][:20]
            raise self.fail(start, part, "missing scheme (expected scheme:... or scheme://...)")
        scheme = match.group()
        body = match.end() + 1
        slashes = text.startswith("//", body) and body + 2 <= end
        inner = body + 2 if slashes else body
        if inner < end and text[inner] == "(":
            return self.composite_in_parentheses(scheme, slashes, inner, end, start)
        if scheme.lower() in COMPOSITE_SCHEMES:
            if inner == end:
                raise self.fail(inner, scheme, "composite URI lists no members")
            members = tuple(self.members(inner, end))
            return CompositeURI(scheme, members, _EMPTY, slashes, False, text[start:end])
        return self.plain(scheme, body, end, start)

    def composite_in_parentheses(
        self, scheme: str, slashes: bool, open_at: int, end: int, start: int
    ) -> CompositeURI:
        close = self.matching_parenthesis(open_at, end)
        members = tuple(self.members(open_at + 1, close)) if close > open_at + 1 else ()
        rest = close + 1
        options: Mapping[str, str] = _EMPTY
        if rest < end:
            if self.text[rest] != "?":
                raise self.fail(rest, self.text[rest:end], "unexpected text after ')'")
            options = self.query(rest + 1, end)
        return CompositeURI(scheme, members, options, slashes, True, self.text[start:end])

    def matching_parenthesis(self, open_at: int, end: int) -> int:
        depth = 0
        for i in range(open_at, end):
            char = self.text[i]
            if char == "(":
                depth += 1
            elif char == ")":
                depth -= 1
                if depth == 0:
                    return i
        raise self.fail(open_at, "(", "unbalanced parenthesis: no matching ')'")

    def members(self, start: int, end: int) -> list[AnyURI]:
        result: list[AnyURI] = []
        depth = 0
        member_start = start
        for i in range(start, end + 1):
            char = self.text[i] if i < end else ","
            if char == "(":
                depth += 1
            elif char == ")":
                depth -= 1
                if depth < 0:
                    raise self.fail(i, ")", "unbalanced parenthesis: unexpected ')'")
            elif char == "," and depth == 0:
                if member_start == i:
                    raise self.fail(i, ",", "empty member in composite URI")
                result.append(self.parse(member_start, i))
                member_start = i + 1
        if depth:
            raise self.fail(start, self.text[start:end], "unbalanced parenthesis: no matching ')'")
        return result

    def plain(self, scheme: str, body: int, end: int, start: int) -> URI:
        text = self.text
        query_at = text.find("?", body, end)
        hier_end = end if query_at < 0 else query_at
        for i in range(body, hier_end):
            if text[i] in "(),":
                raise self.fail(i, text[i], f"unexpected {text[i]!r} in a plain URI")
        query = self.query(query_at + 1, end) if query_at >= 0 else _EMPTY
        if "#" in text[body:end]:
            at = text.index("#", body, end)
            raise self.fail(at, "#", "fragments are not supported in broker URIs")
        host: str | None = None
        port: int | None = None
        userinfo: str | None = None
        path_start = body
        if text.startswith("//", body) and body + 2 <= hier_end:
            authority_start = body + 2
            slash = text.find("/", authority_start, hier_end)
            path_start = hier_end if slash < 0 else slash
            userinfo, host, port = self.authority(authority_start, path_start)
        path = text[path_start:hier_end]
        return URI(scheme, host, port, path, query, userinfo, text[start:end])

    def authority(self, start: int, end: int) -> tuple[str | None, str, int | None]:
        text = self.text
        userinfo: str | None = None
        at = text.rfind("@", start, end)
        if at >= 0:
            userinfo = text[start:at]
            start = at + 1
        if start < end and text[start] == "[":
            close = text.find("]", start, end)
            if close < 0:
                raise self.fail(start, text[start:end], "unterminated IPv6 address (missing ']')")
            host = text[start + 1 : close]
            after = close + 1
        else:
            match = _HOST.match(text, start, end)
            after = match.end() if match else start
            host = text[start:after]
        port: int | None = None
        if after < end:
            if text[after] != ":":
                raise self.fail(after, text[after:end], "invalid character in host")
            digits = text[after + 1 : end]
            if not digits.isdigit() or not digits.isascii():
                raise self.fail(after + 1, digits, "port is not a number")
            port = int(digits)
            if port > 65535:
                raise self.fail(after + 1, digits, "port out of range (0-65535)")
        return userinfo, host, port

    def query(self, start: int, end: int) -> Mapping[str, str]:
        options: dict[str, str] = {}
        position = start
        for pair in self.text[start:end].split("&"):
            if pair:
                key, _, value = pair.partition("=")
                name = unquote_plus(key)
                if not name:
                    raise self.fail(position, pair, "query option without a name")
                if name in options:
                    raise self.fail(position, pair, f"option {name!r} given twice")
                options[name] = unquote_plus(value)
            position += len(pair) + 1
        return _freeze(options)


def _render_query(options: Mapping[str, str], *, nested: bool) -> str:
    if not options:
        return ""
    safe = _SAFE_NESTED if nested else _SAFE_TOP
    return "?" + "&".join(
        f"{quote(k, safe=safe)}={quote(v, safe=safe)}" for k, v in options.items()
    )


# "password", each letter also as the parser would decode it (%70 or %50 for "p", ...).
_PASSWORD_LETTERS = "".join(f"(?:{c}|%{ord(c):02x}|%{ord(c.upper()):02x})" for c in "password")
_SECRET_OPTION = re.compile(
    rf"(?i)(?:(?<=[?&;\s(])|^)(?:[A-Za-z0-9_.\-]|%[0-9a-f]{{2}})*{_PASSWORD_LETTERS}="
)
# The user part may hold "@" (alice@example.com:secret@host): the password runs to the last "@".
_USERINFO = re.compile(r"(?<=://)([^:/\s?#(),]*):[^/\s?#]*@")
_MASK = "***"
_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'?")


def redact_url(text: str) -> str:
    """`text` with every password in it masked, for logs, the admin API and error messages.

    Masks the value of each option whose name ends in "password" (any case: `keyStorePassword`,
    `sslpassword`), at any nesting depth of a composite, and the password of `user:password@`.
    It scans text rather than parsing it, so it also masks URLs that do not parse and URLs inside
    a longer message. Inside parentheses a member's values have `,` and `)` percent-encoded (see
    `_SAFE_NESTED`), so those end a value there; at the top level only `&` and white space do.
    """
    text = _USERINFO.sub(rf"\1:{_MASK}@", text)
    out: list[str] = []
    depth = 0
    at = 0
    while (match := _SECRET_OPTION.search(text, at)) is not None:
        depth += _depth_change(text[at : match.start()])
        out.append(text[at : match.end()] + _MASK)
        at = _value_end(text, match.end(), nested=depth > 0)
    out.append(text[at:])
    return "".join(out)


def _depth_change(text: str) -> int:
    return text.count("(") - text.count(")")


def _value_end(text: str, start: int, *, nested: bool) -> int:
    """Where the option value starting at `start` ends; a libpq value may be quoted."""
    if text.startswith("'", start):
        quoted = _QUOTED.match(text, start)
        return quoted.end() if quoted else len(text)
    stops = "&\n\r\t ,)" if nested else "&\n\r\t "
    at = start
    while at < len(text) and text[at] not in stops:
        at += 1
    return at
