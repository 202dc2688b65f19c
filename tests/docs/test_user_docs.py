"""What the user docs (README.md and docs/*.md) may cite, and what they must say (issues 14
and 15). Users have the public documents FerryMQ follows, not the project's working notes, so
the docs cite those documents by title and section."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs.markdown import ROOT

USER_DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

NOT_PUBLIC = {
    r"\bseed\s+0": "a seed number",
    r"\bseeds?/": "a path to the seeds",
    r"\bthe\s+seeds?\b": "'the seed(s)'",
    r"\.\./shared": "a ../shared path",
    r"\bshared/(DESIGN|STYLE|reference|seeds)\b": "a path into the shared notes",
    r"\breference\s+(\w+\.md\s+)?§": "a section of the shared reference notes",
}
"""Pattern (case-insensitive, may span a line break) -> what it refers to."""


def _not_public(path: Path) -> list[str]:
    text = path.read_text()
    found = []
    for pattern, what in NOT_PUBLIC.items():
        for match in re.finditer(pattern, text, re.IGNORECASE):
            line = text.count("\n", 0, match.start()) + 1
            found.append(f"{path.name}:{line}: {what}: {match[0]!r}")
    return found


def test_the_user_docs_were_found() -> None:
    names = {path.name for path in USER_DOCS}
    assert {"README.md", "networks.md", "master-slave.md", "spark.md"} <= names


@pytest.mark.parametrize("path", USER_DOCS, ids=lambda path: path.name)
def test_cites_public_documents_only(path: Path) -> None:
    found = _not_public(path)
    assert not found, (
        "cite the public document by title and section instead (e.g. Red Hat AMQ 6.3, "
        "Using Networks of Brokers, Figure 3.2):\n" + "\n".join(found)
    )


def test_the_check_finds_a_seed_reference(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("as in seed\n001 Example 2.1, see ../shared/seeds/README.md\n")
    assert len(_not_public(page)) == 4


def _section(text: str, heading: str) -> str:
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else len(text)]


def test_the_readme_says_what_security_exists() -> None:
    security = _section((ROOT / "README.md").read_text(), "Security")
    for fact in ("authentication", "TLS", "Admin API", "127.0.0.1", "docs/security.md"):
        assert fact in security, fact


@pytest.mark.parametrize(
    ("name", "facts"),
    [
        ("spark.md", ("PYSPARK_PYTHON", "SPARK_LOCAL_IP")),
        ("master-slave.md", ("maxReconnectDelay", "back-off")),
    ],
)
def test_the_docs_say_what_a_first_run_needs(name: str, facts: tuple[str, ...]) -> None:
    text = (ROOT / "docs" / name).read_text()
    for fact in facts:
        assert fact in text, fact
