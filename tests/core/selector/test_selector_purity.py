"""The selector package is pure core: no I/O, clocks, threads, logging or other FerryMQ code.

One module joins it to the broker: ``jms_fields`` reads the JMS header fields of a core
``Message``, so it alone may import ``ferrymq.core.message`` (itself pure).
"""

from __future__ import annotations

import ast
from pathlib import Path

import ferrymq.core.selector

FORBIDDEN = {"asyncio", "socket", "time", "threading", "logging", "selectors", "ssl"}
PACKAGE_DIR = Path(ferrymq.core.selector.__file__).parent
BRIDGES = {"jms_fields.py": {"ferrymq.core.message"}}


def imported_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            names.add(node.module)
    return names


def test_no_module_imports_io_time_threads_or_logging() -> None:
    sources = sorted(PACKAGE_DIR.glob("*.py"))
    assert len(sources) >= 9
    for source in sources:
        names = imported_names(source)
        assert not {name.split(".")[0] for name in names} & FORBIDDEN, source.name
        ferrymq_names = {name for name in names if name.split(".")[0] == "ferrymq"}
        ferrymq_names -= BRIDGES.get(source.name, set())
        assert all(name.startswith("ferrymq.core.selector") for name in ferrymq_names), source.name


def test_public_api_is_exported() -> None:
    exported = set(ferrymq.core.selector.__all__)
    assert {"parse_selector", "Selector", "SelectorError", "to_text"} <= exported
    assert all(hasattr(ferrymq.core.selector, name) for name in exported)
