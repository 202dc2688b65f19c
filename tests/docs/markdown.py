"""Fenced code blocks of the user docs, with the file name or terminal a block is for.

A block's info string is the language and, optionally, ``title="..."`` (the convention of
MkDocs Material and Docusaurus): ```` ```xml title="broker-a.xml" ```` is a file to write,
```` ```sh title="terminal 1" ```` commands to type. A *recipe* is a section whose heading starts
with "Recipe:": its titled blocks, in document order, are what a reader does, and
``tests/docs/test_recipes.py`` does it.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The checkout: README.md and docs/ are under it."""

_FENCE = re.compile(r"^```(?P<lang>[\w+-]*)(?P<rest>.*)$")
_TITLE = re.compile(r'title="(?P<title>[^"]+)"')
_HEADING = re.compile(r"^#{1,6}\s+(?P<text>.+?)\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced block: its language, title (or ""), text, the line its fence opens on, and
    the heading of the section it is in."""

    lang: str
    title: str
    text: str
    line: int
    heading: str


def fenced_blocks(path: Path) -> list[Block]:
    """Every fenced block of ``path`` in document order (an unclosed fence is an error)."""
    blocks: list[Block] = []
    heading = ""
    opened: tuple[str, str, int] | None = None
    body: list[str] = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if opened is not None:
            if line.strip() == "```":
                lang, title, start = opened
                blocks.append(Block(lang, title, "\n".join(body) + "\n", start, heading))
                opened, body = None, []
            else:
                body.append(line)
            continue
        fence = _FENCE.match(line)
        if fence is not None:
            named = _TITLE.search(fence["rest"])
            opened = (fence["lang"], named["title"] if named else "", number)
        elif (match := _HEADING.match(line)) is not None:
            heading = match["text"]
    assert opened is None, f"{path.name}:{opened[2] if opened else 0}: a fence is never closed"
    return blocks


def recipes(path: Path) -> dict[str, list[Block]]:
    """The titled blocks of each "Recipe: ..." section of ``path``, by heading."""
    found: dict[str, list[Block]] = {}
    for block in fenced_blocks(path):
        if block.heading.startswith("Recipe:") and block.title:
            found.setdefault(block.heading, []).append(block)
    return found


def run_example(program: str, workdir: Path, name: str = "example.py") -> str:
    """Run a documented Python program as a user would (its own process, in ``workdir``);
    return what it printed, after checking it succeeded."""
    script = workdir / name
    script.write_text(program)
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout
