"""docs/embedding.md: its example runs as printed (issue 15, defect 3), so the page cannot rot."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.docs.markdown import ROOT, fenced_blocks

DOC = ROOT / "docs" / "embedding.md"


def test_the_documented_example_runs_and_prints_what_the_page_says(tmp_path: Path) -> None:
    blocks = fenced_blocks(DOC)
    (program,) = [b.text for b in blocks if b.lang == "python"]
    (expected,) = [b.text for b in blocks if b.lang == "text"]
    script = tmp_path / "embedded_app.py"
    script.write_text(program)
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected
    assert not (tmp_path / "data").exists()  # persistent="false": nothing written
