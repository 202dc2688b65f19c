"""stomp.js from npm for the Node and Chromium tests, installed once into tests/websocket/node
(``npm ci`` from the committed package-lock.json; node_modules is not committed)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

NODE_DIR = Path(__file__).resolve().parent / "node"
STOMP_UMD = NODE_DIR / "node_modules" / "@stomp" / "stompjs" / "bundles" / "stomp.umd.js"
WS_PACKAGE = NODE_DIR / "node_modules" / "ws" / "package.json"


@pytest.fixture(scope="session")
def stompjs() -> Path:
    """The directory holding stomp.js and ``ws`` under node_modules."""
    if STOMP_UMD.exists() and WS_PACKAGE.exists():
        return NODE_DIR
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is missing: install Debian's nodejs and npm (make system-deps)")
    result = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=NODE_DIR,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if result.returncode != 0 or not STOMP_UMD.exists():
        pytest.fail(f"npm ci in {NODE_DIR} failed:\n{result.stdout}\n{result.stderr}")
    return NODE_DIR
