"""The client knows only ``stomp`` and ``util`` (DESIGN.md "Layers"), and exports its API."""

from __future__ import annotations

import ast
from pathlib import Path

import ferrymq.client

PACKAGE_DIR = Path(ferrymq.client.__file__).parent
ALLOWED = ("ferrymq.client", "ferrymq.stomp", "ferrymq.util")


def ferrymq_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            names.add(node.module)
    return {name for name in names if name.split(".")[0] == "ferrymq"}


def test_the_client_imports_only_stomp_and_util() -> None:
    sources = sorted(PACKAGE_DIR.rglob("*.py"))
    assert len(sources) >= 10
    for source in sources:
        for name in ferrymq_imports(source):
            assert name.startswith(ALLOWED), f"{source.name} imports {name}"


def test_the_public_api_is_exported() -> None:
    for name in ferrymq.client.__all__:
        assert hasattr(ferrymq.client, name), name
    assert callable(ferrymq.client.connect)
    assert {"BrokerErrorFrame", "ConnectionClosed", "Message", "Subscription"} <= set(
        ferrymq.client.__all__
    )
