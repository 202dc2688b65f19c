"""A private RabbitMQ 3.10 node (Debian's rabbitmq-server) for the tests and benchmarks that
need a real third-party AMQP 1.0 peer: its shovel plugin with an ``amqp10`` source or
destination is an AMQP 1.0 client nobody here wrote.

The node runs as the current user on 127.0.0.1 with free ports, its own node name, Mnesia
and log directories, enabled-plugins file and Erlang cookie (a private ``HOME``), so it never
meets a system RabbitMQ or another test run. ``RabbitNode.start`` waits until ``rabbitmqctl
await_startup`` says it is up; ``stop`` asks it to stop and kills what is left.
``rabbitmq_node`` is a session-scoped pytest fixture that starts one node for every test that
asks for it (benchmarks can use ``RabbitNode`` directly).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ferrymq.testing import free_port

RABBIT_BIN = Path("/usr/lib/rabbitmq/bin")
PLUGINS = ("rabbitmq_amqp1_0", "rabbitmq_shovel")
STARTUP_TIMEOUT_S = 90
CTL_TIMEOUT_S = 60


def rabbitmq_available() -> bool:
    return (RABBIT_BIN / "rabbitmq-server").exists()


class RabbitNode:
    """One RabbitMQ node in ``base`` (AMQP 0-9-1 and AMQP 1.0 share ``amqp_port``)."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.name = f"rabbit-{secrets.token_hex(4)}@localhost"
        self.amqp_port = free_port()
        self.dist_port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def env(self) -> dict[str, str]:
        home = self.base / "home"
        return {
            **os.environ,
            "HOME": str(home),
            "RABBITMQ_NODENAME": self.name,
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODE_PORT": str(self.amqp_port),
            "RABBITMQ_DIST_PORT": str(self.dist_port),
            "RABBITMQ_MNESIA_BASE": str(self.base / "mnesia"),
            "RABBITMQ_LOG_BASE": str(self.base / "log"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(self.base / "enabled_plugins"),
            "RABBITMQ_CONFIG_FILE": str(self.base / "rabbitmq"),
            "RABBITMQ_ADVANCED_CONFIG_FILE": str(self.base / "advanced.config"),
            "RABBITMQ_CONF_ENV_FILE": str(self.base / "rabbitmq-env.conf"),
            "RABBITMQ_PID_FILE": str(self.base / "rabbit.pid"),
            "ERL_EPMD_ADDRESS": "127.0.0.1",
        }

    def _prepare(self) -> None:
        home = self.base / "home"
        home.mkdir(parents=True, exist_ok=True)
        cookie = home / ".erlang.cookie"
        cookie.write_text(secrets.token_hex(16))
        cookie.chmod(0o400)
        for sub in ("mnesia", "log"):
            (self.base / sub).mkdir(exist_ok=True)
        (self.base / "enabled_plugins").write_text(f"[{','.join(PLUGINS)}].\n")
        # Management listeners off; the web plugins are not enabled, so only the AMQP port.
        (self.base / "rabbitmq.conf").write_text(
            "loopback_users = none\n"
            f"listeners.tcp.default = 127.0.0.1:{self.amqp_port}\n"
            "log.console = false\n"
            "log.file.level = info\n"
        )
        (self.base / "advanced.config").write_text("[].\n")
        (self.base / "rabbitmq-env.conf").write_text("")

    def start(self) -> RabbitNode:
        self._prepare()
        log = (self.base / "server.out").open("wb")
        self.process = subprocess.Popen(
            [str(RABBIT_BIN / "rabbitmq-server")],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        if not self._await_startup():
            self.stop()
            out = (self.base / "server.out").read_text(errors="replace")[-3000:]
            raise RuntimeError(f"RabbitMQ did not start within {STARTUP_TIMEOUT_S} s:\n{out}")
        return self

    def _await_startup(self) -> bool:
        """``await_startup`` fails at once while the node is not yet reachable: ask again."""
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                return False
            try:
                self.ctl("await_startup", "--timeout", "20", timeout=30)
                return True
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
                time.sleep(0.5)
        return False

    def ctl(self, *args: str, timeout: float = CTL_TIMEOUT_S) -> str:
        """Run ``rabbitmqctl -n NODE ARGS`` against this node; its output."""
        result = subprocess.run(
            [str(RABBIT_BIN / "rabbitmqctl"), "-n", self.name, *args],
            env=self.env,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        if result.returncode != 0:
            raise subprocess.CalledProcessError(
                result.returncode, result.args, result.stdout, result.stderr
            )
        return result.stdout.decode(errors="replace")

    def set_shovel(self, name: str, definition: dict[str, object]) -> None:
        self.ctl("set_parameter", "shovel", name, json.dumps(definition))

    def clear_shovel(self, name: str) -> None:
        self.ctl("clear_parameter", "shovel", name)

    def shovel_status(self) -> str:
        return self.ctl("eval", "rabbit_shovel_status:status().")

    def stop(self) -> None:
        process = self.process
        if process is None:
            return
        self.process = None
        if process.poll() is None:
            with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
                self.ctl("stop", timeout=30)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        # epmd, started by the node, outlives it: stop only the one in this node's session.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


@pytest.fixture(scope="session")
def rabbitmq_node() -> Iterator[RabbitNode]:
    """One private RabbitMQ node for the whole session (it takes seconds to start)."""
    if not rabbitmq_available() or shutil.which("erl") is None:
        pytest.fail(
            "rabbitmq-server is missing: install Debian's rabbitmq-server (make system-deps)"
        )
    base = Path(tempfile.mkdtemp(prefix="ferrymq-rabbit-"))
    node = RabbitNode(base).start()
    try:
        yield node
    finally:
        node.stop()
        shutil.rmtree(base, ignore_errors=True)
