"""The recipes of docs/networks.md and docs/master-slave.md run as printed (issue 15): their
files are written, their brokers started as separate processes, their commands run, on free
ports, and the messages they send arrive where the recipe consumes them."""

from __future__ import annotations

from pathlib import Path

import pytest

from ferrymq.testing import WaitTimeoutError
from tests.docs.markdown import ROOT, Block, recipes
from tests.docs.recipe_runner import RecipeRun, shell_lines

RECIPE_DOCS = {"networks.md": 1, "master-slave.md": 2}
"""Each page and how many recipes it has at least."""


def _all_recipes() -> list[object]:
    return [
        pytest.param(blocks, id=f"{name}: {heading}")
        for name in RECIPE_DOCS
        for heading, blocks in recipes(ROOT / "docs" / name).items()
    ]


def test_each_page_has_its_recipes() -> None:
    for name, minimum in RECIPE_DOCS.items():
        found = recipes(ROOT / "docs" / name)
        assert len(found) >= minimum, f"docs/{name} has {len(found)} recipe(s): {list(found)}"
        for heading, blocks in found.items():
            commands = [line for b in blocks if b.lang == "sh" for line in shell_lines(b.text)]
            assert any(c.startswith("ferrymq broker ") for c in commands), heading
            assert any(c.startswith("ferrymq consume ") for c in commands), heading


@pytest.mark.slow
@pytest.mark.parametrize("blocks", _all_recipes())
def test_recipe_runs_as_printed(tmp_path: Path, blocks: list[Block]) -> None:
    run = RecipeRun(tmp_path)
    try:
        run.run(blocks)
    except (AssertionError, WaitTimeoutError) as error:
        raise AssertionError(f"{error}\n{run.report()}") from error
    finally:
        run.stop()
