"""Reading elements of ActiveMQ Artemis's broker.xml vocabulary (and of `<broker-connections>`).

activemq.xml's readers judge what they do not read against ActiveMQ 5.x's schema (`schema`);
these vocabularies are not in it, so every reader here names, per element, what it reads, what
is valid Artemis but ignored (one warning with the reason) and what is valid Artemis but refused
(an error: ignoring it would run a broker that silently does less than the file promises).
Anything else is a typo: an error with file, line and a did-you-mean.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from types import MappingProxyType

from ferrymq.config import schema
from ferrymq.config.xml_document import Element, ElementReader, LoadContext

__all__ = ["NO_NAMES", "children", "finish", "text_value", "unknown"]

NO_NAMES: Mapping[str, str] = MappingProxyType({})


def unknown(kind: str, name: str, parent: str, candidates: Collection[str]) -> str:
    """`unknown element <x> in <parent>; did you mean y?` (or the list of what is expected)."""
    message = f"unknown {kind} {name} in <{parent}>"
    close = schema.closest(name, candidates)
    if close:
        return f"{message}; did you mean {close}?"
    if candidates:
        return f"{message} (expected one of: {', '.join(sorted(candidates))})"
    return f"{message} (it takes none)"


def children(
    context: LoadContext,
    element: Element,
    handled: Collection[str],
    ignored: Mapping[str, str] = NO_NAMES,
    refused: Mapping[str, str] = NO_NAMES,
) -> list[Element]:
    """The children named in `handled`, in file order; the others are warned about, refused
    or reported as unknown (see the module docstring)."""
    kept: list[Element] = []
    for child in element.children:
        if child.name in handled:
            kept.append(child)
        elif child.name in ignored:
            context.ignore(child, f"<{element.name}> {child.describe()}", ignored[child.name])
        elif child.name in refused:
            context.report(context.error(child, f"not supported yet: {refused[child.name]}"))
        else:
            names = {*handled, *ignored, *refused}
            message = unknown("element", f"<{child.name}>", element.name, names)
            context.report(context.error(child, message))
    return kept


def finish(reader: ElementReader, ignored: Mapping[str, str] = NO_NAMES) -> None:
    """Judge the attributes nobody asked for, and stray text (Artemis vocabulary only)."""
    element = reader.element
    for name in element.attributes:
        if name in reader.used:
            continue
        if name in ignored:
            reader.context.ignore(element, f"<{element.name} {name}>", ignored[name])
            continue
        known = {*(reader.used - {"#text"}), *ignored}
        reader.context.report(reader.error(unknown("attribute", name, element.name, known), name))
    if "#text" not in reader.used and element.text.strip():
        text = element.text.strip()
        reader.context.report(
            reader.error(f"unexpected text {text[:40]!r} inside <{element.name}>")
        )


def text_value(context: LoadContext, element: Element) -> str:
    """The text of a value element such as `<name>broker1</name>`, placeholders resolved."""
    reader = context.reader(element)
    value = reader.text()
    children(context, element, ())
    finish(reader)
    if not value:
        raise context.error(element, f"<{element.name}> is empty: give a value")
    return value
