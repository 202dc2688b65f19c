"""The README's Python example runs as printed, against a broker process (issue 15)."""

from __future__ import annotations

from pathlib import Path

from ferrymq.testing import BrokerProcess
from tests.docs.markdown import ROOT, fenced_blocks, run_example

PRINTED_URL = "tcp://127.0.0.1:61613"


def test_the_python_example_runs_as_printed(broker_process: BrokerProcess, tmp_path: Path) -> None:
    (example,) = [b for b in fenced_blocks(ROOT / "README.md") if b.lang == "python"]
    assert PRINTED_URL in example.text
    program = example.text.replace(PRINTED_URL, broker_process.url)
    assert run_example(program, tmp_path) == "hello\n"
