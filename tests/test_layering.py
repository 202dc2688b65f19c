"""The layers of DESIGN.md, enforced: which package may import which, and what stays pure.

Read from the source with ``ast``, so an import hidden inside a function counts too.  A package
not listed in ``ALLOWED`` may import anything of FerryMQ (the composition root, the CLI, tests).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "ferrymq"

ALLOWED: dict[str, set[str]] = {
    "util": set(),
    "stomp": set(),
    "core": {"store.base"},  # the store's operation records; never a store itself
    "store": set(),
    "transport": set(),
    "config": {"util"},
    "client": {"stomp", "util"},
    "service": {"core", "store", "transport", "stomp", "config", "util"},
    "admin": {"core", "config", "util"},
    "bench": {"stomp", "util", "client"},
    "network": {"client", "config", "stomp", "util", "core.destination"},
    "discovery": {"client", "util"},
    "spark": {"client", "stomp", "util"},
    "testing": {"broker", "config", "core", "service", "store", "stomp", "util", "client"},
}

PURE = {"stomp", "core"}
IMPURE_MODULES = {"asyncio", "socket", "time", "threading", "logging", "selectors", "ssl"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def _modules(package: str) -> list[Path]:
    return sorted((SRC / package).rglob("*.py"))


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_only_lower_layers(package: str) -> None:
    allowed = ALLOWED[package]
    offences = []
    for path in _modules(package):
        for name in _imports(path):
            if not name.startswith("ferrymq."):
                continue
            target = name.removeprefix("ferrymq.")
            if target == package or target.startswith(package + "."):
                continue
            if target == "__init__" or name == "ferrymq":
                continue
            if not any(target == a or target.startswith(a + ".") for a in allowed):
                offences.append(f"{path.relative_to(SRC)} imports {name}")
    assert offences == []


@pytest.mark.parametrize("package", sorted(PURE))
def test_protocol_and_core_do_no_io(package: str) -> None:
    offences = []
    for path in _modules(package):
        for name in _imports(path):
            if name.split(".")[0] in IMPURE_MODULES:
                offences.append(f"{path.relative_to(SRC)} imports {name}")
    assert offences == []


def test_every_package_is_covered() -> None:
    packages = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    unruled = (
        packages
        - set(ALLOWED)
        - {
            "cli",
            "discovery",
            "ha",
            "spark",
        }
    )
    assert unruled == set()
