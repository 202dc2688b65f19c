"""``ferrymq bench`` removes what it created: after a run and a restart of the broker, no bench
destination is left (issue 15, defect 7). The broker is a separate, persistent ``ferrymq broker``
process, restarted on the same data directory, as a user's would be.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from ferrymq.cli.main import main
from ferrymq.testing import BrokerProcess, free_port
from ferrymq.testing.activemq import QUIET_LOG4J, ActiveMQProcess, ActiveMQUnavailableError
from ferrymq.testing.certificates import PASSWORD, make_certificates

RUN_TIMEOUT_S = 120


def bench(url: str, *extra: str) -> dict[str, Any]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ferrymq.cli.main",
            "bench",
            url,
            "--scenario",
            "queue",
            "--scenario",
            "queue-persistent",
            "--count",
            "200",
            "--warmup",
            "10",
            "--timeout",
            "10",
            "--json",
            "--no-progress",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def bench_destinations(admin_port: int) -> list[str]:
    url = f"http://127.0.0.1:{admin_port}/api/v1/destinations"
    with urllib.request.urlopen(url, timeout=10) as answer:
        rows = json.load(answer)["destinations"]
    return [f"/{row['type']}/{row['name']}" for row in rows if "ferrymq.bench" in row["name"]]


def test_nothing_of_a_run_survives_a_restart(tmp_path: Path) -> None:
    admin_port = free_port()
    broker = BrokerProcess(tmp_path / "data", extra_args=["--admin", f"127.0.0.1:{admin_port}"])
    with broker:
        kept = bench(broker.url, "--keep-destinations")
        data = bench(broker.url, "--admin", f"http://127.0.0.1:{admin_port}")
        assert data["cleanup"].startswith("removed through the admin API"), data["cleanup"]
        assert set(data["destinations"]) <= set(data["cleanup"].split(": ", 1)[1].split(", "))
    with broker:  # the same data directory, started again
        left = bench_destinations(admin_port)
    # What the run with --keep-destinations made is still there after the restart (so this
    # test can see a leftover); nothing of the run that cleaned up is.
    assert sorted(left) == sorted(kept["destinations"])
    assert not set(left) & set(data["destinations"])


def test_without_an_admin_api_the_report_says_what_is_left(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path / "data") as broker:  # --admin off
        data = bench(broker.url, "--admin", f"127.0.0.1:{free_port()}")
    assert data["cleanup"].startswith("left: /queue/ferrymq.bench."), data["cleanup"]
    assert "no admin API at http://127.0.0.1:" in data["cleanup"]


SECURED_XML = """\
<beans xmlns="http://www.springframework.org/schema/beans">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="localhost">
    <plugins>
      <simpleAuthenticationPlugin>
        <users>
          <authenticationUser username="admin" password="bench-admin-pw" groups="admins"/>
        </users>
      </simpleAuthenticationPlugin>
    </plugins>
  </broker>
</beans>
"""


def test_a_secured_broker_is_cleaned_up_with_the_admin_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The admin API of a broker with authentication takes writes from its admin group only:
    bench logs in as --admin-user (password from $FERRYMQ_ADMIN_PASSWORD, as every command)."""
    admin_port = free_port()
    broker = BrokerProcess(
        tmp_path / "data",
        config_xml=SECURED_XML,
        extra_args=["--admin", f"127.0.0.1:{admin_port}"],
    )
    login = ("--login", "admin", "--passcode", "bench-admin-pw")
    admin = ("--admin", f"127.0.0.1:{admin_port}")
    with broker:
        monkeypatch.delenv("FERRYMQ_ADMIN_USER", raising=False)
        refused = bench(broker.url, *login, *admin)
        monkeypatch.setenv("FERRYMQ_ADMIN_PASSWORD", "bench-admin-pw")
        cleaned = bench(broker.url, *login, *admin, "--admin-user", "admin")
    assert refused["cleanup"].startswith("left: "), refused["cleanup"]
    assert "HTTP 401" in refused["cleanup"]
    assert "--admin-user" in refused["cleanup"]
    assert cleaned["cleanup"].startswith("removed through the admin API"), cleaned["cleanup"]


# ---- ActiveMQ, as benchmarks/compare.sh runs it ----

BENCH_ACTIVEMQ_XML = Path(__file__).parents[2] / "benchmarks" / "activemq" / "activemq.xml"
GC_WAIT_S = 30.0
# ActiveMQ says which destinations it creates (at start-up: what its store recovered) and which
# it removes; STOMP has no way to list them (its advisories need XStream, not installed).
REGION_LOG4J = QUIET_LOG4J + (
    "log4j.logger.org.apache.activemq.broker.region.AbstractRegion=DEBUG\n"
    "log4j.logger.org.apache.activemq.broker.region.Queue=INFO\n"
)


def created(activemq: ActiveMQProcess) -> list[str]:
    """``queue://NAME`` for every destination ActiveMQ added (or recovered) so far."""
    marker = "bench adding destination: "
    return [line.split(marker, 1)[1].strip() for line in activemq.lines if marker in line]


def test_activemq_in_the_comparison_keeps_nothing_either(tmp_path: Path) -> None:
    port = free_port()
    tls = make_certificates(tmp_path / "tls")  # the file's stomp+ssl connector needs a key
    properties = {
        "${bench.stomp.port}": str(port),
        "${bench.stomp.ssl.port}": str(free_port()),
        "${bench.keystore}": str(tls.server.p12),
        "${bench.keystore.password}": PASSWORD,
    }
    xml = BENCH_ACTIVEMQ_XML.read_text()
    for placeholder, value in properties.items():
        xml = xml.replace(placeholder, value)
    url = f"tcp://127.0.0.1:{port}"

    def activemq() -> ActiveMQProcess:
        process = ActiveMQProcess(
            tmp_path / "activemq", xml, broker_name="bench", log4j=REGION_LOG4J
        )
        try:
            process.start()
        except ActiveMQUnavailableError as exc:
            pytest.fail(str(exc))
        return process

    broker = activemq()
    try:
        data = bench(url)
        assert data["server"].startswith("ActiveMQ/"), data["server"]
        assert "gcInactiveDestinations" in data["cleanup"]
        # A queue that still holds a message is not inactive: it stays (and is seen to stay).
        assert main(["send", url, "/queue/kept.by.activemq", "--count", "1", "--receipt"]) == 0
        queues = [d.removeprefix("/queue/") for d in data["destinations"] if d.startswith("/q")]
        assert queues
        removals = [f"{name} Inactive for longer than" for name in queues]
        assert broker.wait_for_line(
            lambda _: all(any(r in line for line in broker.lines) for r in removals), GC_WAIT_S
        ), f"ActiveMQ did not remove all of {queues}"
    finally:
        broker.stop()
    broker = activemq()  # the same data directory
    broker.stop()
    recovered = created(broker)
    assert "queue://kept.by.activemq" in recovered
    assert not [name for name in recovered if "ferrymq.bench" in name], recovered
