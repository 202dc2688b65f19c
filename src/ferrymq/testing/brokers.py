"""Start brokers for tests: in this process, or as separate ``ferrymq broker`` processes.

In-process brokers are fast and let a test look inside (``broker.service.region``).  Separate
processes are for what a test must do to a real broker: SIGKILL it, SIGSTOP it, restart it on the
same data directory.  In-process brokers listen on 127.0.0.1 port 0 unless told a port; a process
gets a ``free_port`` (``ferrymq.testing.ports``: reserved, so it can restart on it).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from ferrymq.broker import Broker
from ferrymq.config.activemq_xml import parse_config
from ferrymq.config.cli import config_from_flags
from ferrymq.config.model import AdminConfig, BrokerConfig
from ferrymq.testing.ports import free_port
from ferrymq.testing.waiting import wait_until_blocking

STARTUP_TIMEOUT_S = 30.0

T = TypeVar("T")


def broker_config(
    data_dir: Path,
    *,
    name: str = "localhost",
    persistent: bool = True,
    xml: str | None = None,
    port: int = 0,
    amqp: bool = False,
) -> BrokerConfig:
    """A configuration for a test broker: a STOMP listener on 127.0.0.1, no admin listener.

    ``xml`` is an activemq.xml document (``${activemq.data}`` resolves to ``data_dir``); its own
    transport connectors are replaced by the test listener, which keeps the first one's
    attributes (``discoveryUri``, ``updateClusterClients``...).
    """
    listen = [f"stomp://127.0.0.1:{port}"]
    if amqp:
        listen.append("amqp://127.0.0.1:0")
    if xml is None:
        return config_from_flags(name, data_dir, listen, "off", persistent)
    base = parse_config(xml, "test-config.xml", {"activemq.data": str(data_dir)})
    flags = config_from_flags(name, data_dir, listen, "off", persistent)
    listeners = flags.transport_connectors
    if base.transport_connectors:
        test_listener, *others = listeners
        first = base.transport_connectors[0]
        kept = replace(first, uri=test_listener.uri, parsed_uri=test_listener.parsed_uri)
        listeners = (kept, *others)
    return replace(
        base,
        broker_name=name,
        data_directory=data_dir,
        transport_connectors=listeners,
        admin=flags.admin,
    )


def without_admin(config: BrokerConfig) -> BrokerConfig:
    """``config`` with no admin listener: a file's default admin address (127.0.0.1:8161) is a
    fixed port, which two test workers (or a broker already running) would fight over."""
    return replace(config, admin=AdminConfig(enabled=False))


def amqp_port(broker: Broker) -> int:
    """The port of the broker's first AMQP listener (``broker_config(amqp=True)``)."""
    return next(
        listener.port
        for connector, listener in broker.service.served
        if connector.scheme.lower() in ("amqp", "amqp+ssl", "amqp+nio", "amqp+nio+ssl")
    )


class BrokerThread:
    """An in-process broker on its own event loop thread, for blocking clients (stomp.py).

    ``call(fn)`` runs ``fn`` on the broker's loop and returns its result, so a test can look at
    the broker's state without racing it.
    """

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.broker: Broker | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def start(self) -> BrokerThread:
        self._thread.start()
        self.broker = Broker(self.config)
        asyncio.run_coroutine_threadsafe(self.broker.start(), self._loop).result(STARTUP_TIMEOUT_S)
        return self

    def stop(self) -> None:
        if self.broker is not None:
            future = asyncio.run_coroutine_threadsafe(self.broker.stop(), self._loop)
            future.result(STARTUP_TIMEOUT_S)
            self.broker = None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def call(self, fn: Callable[[], T]) -> T:
        async def run() -> T:
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(10)

    @property
    def port(self) -> int:
        assert self.broker is not None
        return self.broker.stomp_ports[0]

    @property
    def amqp_port(self) -> int:
        """The AMQP listener's port (``broker_config(amqp=True)``)."""
        assert self.broker is not None
        return amqp_port(self.broker)

    def __enter__(self) -> BrokerThread:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def listening(port: int, timeout_s: float = 1.0) -> bool:
    """Whether something accepts connections on 127.0.0.1 ``port`` now (of a master/slave
    group, only the master listens)."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=timeout_s).close()
    except OSError:
        return False
    return True


class BrokerProcess:
    """A ``ferrymq broker`` child process that a test can kill, pause and restart."""

    def __init__(
        self,
        data_dir: Path,
        *,
        name: str = "localhost",
        port: int | None = None,
        extra_args: Sequence[str] = (),
        config_xml: str | None = None,
        listen: bool = True,
        env: Mapping[str, str] | None = None,
    ) -> None:
        """``listen=False``: ``config_xml`` has the transport connector, on ``port``.  ``env``:
        variables added to this process's environment (test hooks)."""
        self.data_dir = data_dir
        self.listen = listen
        self.name = name
        self.port = port if port is not None else free_port()
        self.extra_args = list(extra_args)
        self.config_xml = config_xml
        self.env = dict(env or {})
        self.process: subprocess.Popen[str] | None = None
        self.output: list[str] = []
        self._reader: threading.Thread | None = None
        self._state_changed = threading.Condition()
        self.state = "starting"
        """From the broker's output: "master" (serving), "slave" (waiting for the lock),
        "stopped"."""

    @property
    def url(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    def start(self, *, as_slave: bool = False, wait: bool = True) -> BrokerProcess:
        """Start it and wait until it serves (or, with ``as_slave``, until it either serves or
        reports that it is a slave; with ``wait=False``, not at all)."""
        args = [
            sys.executable,
            "-m",
            "ferrymq.cli.main",
            "broker",
            "--name",
            self.name,
            "--data",
            str(self.data_dir),
            *(("--listen", f"stomp://127.0.0.1:{self.port}") if self.listen else ()),
            "--admin",
            "off",
            *self.extra_args,
        ]
        if self.config_xml is not None:
            fd, path = tempfile.mkstemp(suffix=".xml", prefix="ferrymq-test-")
            with os.fdopen(fd, "w") as handle:
                handle.write(self.config_xml)
            args += ["--config", path]
        self.output = []
        self.state = "starting"
        self.process = subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env},
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not wait:
            return self
        wanted = ("master", "slave") if as_slave else ("master",)
        if not self.wait_for_state(*wanted, timeout_s=STARTUP_TIMEOUT_S):
            self.kill()
            raise RuntimeError(f"broker {self.name} did not start:\n" + "".join(self.output[-40:]))
        return self

    def wait_for_state(self, *states: str, timeout_s: float = STARTUP_TIMEOUT_S) -> bool:
        """Wait until the broker reports one of ``states`` (or exits); True if it did."""
        with self._state_changed:
            self._state_changed.wait_for(
                lambda: self.state in states or self.state == "exited", timeout_s
            )
            return self.state in states

    def _read(self) -> None:
        process = self.process
        assert process is not None
        assert process.stdout is not None
        for line in process.stdout:
            self.output.append(line)
            state = None
            if line.startswith(f"broker {self.name} started"):
                state = "master"
            elif line.startswith(f"broker {self.name} is a slave"):
                state = "slave"
            elif line.startswith(f"broker {self.name} stopped"):
                state = "stopped"
            if state is not None:
                self._set_state(state)
        self._set_state("exited")

    def _set_state(self, state: str) -> None:
        with self._state_changed:
            self.state = state
            self._state_changed.notify_all()

    def kill(self) -> None:
        """SIGKILL: no clean shutdown, no flush."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)
        self._close_output()

    def _close_output(self) -> None:
        if self._reader is not None:
            self._reader.join(timeout=5)
        if self.process is not None and self.process.stdout is not None:
            self.process.stdout.close()

    def stop(self, timeout_s: float = 15.0) -> int | None:
        """SIGTERM and wait for a clean stop; SIGKILL if it takes longer than ``timeout_s``."""
        process = self.process
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        self._close_output()
        return process.returncode

    def pause(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def restart(self) -> BrokerProcess:
        self.stop()
        return self.start()

    def wait_until_listening(self, timeout_s: float = STARTUP_TIMEOUT_S) -> None:
        wait_until_blocking(
            lambda: listening(self.port, timeout_s=0.5),
            timeout_s,
            f"broker {self.name} to listen on {self.port}",
            interval_s=0.05,
        )

    def __enter__(self) -> BrokerProcess:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
