"""Reading activemq.xml safely, with line numbers, and typed attribute access.

The document is parsed with defusedxml's SAX driver: entity declarations (billion laughs),
external entities and external DTDs are refused, and the SAX locator gives the line of every
element, which ElementTree does not. Namespaces are ignored for matching (`amq:broker` is
`broker`), and the `xmlns*` and `xsi:*` attributes are dropped.

`ElementReader` is how every loader reads an element: each attribute it asks for is marked used,
Spring `${name}` placeholders are resolved on the way, and `finish()` looks at whatever is left.
What is left is judged against ActiveMQ's own vocabulary (`schema`): a valid ActiveMQ attribute or
child element that FerryMQ does not read is accepted with a warning saying why it is ignored
(`LoadContext.ignored`); anything else is a typo, an error naming file, line and attribute with a
did-you-mean. With `LoadContext.collect` set, errors are gathered instead of raised, so
`ferrymq check-config` can list them all.
"""

from __future__ import annotations

import io
import re
import xml.sax
import xml.sax.handler
import xml.sax.xmlreader
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from defusedxml import DefusedXmlException, EntitiesForbidden
from defusedxml import sax as defused_sax

from ferrymq.config import schema
from ferrymq.config.errors import ConfigError, Location
from ferrymq.config.model import IgnoredElement
from ferrymq.config.units import parse_bool, parse_float, parse_int, parse_size
from ferrymq.util.uri import AnyURI, URIError, parse_uri, redact_url

__all__ = ["Element", "ElementReader", "LoadContext", "read_document"]

_T = TypeVar("_T")
_PLACEHOLDER = re.compile(r"\$\{([^}:]*)(?::([^}]*))?\}")


@dataclass
class Element:
    """An XML element: local name, attributes as written, children, direct text, line."""

    name: str
    attributes: dict[str, str]
    line: int
    children: list[Element] = field(default_factory=list)
    text: str = ""

    def describe(self, attribute: str | None = None) -> str:
        """The opening tag, showing `attribute` (or the attribute that identifies the element)."""
        shown = attribute if attribute in self.attributes else None
        if shown is None:
            shown = next(
                (a for a in ("name", "id", "brokerName", "uri") if a in self.attributes), None
            )
        if shown is None:
            return f"<{self.name}>"
        # An error names the element: a password in it (or in a URL) must not go with it.
        value = "***" if shown.lower().endswith("password") else redact_url(self.attributes[shown])
        if len(value) > 80:
            value = value[:77] + "..."
        return f'<{self.name} {shown}="{value}">'


class _TreeBuilder(xml.sax.handler.ContentHandler):
    def __init__(self) -> None:
        super().__init__()
        self.locator: xml.sax.xmlreader.Locator | None = None
        self.stack: list[Element] = []
        self.root: Element | None = None

    def setDocumentLocator(self, locator: xml.sax.xmlreader.Locator) -> None:  # noqa: N802
        self.locator = locator

    def line(self) -> int:
        return (self.locator.getLineNumber() or 0) if self.locator is not None else 0

    def startElement(self, name: str, attrs: xml.sax.xmlreader.AttributesImpl) -> None:  # noqa: N802
        attributes = {
            key: value
            for key, value in attrs.items()
            if key != "xmlns" and not key.startswith(("xmlns:", "xsi:"))
        }
        element = Element(name.rpartition(":")[2], attributes, self.line())
        if self.stack:
            self.stack[-1].children.append(element)
        else:
            self.root = element
        self.stack.append(element)

    def endElement(self, name: str) -> None:  # noqa: N802
        self.stack.pop()

    def characters(self, content: str) -> None:
        if self.stack:
            self.stack[-1].text += content


def read_document(data: bytes | str, source: str) -> Element:
    """Parse XML text (str) or a file's bytes into `Element`s; errors become `ConfigError`."""
    builder = _TreeBuilder()
    parser = defused_sax.make_parser()
    parser.forbid_dtd = False  # a DOCTYPE is harmless once entities are refused
    parser.forbid_entities = True
    parser.forbid_external = True
    parser.setContentHandler(builder)
    parser.setFeature(xml.sax.handler.feature_namespaces, False)
    source_input = xml.sax.xmlreader.InputSource(source)
    if isinstance(data, str):
        source_input.setCharacterStream(io.StringIO(data))
    else:
        source_input.setByteStream(io.BytesIO(data))
    try:
        parser.parse(source_input)
    except xml.sax.SAXParseException as error:
        message = f"not well-formed XML: {error.getMessage()}"
        raise ConfigError(source, error.getLineNumber(), "", None, message) from None
    except EntitiesForbidden as error:
        message = f"entity declarations are not allowed (<!ENTITY {error.name}>)"
        raise ConfigError(source, builder.line() or None, "", None, message) from None
    except DefusedXmlException as error:  # ExternalReferenceForbidden, DTDForbidden
        message = f"external references are not allowed ({error})"
        raise ConfigError(source, builder.line() or None, "", None, message) from None
    if builder.root is None:  # pragma: no cover - expat reports an empty document itself
        raise ConfigError(source, None, "", None, "the document has no root element")
    return builder.root


@dataclass
class LoadContext:
    """What every reader needs: the file name, placeholder values and the Spring beans by id."""

    source: str
    properties: Mapping[str, str]
    beans: dict[str, Element] = field(default_factory=dict)
    referenced_beans: set[str] = field(default_factory=set)
    collect: bool = False
    """Gather errors in `errors` instead of raising the first (`ferrymq check-config`)."""
    errors: list[ConfigError] = field(default_factory=list)
    ignored: list[IgnoredElement] = field(default_factory=list)
    """Valid ActiveMQ settings FerryMQ does not act on, each with the reason."""

    def location(self, element: Element) -> Location:
        return Location(self.source, element.line)

    def report(self, error: ConfigError) -> None:
        """An error that need not stop the reading: raised, or gathered when collecting."""
        if not self.collect:
            raise error
        self.errors.append(error)

    def attempt(self, read: Callable[[], _T], default: _T) -> _T:
        """Read one part of the file; when collecting (`check-config`), an error there is noted
        and reading goes on with the part's default."""
        try:
            return read()
        except ConfigError as error:
            self.report(error)
            return default

    def read_part(
        self,
        parts: Mapping[str, Element],
        name: str,
        read: Callable[[LoadContext, Element], _T],
        default: _T,
    ) -> _T:
        """`read` the part `<name>` if the file has one (see `attempt`)."""
        if name not in parts:
            return default
        element = parts[name]
        return self.attempt(lambda: read(self, element), default)

    def ignore(self, element: Element, shown: str, reason: str) -> None:
        self.ignored.append(IgnoredElement(self.location(element), shown, reason))

    def error(self, element: Element, message: str, attribute: str | None = None) -> ConfigError:
        return ConfigError(
            self.source, element.line, element.describe(attribute), attribute, message
        )

    def resolve(self, element: Element, attribute: str | None, value: str) -> str:
        """Replace Spring `${name}` / `${name:default}` placeholders."""

        def replace(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in self.properties:
                return self.properties[name]
            if default is not None:
                return default
            known = ", ".join(sorted(self.properties)) or "none"
            message = f"unknown placeholder ${{{name}}} (known: {known})"
            raise self.error(element, message, attribute)

        return _PLACEHOLDER.sub(replace, value)

    def reader(self, element: Element) -> ElementReader:
        return ElementReader(self, element)


class ElementReader:
    """Typed, placeholder-resolving access to one element's attributes and children."""

    def __init__(self, context: LoadContext, element: Element) -> None:
        self.context = context
        self.element = element
        self.used: set[str] = set()

    def error(self, message: str, attribute: str | None = None) -> ConfigError:
        return self.context.error(self.element, message, attribute)

    def location(self) -> Location:
        return self.context.location(self.element)

    def optional(self, name: str) -> str | None:
        """The attribute's value with placeholders resolved, or None when absent."""
        self.used.add(name)
        value = self.element.attributes.get(name)
        return None if value is None else self.context.resolve(self.element, name, value)

    def _typed(self, name: str, convert: Callable[[str], _T]) -> _T | None:
        value = self.optional(name)
        if value is None:
            return None
        try:
            return convert(value)
        except ValueError as error:
            self.context.report(self.error(str(error), name))
            return None

    def string(self, name: str, default: str) -> str:
        value = self.optional(name)
        return default if value is None else value

    def required(self, name: str) -> str:
        value = self.optional(name)
        if value is None or not value.strip():
            raise self.error("required attribute is missing or empty", name)
        return value

    def boolean(self, name: str, default: bool) -> bool:
        value = self._typed(name, parse_bool)
        return default if value is None else value

    def optional_boolean(self, name: str) -> bool | None:
        return self._typed(name, parse_bool)

    def integer(self, name: str, default: int, *, minimum: int | None = None) -> int:
        value = self._typed(name, lambda text: parse_int(text, minimum=minimum))
        return default if value is None else value

    def optional_integer(self, name: str, *, minimum: int | None = None) -> int | None:
        return self._typed(name, lambda text: parse_int(text, minimum=minimum))

    def number(self, name: str, default: float, *, minimum: float | None = None) -> float:
        value = self._typed(name, lambda text: parse_float(text, minimum=minimum))
        return default if value is None else value

    def size(self, name: str) -> int | None:
        return self._typed(name, parse_size)

    def path(self, name: str) -> Path | None:
        value = self.optional(name)
        if value is not None and not value.strip():
            raise self.error("empty path", name)
        return None if value is None else Path(value.strip())

    def uri(self, name: str, expected: str) -> tuple[str, AnyURI] | None:
        """A URI attribute as (text, parsed). Whitespace is removed first: a URI holds none
        (RFC 3986 section 2), so any is line wrapping of a long value (seed 000 Example 4.1)."""
        value = self.optional(name)
        if value is None:
            return None
        text = "".join(value.split())
        try:
            return text, parse_uri(text)
        except URIError as error:
            raise self.error(f"not a URI (expected {expected}): {error}", name) from None

    def custom(self, name: str, convert: Callable[[str], _T]) -> _T | None:
        """Convert with a function that raises ValueError with a message for the user."""
        return self._typed(name, convert)

    def children(self, allowed: Collection[str]) -> list[Element]:
        """The child elements named in `allowed`; any other is warned about when it is valid
        ActiveMQ (and left out), refused when listed in `schema.REFUSED`, else an error."""
        kept: list[Element] = []
        for child in self.element.children:
            if child.name in allowed:
                kept.append(child)
            else:
                self._other_child(child, allowed)
        return kept

    def _other_child(self, child: Element, allowed: Collection[str]) -> None:
        parent = self.element.name
        if child.name in schema.REFUSED:
            message = f"not supported yet: {schema.REFUSED[child.name]}"
            self.context.report(self.context.error(child, message))
        elif schema.is_activemq_child(parent, child.name):
            reason = schema.child_reason(parent, child.name)
            self.context.ignore(child, f"<{parent}> {child.describe()}", reason)
        else:
            candidates = set(allowed) | schema.known_children(parent)
            message = _unknown(f"<{parent}>", child.name, allowed, candidates)
            self.context.report(self.context.error(child, message))

    def single_children(self, allowed: Collection[str]) -> dict[str, Element]:
        """Children that may each appear at most once, by name."""
        found: dict[str, Element] = {}
        for child in self.children(allowed):
            if child.name in found:
                first = found[child.name].line
                message = (
                    f"<{child.name}> given twice in <{self.element.name}> (first on line {first})"
                )
                raise self.context.error(child, message)
            found[child.name] = child
        return found

    def text(self) -> str:
        """The element's text content with placeholders resolved."""
        self.used.add("#text")
        return self.context.resolve(self.element, None, self.element.text.strip())

    def finish(self) -> None:
        """Judge the attributes nobody asked for (see the module docstring), and stray text."""
        tag = self.element.name
        for name in self.element.attributes:
            if name in self.used:
                continue
            if schema.is_activemq_attribute(tag, name):
                reason = schema.attribute_reason(tag, name)
                self.context.ignore(self.element, f"<{tag} {name}>", reason)
                continue
            known = sorted(self.used - {"#text"})
            candidates = set(known) | schema.known_attributes(tag)
            message = _unknown(f"<{tag}>", name, known, candidates, kind="attribute")
            self.context.report(self.error(message, name))
        if "#text" not in self.used and self.element.text.strip():
            text = self.element.text.strip()
            self.context.report(self.error(f"unexpected text {text[:40]!r} inside <{tag}>"))


def _unknown(
    parent: str,
    name: str,
    allowed: Collection[str],
    candidates: Collection[str],
    kind: str = "element",
) -> str:
    # The error already shows the attribute's name; an element's name is said here. Unknown
    # means to ActiveMQ 5.x as well: a name valid there would have been warned about instead.
    message = f"unknown element <{name}> in {parent}" if kind == "element" else "unknown attribute"
    close = schema.closest(name, candidates)
    if close:
        return f"{message}; did you mean {close}?"
    if allowed:
        listed = ", ".join(sorted(allowed))
        return f"{message} (expected one of: {listed})"
    return f"{message} (it takes none)"
