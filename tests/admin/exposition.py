"""A strict reader of Prometheus text exposition format 0.0.4, to check what FerryMQ renders.

Grammar from Prometheus' "Exposition formats" page, "Text format details".  It rejects anything
the format does not allow, rather than skipping it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL_NAME = r"[a-zA-Z_][a-zA-Z0-9_]*"
LABEL_VALUE = r'"(?:[^"\\\n]|\\[\\"n])*"'
LABEL = rf"{LABEL_NAME}={LABEL_VALUE}"
VALUE = r"[+-]?(?:Inf|NaN|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"

HELP_LINE = re.compile(rf"# HELP ({NAME}) ((?:[^\\\n]|\\[\\n])*)")
TYPE_LINE = re.compile(rf"# TYPE ({NAME}) (counter|gauge|histogram|summary|untyped)")
SAMPLE_LINE = re.compile(rf"({NAME})(?:\{{((?:{LABEL})(?:,{LABEL})*,?)?\}})? ({VALUE})(?: -?\d+)?")
LABEL_PAIR = re.compile(rf"({LABEL_NAME})=({LABEL_VALUE})")
ESCAPE = re.compile(r"\\(.)")


class ExpositionError(ValueError):
    pass


@dataclass
class Family:
    help: str | None = None
    type: str | None = None
    samples: list[tuple[dict[str, str], float]] = field(default_factory=list)

    def value(self, **labels: str) -> float:
        for sample_labels, value in self.samples:
            if sample_labels == labels:
                return value
        raise KeyError(labels)


def _unescape(text: str) -> str:
    return ESCAPE.sub(lambda m: "\n" if m.group(1) == "n" else m.group(1), text)


def _number(text: str) -> float:
    if text.endswith("Inf"):
        return -math.inf if text.startswith("-") else math.inf
    return float(text)


def parse_exposition(text: str) -> dict[str, Family]:
    if not text.endswith("\n"):
        raise ExpositionError("the exposition must end with a line feed")
    families: dict[str, Family] = {}
    finished: set[str] = set()
    current: str | None = None
    for number, line in enumerate(text[:-1].split("\n"), 1):
        if match := HELP_LINE.fullmatch(line):
            name, kind = match.group(1), "help"
        elif match := TYPE_LINE.fullmatch(line):
            name, kind = match.group(1), "type"
        elif match := SAMPLE_LINE.fullmatch(line):
            name, kind = match.group(1), "sample"
        else:
            raise ExpositionError(f"line {number} is not in the grammar: {line!r}")
        if name != current:
            if name in finished:
                raise ExpositionError(f"line {number}: {name} is split in two groups")
            if current is not None:
                finished.add(current)
            current = name
        family = families.setdefault(name, Family())
        if kind == "help":
            if family.help is not None or family.samples:
                raise ExpositionError(f"line {number}: HELP for {name} repeated or late")
            family.help = _unescape(match.group(2))
        elif kind == "type":
            if family.type is not None or family.samples:
                raise ExpositionError(f"line {number}: TYPE for {name} repeated or late")
            family.type = match.group(2)
        else:
            labels = {
                pair.group(1): _unescape(pair.group(2)[1:-1])
                for pair in LABEL_PAIR.finditer(match.group(2) or "")
            }
            family.samples.append((labels, _number(match.group(3))))
    return families
