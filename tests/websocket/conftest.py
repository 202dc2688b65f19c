"""stomp.js from npm for the Node and Chromium tests, installed once into tests/websocket/node
(``npm ci`` from the committed package-lock.json; node_modules is not committed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.npm import npm_ci

NODE_DIR = Path(__file__).resolve().parent / "node"
STOMP_UMD = NODE_DIR / "node_modules" / "@stomp" / "stompjs" / "bundles" / "stomp.umd.js"
WS_PACKAGE = NODE_DIR / "node_modules" / "ws" / "package.json"


@pytest.fixture(scope="session")
def stompjs() -> Path:
    """The directory holding stomp.js and ``ws`` under node_modules."""
    return npm_ci(NODE_DIR, [STOMP_UMD, WS_PACKAGE])
