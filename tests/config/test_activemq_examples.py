"""ActiveMQ 5.17's own example configurations start on FerryMQ (issue 15, item 8).

Debian's `activemq` package installs them with its documentation (examples/conf); `make
system-deps` installs the package, so a missing folder fails the test rather than skipping it.
Each broker configuration is copied to a temporary directory with its listeners moved to free
ports on 127.0.0.1, its multicast discovery to a group of its own and `${activemq.data}` to the
temporary directory, then started as `ferrymq broker --config` and stopped with SIGTERM. What
FerryMQ ignores in each file is reported once per setting, with the reason. The one file that
asks for authentication (activemq-security.xml) starts too, with the credentials-enc.properties
it reads (Jasypt-encrypted, decrypted with ACTIVEMQ_ENCRYPTION_PASSWORD as its comment says);
tests/security/test_activemq_security_example.py checks what it allows.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

from ferrymq.cli.main import main
from ferrymq.config import load_config
from ferrymq.testing import BrokerProcess, free_port
from ferrymq.testing.certificates import make_certificates

EXAMPLES = Path("/usr/share/doc/activemq/examples/conf")
"""Where Debian's activemq package puts ActiveMQ 5.17's example configurations."""

STARTING = [
    "activemq-demo.xml",
    "activemq-dynamic-network-broker1.xml",
    "activemq-dynamic-network-broker2.xml",
    "activemq-jdbc-performance.xml",
    "activemq-jdbc.xml",
    "activemq-mqtt.xml",
    "activemq-scalability.xml",
    "activemq-security.xml",
    "activemq-specjms.xml",
    "activemq-static-network-broker1.xml",
    "activemq-static-network-broker2.xml",
    "activemq-stomp.xml",
    "activemq-throughput.xml",
    "activemq.xml",
]
NEEDS = {"activemq-security.xml": ["credentials-enc.properties"]}
"""The files an example reads besides itself (copied beside it)."""
KEYSTORES = {"activemq-demo.xml": "password"}
"""Examples whose `<sslContext>` reads `${activemq.conf}/broker.ks` and `broker.ts`, with the
password it gives: made here as PKCS#12 (FerryMQ reads the format from the file, not its name)."""
ENVIRONMENT = {"ACTIVEMQ_ENCRYPTION_PASSWORD": "activemq"}
"""What activemq-security.xml's comment tells its user to export."""

_LISTENER = re.compile(r'(<transportConnector\b[^>]*\buri=")([a-z+]+)://[^:/"]+:\d+')
_REMOTE = re.compile(r"(static:\(tcp)://[^:/\")]+:\d+")


def _example(name: str) -> Path:
    path = EXAMPLES / name
    if not path.is_file():
        pytest.fail(
            f"{path} is missing: install Debian's activemq package (make system-deps), whose "
            "documentation holds ActiveMQ's example configurations"
        )
    return path


def _movable(text: str) -> str:
    """The file with its listeners on free local ports and a multicast group of its own."""
    text = _LISTENER.sub(lambda m: f"{m.group(1)}{m.group(2)}://127.0.0.1:{free_port()}", text)
    text = _REMOTE.sub(lambda m: f"{m.group(1)}://127.0.0.1:{free_port()}", text)
    group = f"multicast://239.255.2.3:{free_port(udp=True)}?group=examples-{uuid.uuid4().hex}"
    return text.replace("multicast://default", group)


def test_the_folder_holds_the_fourteen_broker_configurations() -> None:
    found = sorted(
        path.name
        for path in _example("activemq.xml").parent.glob("*.xml")
        if re.search(r"<broker\b", path.read_text(encoding="utf-8"))
    )
    assert found == sorted(STARTING)
    assert len(found) == 14


@pytest.mark.parametrize("name", STARTING)
def test_example_starts(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = _movable(_example(name).read_text(encoding="utf-8"))
    config_file = tmp_path / name
    config_file.write_text(text, encoding="utf-8")
    for needed in NEEDS.get(name, []):
        (tmp_path / needed).write_bytes(_example(needed).read_bytes())
    if name in KEYSTORES:  # its sslContext names a keystore the package does not ship
        made = make_certificates(tmp_path / "tls", password=KEYSTORES[name])
        (tmp_path / "broker.ks").write_bytes(made.server.p12.read_bytes())
        (tmp_path / "broker.ts").write_bytes(made.ca_p12.read_bytes())
    data = tmp_path / "data"
    for variable, value in ENVIRONMENT.items():
        monkeypatch.setenv(variable, value)
    broker = BrokerProcess(
        data,
        name=load_config(config_file, {"activemq.data": str(data)}).broker_name,
        listen=False,
        extra_args=["--config", str(config_file), "-D", f"activemq.data={data}"],
        env=ENVIRONMENT,
    )
    broker.start()
    try:
        output = "".join(broker.output)
        warned = [line for line in output.splitlines() if f"{config_file}:" in line]
        assert warned, output  # every example holds something FerryMQ ignores, and says so
        assert len(warned) == len(set(warned)), "each ignored setting is reported once"
        assert "Traceback" not in output
    finally:
        assert broker.stop() == 0


def test_security_example_needs_its_encryption_password(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without ACTIVEMQ_ENCRYPTION_PASSWORD the ENC(...) credentials cannot be read: one clear
    line naming the variable, and no password in the output."""
    monkeypatch.delenv("ACTIVEMQ_ENCRYPTION_PASSWORD", raising=False)
    assert main(["check-config", str(_example("activemq-security.xml"))]) == 1
    out = capsys.readouterr().out
    assert "ACTIVEMQ_ENCRYPTION_PASSWORD is not set" in out
    assert "manager" not in out


def test_openwire_connector_warns_at_start(tmp_path: Path) -> None:
    """Item 6: Debian's examples name their tcp:// connector "openwire"; FerryMQ serves STOMP
    there, and says so, naming the connector."""
    text = _movable(_example("activemq-throughput.xml").read_text(encoding="utf-8"))
    config_file = tmp_path / "activemq.xml"
    config_file.write_text(text, encoding="utf-8")
    broker = BrokerProcess(
        tmp_path / "data", listen=False, extra_args=["--config", str(config_file)]
    ).start()
    try:
        (line,) = [line for line in broker.output if 'name="openwire"' in line]
        assert "WARNING" in line
        assert "FerryMQ serves STOMP on this listener until OpenWire exists" in line
        assert "Java OpenWire clients" in line
    finally:
        broker.stop()
