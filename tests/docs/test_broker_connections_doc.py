"""The whole-file XML examples of docs/broker-connections.md and docs/artemis-config.md load as
they are written: a user copies them, so each must pass `check_config` with no error (fragments,
shown inside a whole file elsewhere on the page, are not files)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ferrymq.config.activemq_xml import check_config
from tests.docs.markdown import ROOT, Block, fenced_blocks

PAGES = ("docs/broker-connections.md", "docs/artemis-config.md")
WHOLE_FILE = ("<broker", "<configuration", "<beans", "<?xml")


def _examples() -> list[Block]:
    blocks = [b for page in PAGES for b in fenced_blocks(ROOT / page) if b.lang == "xml"]
    return [b for b in blocks if b.text.lstrip().startswith(WHOLE_FILE)]


def test_the_pages_show_a_whole_configuration() -> None:
    assert any("<broker-connections>" in b.text for b in _examples())


@pytest.mark.parametrize("block", _examples(), ids=lambda b: f"{b.heading}:{b.line}")
def test_each_whole_file_example_loads(block: Block, tmp_path: Path) -> None:
    path = tmp_path / "example.xml"
    path.write_text(block.text)
    result = check_config(path)
    assert result.errors == ()
