"""The one error a selector raises: the consumer's text is at fault, so it says where."""

from __future__ import annotations

from dataclasses import dataclass

# Characters quoted on each side of the error position when the selector is long.
_EXCERPT_RADIUS = 60


@dataclass(eq=False)
class SelectorError(ValueError):
    """A selector that cannot be used (JMS calls this ``InvalidSelectorException``).

    ``position`` is a 0-based character offset into ``text``; it equals ``len(text)`` when the
    selector ended too early.  Evaluation never raises: only parsing does.
    """

    message: str
    position: int
    text: str

    def __str__(self) -> str:
        return f'Invalid selector "{self.excerpt()}" at position {self.position}: {self.message}'

    def excerpt(self) -> str:
        """The text, or for a long one the part around the position, for logs and ERROR frames."""
        if len(self.text) <= 2 * _EXCERPT_RADIUS:
            return self.text
        start = max(0, self.position - _EXCERPT_RADIUS)
        end = self.position + _EXCERPT_RADIUS
        before = "..." if start > 0 else ""
        after = "..." if end < len(self.text) else ""
        return before + self.text[start:end] + after
