"""``ferrymq.stomp`` is sans-IO: no module of it imports I/O, clocks, threads or logging."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import ferrymq.stomp

FORBIDDEN = {"asyncio", "socket", "time", "threading", "logging", "selectors", "ssl"}
PACKAGE_DIR = Path(ferrymq.stomp.__file__).parent


def imported_names(path: Path) -> set[str]:
    """Every absolute module name ``path`` imports, at any depth of the tree."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            names.add(node.module)
    return names


def imported_modules(path: Path) -> set[str]:
    return {name.split(".")[0] for name in imported_names(path)}


def test_no_module_imports_io_time_threads_or_logging() -> None:
    sources = sorted(PACKAGE_DIR.glob("*.py"))
    assert len(sources) >= 12
    for source in sources:
        assert not imported_modules(source) & FORBIDDEN, source.name


def test_ferrymq_packages_imported_are_only_stomp() -> None:
    for source in PACKAGE_DIR.glob("*.py"):
        ferrymq_imports = {
            name for name in imported_names(source) if name.split(".")[0] == "ferrymq"
        }
        assert all(name.startswith("ferrymq.stomp") for name in ferrymq_imports), source.name


def test_importing_the_package_loads_none_of_them() -> None:
    # A fresh interpreter, so modules other tests imported do not count.
    modules = [f"ferrymq.stomp.{info.name}" for info in pkgutil.iter_modules([str(PACKAGE_DIR)])]
    for name in modules:
        importlib.import_module(name)
    # The interpreter may load some of them at start-up (site imports time), so compare
    # sys.modules before and after.
    code = (
        "import sys\nbefore = set(sys.modules)\n"
        + "".join(f"import {name}\n" for name in modules)
        + f"print(sorted((set(sys.modules) - before) & {FORBIDDEN!r}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_public_api_is_all_exported() -> None:
    exported = set(ferrymq.stomp.__all__)
    assert {"FrameParser", "ServerSession", "ClientSession", "encode", "encode_message"} <= exported
    assert all(hasattr(ferrymq.stomp, name) for name in exported)
