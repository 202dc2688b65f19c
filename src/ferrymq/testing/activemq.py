"""A real ActiveMQ 5.17 broker (Debian's ``activemq`` package) as a child process, for the tests
that check FerryMQ against it and for the benchmarks that measure both side by side.

It runs what ``/usr/bin/activemq start`` runs, in the foreground, with its configuration, data
and temporary files under one directory and the log4j configuration given; its output is kept
line by line so a caller can wait for what ActiveMQ says. Every wait is bounded.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Final

ACTIVEMQ_HOME: Final = Path("/usr/share/activemq")
START_TIMEOUT_S: Final = 120.0
STOP_TIMEOUT_S: Final = 30.0

QUIET_LOG4J: Final = """log4j.rootLogger=WARN, stdout
log4j.logger.org.apache.activemq.broker.BrokerService=INFO
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=%d{ISO8601} %-5p %c{1} - %m%n
"""
"""log4j 1.2 as Debian packages it: warnings, and the broker's start-up lines (``started``)."""

_JAVA_OPENS: Final = [
    "--add-reads=java.xml=java.logging",
    *(
        f"--add-opens={module}=ALL-UNNAMED"
        for module in (
            "java.base/java.security",
            "java.base/java.net",
            "java.base/java.lang",
            "java.base/java.util",
            "java.naming/javax.naming.spi",
            "java.rmi/sun.rmi.transport.tcp",
            "java.base/java.util.concurrent",
            "java.base/java.util.concurrent.atomic",
        )
    ),
]


class ActiveMQUnavailableError(RuntimeError):
    """ActiveMQ is not installed here, or did not start; the message says which and how."""


class ActiveMQProcess:
    """One ActiveMQ broker named ``broker_name`` running ``config_xml`` (an activemq.xml;
    ``{data}`` in it is replaced by the data directory)."""

    def __init__(
        self,
        base: Path,
        config_xml: str,
        *,
        broker_name: str,
        log4j: str = QUIET_LOG4J,
        heap_mb: int = 256,
    ) -> None:
        self.base = base
        self.config_xml = config_xml
        self.broker_name = broker_name
        self.log4j = log4j
        self.heap_mb = heap_mb
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._process: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def start(self) -> None:
        """Start and wait until ActiveMQ says it started; raises ``ActiveMQUnavailableError``."""
        conf, data, tmp = self.base / "conf", self.base / "data", self.base / "tmp"
        for directory in (conf, data, tmp):
            directory.mkdir(parents=True, exist_ok=True)
        (conf / "activemq.xml").write_text(self.config_xml.replace("{data}", str(data)))
        (conf / "log4j.properties").write_text(self.log4j)
        java = shutil.which("java")
        jar = ACTIVEMQ_HOME / "bin" / "activemq.jar"
        if java is None or not jar.exists():
            raise ActiveMQUnavailableError(
                f"ActiveMQ 5.17 is not installed ({jar} or java missing): apt-get install "
                "activemq (make system-deps does it)"
            )
        command = [
            java, "-Xms64m", f"-Xmx{self.heap_mb}m", "-Djava.net.preferIPv4Stack=true",
            *_JAVA_OPENS,
            f"-Dlog4j.configuration=file:{conf / 'log4j.properties'}",
            f"-Dactivemq.classpath={conf}", f"-Dactivemq.home={ACTIVEMQ_HOME}",
            f"-Dactivemq.base={self.base}", f"-Dactivemq.conf={conf}",
            f"-Dactivemq.data={data}", f"-Djava.io.tmpdir={tmp}",
            "-jar", str(jar), "start", f"xbean:file:{conf / 'activemq.xml'}",
        ]  # fmt: skip
        self._process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            cwd=self.base,
            env={**os.environ, "ACTIVEMQ_OPTS": ""},
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        started = f"({self.broker_name}, "
        if not self.wait_for_line(lambda line: started in line and "started" in line):
            self.stop()
            raise ActiveMQUnavailableError("ActiveMQ did not start:\n" + "".join(self.lines[-60:]))

    def _read(self) -> None:
        assert self._process is not None
        assert self._process.stdout is not None
        with (self.base / "activemq.log").open("w") as log:
            for line in self._process.stdout:
                log.write(line)
                with self._changed:
                    self.lines.append(line)
                    self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def wait_for_line(
        self, wanted: Callable[[str], bool], timeout_s: float = START_TIMEOUT_S
    ) -> bool:
        """Until a line of output satisfies ``wanted`` (True) or ActiveMQ exits (False)."""
        with self._changed:
            return self._changed.wait_for(
                lambda: any(wanted(line) for line in self.lines) or not self.running, timeout_s
            ) and any(wanted(line) for line in self.lines)

    def stop(self) -> None:
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
        if self._reader is not None:
            self._reader.join(10)
        if process.stdout is not None:
            process.stdout.close()
