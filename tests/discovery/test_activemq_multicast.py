"""FerryMQ and a real ActiveMQ 5.17 (Debian's ``activemq`` package) find each other by multicast
(issue 6; reference §3.4): ActiveMQ's STOMP connector advertises with ``discoveryUri`` and a
FerryMQ ``discovery:(multicast://...)`` client finds it and exchanges a message with it; a
FerryMQ broker advertises and ActiveMQ's ``<networkConnector uri="multicast://...">`` tries to
bridge to it (its log says so); when ActiveMQ stops, its ``dead`` datagram removes it from a
FerryMQ agent at once (the last test: it stops the module's ActiveMQ).

ActiveMQ runs once for the module, in the foreground as a child process, on free ports with its
files under a temporary directory, pinned to ``lo`` like every agent in the tests: its
``networkInterface=lo`` sends by ``lo`` and ``joinNetworkInterface=lo`` joins there (without
it ActiveMQ joins on its first non-loopback interface). FerryMQ reads the same agent URI.
Every wait is bounded. A machine without ActiveMQ fails here, saying what to install.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ferrymq.client import connect
from ferrymq.testing import broker_config, free_port, running_broker
from tests.discovery.test_multicast_agent import Recorder, fresh_agent_uri, running_agent

ACTIVEMQ_HOME = Path("/usr/share/activemq")
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 30.0
WAIT_S = 20.0
BROKER_NAME = "amq-interop"

_ACTIVEMQ_XML = """<beans xmlns="http://www.springframework.org/schema/beans"
  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
  xsi:schemaLocation="http://www.springframework.org/schema/beans
    http://www.springframework.org/schema/beans/spring-beans.xsd
    http://activemq.apache.org/schema/core
    http://activemq.apache.org/schema/core/activemq-core.xsd">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="{name}" useJmx="false"
      persistent="false" dataDirectory="{data}">
    <networkConnectors>
      <networkConnector name="multicast" uri="{agent}"/>
    </networkConnectors>
    <transportConnectors>
      <transportConnector name="stomp" uri="stomp://127.0.0.1:{port}" discoveryUri="{agent}"/>
    </transportConnectors>
  </broker>
</beans>
"""

# log4j 1.2 as Debian packages it: the start-up lines and the network connector's decisions.
_LOG4J = """log4j.rootLogger=WARN, stdout
log4j.logger.org.apache.activemq.broker.BrokerService=INFO
log4j.logger.org.apache.activemq.network.DiscoveryNetworkConnector=INFO
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=%d{ISO8601} %-5p %c{1} - %m%n
"""

# What /usr/bin/activemq runs for "start", in the foreground (as benchmarks/compare.sh does).
_JAVA_OPENS = [
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


class ActiveMQ:
    """An ActiveMQ broker as a child process; its output is kept, line by line."""

    def __init__(self, base: Path, agent_uri: str) -> None:
        self.base = base
        self.agent_uri = agent_uri
        self.port = free_port()
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._process: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None

    def start(self) -> None:
        conf, data, tmp = self.base / "conf", self.base / "data", self.base / "tmp"
        for directory in (conf, data, tmp):
            directory.mkdir(parents=True, exist_ok=True)
        agent = self.agent_uri.replace("&", "&amp;")
        (conf / "activemq.xml").write_text(
            _ACTIVEMQ_XML.format(name=BROKER_NAME, data=data, agent=agent, port=self.port)
        )
        (conf / "log4j.properties").write_text(_LOG4J)
        java = shutil.which("java")
        jar = ACTIVEMQ_HOME / "bin" / "activemq.jar"
        if java is None or not jar.exists():
            pytest.fail(
                f"ActiveMQ 5.17 is needed for this test and is not installed ({jar} or java "
                "missing): apt-get install activemq (make system-deps does it)"
            )
        command = [
            java, "-Xms64m", "-Xmx256m", "-Djava.net.preferIPv4Stack=true", *_JAVA_OPENS,
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
        started = f"({BROKER_NAME}, "
        if not self.wait_for_line(lambda line: started in line and "started" in line):
            self.stop()
            pytest.fail("ActiveMQ did not start:\n" + "".join(self.lines[-60:]))

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


@pytest.fixture(scope="module")
def agent_uri() -> str:
    return fresh_agent_uri(keep_alive_ms=100, extra="&joinNetworkInterface=lo")


@pytest.fixture(scope="module")
def activemq(tmp_path_factory: pytest.TempPathFactory, agent_uri: str) -> Iterator[ActiveMQ]:
    broker = ActiveMQ(tmp_path_factory.mktemp("activemq"), agent_uri)
    try:
        broker.start()
        yield broker
    finally:
        broker.stop()


async def test_a_ferrymq_discovery_client_finds_activemq_and_exchanges_a_message(
    activemq: ActiveMQ, agent_uri: str
) -> None:
    # ActiveMQ publishes its listener under the host name it resolves 127.0.0.1 to.
    probe = Recorder()
    async with running_agent(agent_uri, listener=probe):
        await probe.wait_for(
            lambda: any(uri.endswith(f":{activemq.port}") for uri in probe.services),
            "ActiveMQ's STOMP connector",
        )
    (advertised,) = probe.services
    assert advertised.startswith("stomp://")
    async with connect(f"discovery:({agent_uri})", connect_timeout=WAIT_S) as client:
        assert client.remote_url.endswith(f":{activemq.port}")
        assert "ActiveMQ" in (client.server or "")
        subscription = await client.subscribe("/queue/ferrymq.interop")
        await client.send("/queue/ferrymq.interop", "found by multicast", persistent=True)
        message = await subscription.get(timeout=WAIT_S)
    assert message.text == "found by multicast"


async def test_activemq_discovers_a_ferrymq_broker_and_tries_to_bridge_to_it(
    activemq: ActiveMQ, agent_uri: str, tmp_path: Path
) -> None:
    xml = f"""<beans><broker xmlns="http://activemq.apache.org/schema/core" brokerName="ferry">
      <transportConnectors>
        <transportConnector name="stomp" uri="stomp://127.0.0.1:0"
          discoveryUri="{agent_uri.replace("&", "&amp;")}"/>
      </transportConnectors></broker></beans>"""
    async with running_broker(broker_config(tmp_path, name="ferry", xml=xml)) as broker:
        advertised = f"stomp://127.0.0.1:{broker.stomp_ports[0]}"
        wanted = f"Establishing network connection from vm://{BROKER_NAME} to {advertised}"
        seen = await asyncio.to_thread(activemq.wait_for_line, lambda line: wanted in line, WAIT_S)
        assert seen, "ActiveMQ did not discover FerryMQ:\n" + "".join(activemq.lines[-40:])


async def test_activemqs_dead_datagram_removes_it_at_once(
    activemq: ActiveMQ, agent_uri: str
) -> None:
    """The module's last test: it stops ActiveMQ."""
    patient = agent_uri.replace("keepAliveInterval=100", "keepAliveInterval=10000")  # expiry 100 s
    probe = Recorder()
    async with running_agent(patient, listener=probe):
        await probe.wait_for(lambda: bool(probe.services), "ActiveMQ's STOMP connector")
        await asyncio.to_thread(activemq.stop)
        await probe.wait_for(lambda: not probe.services, "ActiveMQ's dead datagram")
    assert [what for what, _, _ in probe.events] == ["add", "remove"]
