"""Where a configuration value came from, and the error that names it."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ConfigError", "Location"]


@dataclass(frozen=True)
class Location:
    """A file (or "command line") and a 1-based line, printed as `activemq.xml:12`."""

    source: str
    line: int | None = None

    def __str__(self) -> str:
        return self.source if self.line is None else f"{self.source}:{self.line}"


@dataclass(eq=False)
class ConfigError(Exception):
    """A configuration the broker must not start with.

    `element` is the opening tag as the user wrote it, trimmed to the attribute that matters
    (`<transportConnector uri="tcp//x">`), so the message can be found in the file even without
    the line number.
    """

    source: str
    line: int | None
    element: str
    attribute: str | None
    message: str

    def __str__(self) -> str:
        parts = [str(Location(self.source, self.line))]
        if self.element:
            parts.append(self.element)
        if self.attribute:
            parts.append(f"attribute {self.attribute}")
        parts.append(self.message)
        return ": ".join(parts)
