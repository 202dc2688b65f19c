"""npm packages for the tests that run JavaScript clients (stomp.js, rhea) under Node: installed
once per directory with ``npm ci`` from its committed package-lock.json (node_modules is not
committed)."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

NPM_TIMEOUT_S = 300


def npm_ci(directory: Path, required: Sequence[Path]) -> Path:
    """``directory``, after ``npm ci`` there unless every ``required`` file is already in place.
    One install at a time per directory, whatever the number of test processes (pytest-xdist);
    the check too is made under the lock, since ``npm ci`` empties node_modules first and another
    process could otherwise see some required files of a half-done install and go on."""
    with (directory / ".npm-ci.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _install(directory, required)


def _install(directory: Path, required: Sequence[Path]) -> Path:
    if all(path.exists() for path in required):  # installed before, or by another process
        return directory
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is missing: install Debian's nodejs and npm (make system-deps)")
    result = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=NPM_TIMEOUT_S,
        check=False,
    )
    if result.returncode != 0 or not all(path.exists() for path in required):
        pytest.fail(f"npm ci in {directory} failed:\n{result.stdout}\n{result.stderr}")
    return directory
