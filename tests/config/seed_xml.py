"""Finding the XML examples in the seed documents and making them loadable.

Seeds 000 and 001 put examples in ``` fences, and a page break sometimes splits one example
over two fences separated by a blank line (seed 000 Example 4.1): such fences are joined. Seeds
002 and 003 are plain text: an example starts on a line that opens an XML tag and ends where its
root element closes (prose may follow on the same line) or where a prose line interrupts it.

`normalise` removes only the documents' placeholders, each described below; `wrap` puts a
fragment into the element it belongs in. Typos are not fixed here: the test module lists each
fix it applies, and checks that the typo is still there.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = [
    "Example",
    "extract_examples",
    "extract_from_seed",
    "normalise",
    "seed_path",
    "wrap",
    "write_snapshot",
]

SEEDS = ("000", "001", "002", "003", "004")

_HTML_TAGS = {"a", "b", "i", "code", "sup", "sub", "em", "strong"}
_TAG_START = re.compile(r"<([A-Za-z][\w.:-]*)")


def seed_path(prefix: str) -> Path:
    """The seed file whose name starts with `prefix` ("000" ...). FERRYMQ_SEEDS_DIR overrides
    the search, which otherwise looks next to the repository (../shared/seeds) and inside it."""
    repo = Path(__file__).resolve().parents[2]
    candidates = [repo.parent / "shared" / "seeds", repo / "seeds", repo / "docs" / "seeds"]
    if "FERRYMQ_SEEDS_DIR" in os.environ:
        candidates.insert(0, Path(os.environ["FERRYMQ_SEEDS_DIR"]))
    for directory in candidates:
        found = sorted(directory.glob(f"{prefix}_*.txt"))
        if found:
            return found[0]
    searched = ", ".join(str(c) for c in candidates)
    raise FileNotFoundError(f"seed {prefix} not found in {searched} (set FERRYMQ_SEEDS_DIR)")


@dataclass(frozen=True)
class Example:
    """One XML example as it appears in a seed; `line` is the 1-based line where it starts."""

    seed: str
    line: int
    text: str
    complete: bool
    """False when prose interrupted it before its root element closed."""


SNAPSHOT = Path(__file__).resolve().parent / "data" / "seed_examples.json"
"""The XML examples extracted from the seeds, so the tests run where the seeds are not beside
the repository (a CI clone).  Only the configuration examples are kept, never the prose; refresh
with ``python -m tests.config.seed_xml`` after a seed changes."""


def extract_examples(prefix: str) -> list[Example]:
    """The examples of one seed, from the committed snapshot."""
    data = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    return [Example(**item) for item in data["examples"] if item["seed"] == prefix]


def write_snapshot() -> None:
    examples = [e for prefix in SEEDS for e in extract_from_seed(prefix)]
    document = {
        "about": (
            "XML examples extracted from FerryMQ's seed documents (Red Hat JBoss A-MQ and Fuse "
            "documentation, CC-BY-SA 3.0, Copyright Red Hat, Inc.; the ActiveMQ Artemis user "
            "manual, Apache License 2.0), kept as test data."
        ),
        "sources": {prefix: seed_path(prefix).name for prefix in SEEDS},
        "examples": [asdict(e) for e in examples],
    }
    SNAPSHOT.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", "utf-8")


def extract_from_seed(prefix: str) -> list[Example]:
    lines = seed_path(prefix).read_text(encoding="utf-8").split("\n")
    examples: list[Example] = []
    fenced = _fenced_blocks(lines)
    inside_fence = {i for start, end, _ in fenced for i in range(start, end + 1)}
    for start, _, text in fenced:
        if re.search(r"<[A-Za-z?/]", text):
            examples.append(Example(prefix, start + 1, text, True))
    index = 0
    while index < len(lines):
        if index not in inside_fence and _opens_tag(lines[index]):
            text, end, complete = _scan(lines, index)
            examples.append(Example(prefix, index + 1, text, complete))
            index = end + 1
        else:
            index += 1
    return sorted(examples, key=lambda e: e.line)


def _fenced_blocks(lines: list[str]) -> list[tuple[int, int, str]]:
    """(first content line, last fence line, content), 0-based; adjacent fences joined."""
    fences = [i for i, line in enumerate(lines) if line.strip().startswith("```")]
    blocks: list[tuple[int, int, str]] = []
    for open_at, close_at in zip(fences[::2], fences[1::2], strict=False):
        content = "\n".join(lines[open_at + 1 : close_at])
        if blocks and all(not lines[i].strip() for i in range(blocks[-1][1] + 1, open_at)):
            start, _, previous = blocks.pop()
            blocks.append((start, close_at, previous + "\n" + content))
        else:
            blocks.append((open_at + 1, close_at, content))
    return blocks


def _opens_tag(line: str) -> bool:
    match = _TAG_START.match(line.strip())
    if match is None:
        return False
    return match.group(1).lower() not in _HTML_TAGS and ":" not in match.group(1)


def _scan(lines: list[str], first: int) -> tuple[str, int, bool]:
    """Follow tags from `lines[first]` until the root closes or prose interrupts."""
    depth = 0
    taken: list[str] = []
    in_tag = False
    quote = ""
    for number in range(first, len(lines)):
        line = lines[number]
        stripped = line.strip()
        if number > first and not in_tag and stripped and not stripped.startswith(("<", "...")):
            return "\n".join(taken), number - 1, False
        tag_start = 0
        for column, char in enumerate(line):
            if in_tag:
                if quote:
                    quote = "" if char == quote else quote
                elif char in "\"'":
                    quote = char
                elif char == ">":
                    in_tag = False
                    tag = line[tag_start : column + 1]
                    if tag.startswith("</"):
                        depth -= 1
                    elif not tag.startswith(("<?", "<!")) and not tag.rstrip(">").endswith("/"):
                        depth += 1
                    if depth == 0:
                        taken.append(line[: column + 1])
                        return "\n".join(taken), number, True
            elif char == "<":
                in_tag, tag_start = True, column
        taken.append(line)
    return "\n".join(taken), len(lines) - 1, False


_CALLOUT = re.compile(r"^(\s*)\d+\s+(?=<|[A-Za-z][\w.:-]*=)")


def normalise(text: str) -> str:
    """Remove the documents' placeholders, and nothing else.

    * Callout numbers: seed 000 Example 2.2 numbers lines for its notes ("1 <networkConnector",
      "2   discoveryUri="); a number at the start of a line, before a tag or an attribute, goes.
    * Ellipses: "..." stands for omitted configuration: a line of its own, inside a tag in place
      of attributes (`<beans ... >`, `brokerId="A"... >`, `... />`) or as element content
      (`<jmsQueueConnector> ... </jmsQueueConnector>`). Outside quoted attribute values every
      run of three or more dots is removed; inside quotes nothing is touched.
    """
    result: list[str] = []
    in_tag = False
    quote = ""
    for raw in text.split("\n"):
        line = _CALLOUT.sub(r"\1", raw)
        out: list[str] = []
        i = 0
        while i < len(line):
            char = line[i]
            if quote:
                quote = "" if char == quote else quote
            elif char == ".":
                end = i
                while end < len(line) and line[end] == ".":
                    end += 1
                out.append(" " if end - i >= 3 else line[i:end])
                i = end
                continue
            elif in_tag and char in "\"'":
                quote = char
            elif char in "<>":
                in_tag = char == "<"
            out.append(char)
            i += 1
        cleaned = "".join(out).rstrip()
        if cleaned.strip() or not raw.strip():
            result.append(cleaned)
    return "\n".join(result).strip() + "\n"


_WRAPPERS = {
    "transportConnectors": ("<broker>", "</broker>"),
    "networkConnectors": ("<broker>", "</broker>"),
    "persistenceAdapter": ("<broker>", "</broker>"),
    "services": ("<broker>", "</broker>"),
    "jmsBridgeConnectors": ("<broker>", "</broker>"),
    "kahaDB": ("<broker><persistenceAdapter>", "</persistenceAdapter></broker>"),
    "amqPersistenceAdapter": ("<broker><persistenceAdapter>", "</persistenceAdapter></broker>"),
    "inboundQueueBridges": (
        "<broker><jmsBridgeConnectors><jmsQueueConnector>",
        "</jmsQueueConnector></jmsBridgeConnectors></broker>",
    ),
    "outboundQueueBridges": (
        "<broker><jmsBridgeConnectors><jmsQueueConnector>",
        "</jmsQueueConnector></jmsBridgeConnectors></broker>",
    ),
    "inboundTopicBridges": (
        "<broker><jmsBridgeConnectors><jmsTopicConnector>",
        "</jmsTopicConnector></jmsBridgeConnectors></broker>",
    ),
    "outboundTopicBridges": (
        "<broker><jmsBridgeConnectors><jmsTopicConnector>",
        "</jmsTopicConnector></jmsBridgeConnectors></broker>",
    ),
}


def root_name(text: str) -> str:
    """The name of the first element that is not a declaration or a comment."""
    body = re.sub(r"<\?.*?\?>|<!--.*?-->", "", text, flags=re.DOTALL)
    match = _TAG_START.search(body)
    if match is None:
        raise ValueError("no element in the example")
    return match.group(1).rpartition(":")[2]


def wrap(text: str) -> str:
    """Put a fragment inside the element it is a child of, so it loads as a whole file."""
    root = root_name(text)
    if root in ("beans", "broker"):
        return text
    if root not in _WRAPPERS:
        raise ValueError(f"no rule to wrap a fragment whose root is <{root}>")
    declaration = re.match(r"\s*<\?xml.*?\?>", text)
    head = declaration.group() if declaration else ""
    opening, closing = _WRAPPERS[root]
    return f"{head}{opening}\n{text[len(head) :]}\n{closing}\n"


if __name__ == "__main__":
    write_snapshot()
