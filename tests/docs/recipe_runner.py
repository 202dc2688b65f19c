"""Do what a recipe of the docs tells a reader to do, with every port moved to a free one.

A recipe's files are written as they are printed (ports aside) into a fresh directory, and its
terminal blocks are run line by line there, in document order:

* ``ferrymq broker ...`` starts a broker process that keeps running (a terminal of its own);
* any other ``ferrymq ...`` command runs to its end and must exit 0; ``consume --count N``
  must print N messages;
* ``kill -9 "$(pgrep -f 'broker --config FILE')"`` SIGKILLs the broker started with that file
  (this test kills its own child by id rather than running pgrep, which could match another's).

Anything else fails the test, so a recipe cannot drift into steps nobody runs.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import threading
from pathlib import Path

from ferrymq.testing import free_port, listening, wait_until_blocking
from tests.docs.markdown import Block

COMMAND_TIMEOUT_S = 30.0
START_TIMEOUT_S = 30.0
_PORT = re.compile(r"(?<=127\.0\.0\.1:)(\d+)")
_KILL = re.compile(r"""^kill -9 "\$\(pgrep -f 'broker --config (?P<file>\S+)'\)"$""")
_STATE = re.compile(r"^broker \S+ (started|is a slave)")


def ferrymq_command() -> list[str]:
    """The ``ferrymq`` entry point beside this interpreter, as a user runs it."""
    script = Path(sys.executable).with_name("ferrymq")
    return [str(script)] if script.exists() else [sys.executable, "-m", "ferrymq.cli.main"]


class RunningBroker:
    """A broker a recipe started; its output is kept for the failure message."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        self.output: list[str] = []
        self.process = subprocess.Popen(
            args,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)

    def ready(self) -> bool:
        """It serves, or waits as a slave (what the broker command prints either way)."""
        return any(_STATE.match(line) for line in self.output)

    def exited(self) -> bool:
        return self.process.poll() is not None

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self._reader.join(timeout=5)
        if self.process.stdout is not None:
            self.process.stdout.close()


class RecipeRun:
    """One recipe in one directory: its port map, its brokers, and the transcript so far."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.ports: dict[str, str] = {}
        self.brokers: dict[str, RunningBroker] = {}
        self.transcript: list[str] = []

    def rewrite(self, text: str) -> str:
        """The same text with each 127.0.0.1 port replaced by a free one, consistently."""

        def free(match: re.Match[str]) -> str:
            return self.ports.setdefault(match[1], str(free_port()))

        return _PORT.sub(free, text)

    def run(self, blocks: list[Block]) -> None:
        for block in blocks:
            if block.lang == "sh":
                for line in shell_lines(block.text):
                    self.step(self.rewrite(line))
            else:
                (self.workdir / block.title).write_text(self.rewrite(block.text))

    def step(self, line: str) -> None:
        self.transcript.append(f"$ {line}")
        kill = _KILL.match(line)
        if kill is not None:
            self.kill(kill["file"])
            return
        args = shlex.split(line)
        assert args[0] == "ferrymq", f"a recipe line this test cannot run: {line}"
        if args[1] == "broker":
            self.start_broker(args)
        else:
            self.run_command(args)

    def start_broker(self, args: list[str]) -> None:
        config = args[args.index("--config") + 1]
        broker = RunningBroker([*ferrymq_command(), *args[1:]], self.workdir)
        self.brokers[config] = broker
        admin = args[args.index("--admin") + 1]
        port = int(admin.rsplit(":", 1)[1])
        wait_until_blocking(
            lambda: listening(port) or broker.exited(),
            START_TIMEOUT_S,
            f"{config}'s admin API to listen",
        )
        assert not broker.exited(), f"{config} exited:\n{''.join(broker.output)}"

    def run_command(self, args: list[str]) -> None:
        for config, broker in self.brokers.items():
            if not broker.exited():
                wait_until_blocking(broker.ready, START_TIMEOUT_S, f"{config} to start")
        try:
            done = subprocess.run(
                [*ferrymq_command(), *args[1:]],
                cwd=self.workdir,
                capture_output=True,
                text=True,
                timeout=COMMAND_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired as timeout:
            raise AssertionError(f"still running after {timeout.timeout} s") from None
        self.transcript += [done.stdout, done.stderr]
        assert done.returncode == 0, f"exit {done.returncode}: {done.stderr}"
        if args[1] == "consume" and "--count" in args:
            count = int(args[args.index("--count") + 1])
            assert len(done.stdout.splitlines()) == count, done.stdout

    def kill(self, config: str) -> None:
        broker = self.brokers[config]
        broker.process.kill()
        broker.process.wait(timeout=10)

    def stop(self) -> None:
        for broker in self.brokers.values():
            broker.stop()

    def report(self) -> str:
        """What ran and what each broker printed, for a failing test's message."""
        logs = [f"--- {name}\n{''.join(b.output[-30:])}" for name, b in self.brokers.items()]
        return "\n".join(self.transcript + logs)


def shell_lines(text: str) -> list[str]:
    """The commands of a shell block: continuation lines joined, comments and blanks left out."""
    joined = text.replace("\\\n", " ")
    return [
        " ".join(line.split())
        for line in joined.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
