"""docs/embedding.md: its example runs as printed (issue 15, defect 3), so the page cannot rot."""

from __future__ import annotations

from pathlib import Path

from tests.docs.markdown import ROOT, fenced_blocks, run_example

DOC = ROOT / "docs" / "embedding.md"


def test_the_documented_example_runs_and_prints_what_the_page_says(tmp_path: Path) -> None:
    blocks = fenced_blocks(DOC)
    (program,) = [b.text for b in blocks if b.lang == "python"]
    (expected,) = [b.text for b in blocks if b.lang == "text"]
    assert run_example(program, tmp_path, "embedded_app.py") == expected
    assert not (tmp_path / "data").exists()  # persistent="false": nothing written
