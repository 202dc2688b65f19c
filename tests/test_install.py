"""`make run` installs the broker alone; `make test` everything (issue 15, item 13).

The base install (`pip install .`) must run a broker, the CLI and the client with every package
that only the `dev` and `spark` extras bring made unimportable, the stores and discovery agents
a configuration may ask for included; and `make run` must install nothing but the base.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from ferrymq.testing import free_port, listening, wait_until_blocking

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

RUN_WITHOUT = """
import importlib.abc, sys
BLOCKED = set(sys.argv[1].split(","))
class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (not in the base install)")
        return None
sys.meta_path.insert(0, Blocker())
if sys.argv[2] == "import":
    for module in sys.argv[3:]:
        __import__(module)
    sys.exit(0)
from ferrymq.cli.main import main
sys.exit(main(sys.argv[2:]))
"""
"""Run ``ferrymq ARGS`` (or import modules) with the modules named in argv[1] unimportable."""


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert match is not None, requirement
    return re.sub(r"[-_.]+", "-", match[0]).lower()


def _extras_only_modules() -> str:
    """The top-level modules of the distributions that only the extras require."""
    base = {_name(r) for r in PROJECT["dependencies"]}
    extras = {_name(r) for rs in PROJECT["optional-dependencies"].values() for r in rs}
    only_extras = extras - base
    modules = {
        module
        for module, dists in importlib.metadata.packages_distributions().items()
        if any(_name(dist) in only_extras for dist in dists)
    }
    assert {"pyspark", "pytest", "stomp"} <= modules, "the dev extra is installed here"
    return ",".join(sorted(modules))


def _run(args: list[str], blocked: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", RUN_WITHOUT, blocked, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def _finish(process: subprocess.Popen[str]) -> str:
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 0, output
    return output


def test_the_base_install_has_every_store_and_agent() -> None:
    modules = [
        "ferrymq.store.postgres_db",
        "ferrymq.ha.lease",
        "ferrymq.discovery.zeroconf",
        "ferrymq.discovery.fabric",
    ]
    _finish(_run(["import", *modules], _extras_only_modules()))


@pytest.mark.slow
def test_a_broker_and_the_cli_run_on_the_base_install(tmp_path: Path) -> None:
    blocked = _extras_only_modules()
    port, admin = free_port(), free_port()
    broker = _run(
        ["broker", "--data", str(tmp_path), "--listen", f"stomp://127.0.0.1:{port}",
         "--admin", f"127.0.0.1:{admin}"],
        blocked,
    )  # fmt: skip
    try:
        wait_until_blocking(
            lambda: listening(port) or broker.poll() is not None, 30, "the broker to listen"
        )
        url = f"tcp://127.0.0.1:{port}"
        _finish(_run(["send", url, "/queue/q", "--count", "3", "--persistent"], blocked))
        consumed = _finish(_run(["consume", url, "/queue/q", "--count", "3"], blocked))
        assert consumed.count("message ") == 3, consumed
        _finish(_run(["stat", "--admin", f"http://127.0.0.1:{admin}"], blocked))
    finally:
        broker.terminate()
        output, _ = broker.communicate(timeout=30)
    assert broker.returncode == 0, output


def _make_dry_run(target: str) -> str:
    """What ``make TARGET`` would run from a clean clone (``-B``: as if nothing were built)."""
    done = subprocess.run(
        ["make", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return done.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_run_installs_the_base_and_make_test_everything() -> None:
    run = _make_dry_run("run")
    assert "pip install --quiet -e ." in run
    assert "[dev]" not in run
    assert "ferrymq broker" in run
    assert "--listen amqp://127.0.0.1:5672" in run  # AMQP as easy to try as STOMP
    assert "-e '.[dev]'" in _make_dry_run("unit")
