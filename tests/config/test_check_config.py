"""`ferrymq check-config FILE` (issue 15, item 9): every problem of a file at once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ferrymq.cli.main import main

BROKEN = """\
<beans xmlns="http://www.springframework.org/schema/beans">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="b" useJmxx="false">
    <persistenceAdapter>
      <kahaDB directory="x" enableIndexWriteAsync="true" journalMaxFileLength="lots"/>
    </persistenceAdapter>
    <transportConnectors>
      <transportConector uri="tcp://127.0.0.1:0"/>
      <transportConnector name="openwire" uri="tcp://127.0.0.1:0?transport.closeAsync=false"/>
    </transportConnectors>
    <plugins>
      <jaasDualAuthenticationPlugin/>
    </plugins>
  </broker>
</beans>
"""

IGNORED = """\
<beans xmlns="http://www.springframework.org/schema/beans">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="b" start="false">
    <networkConnectors>
      <networkConnector name="n" uri="static:(tcp://127.0.0.1:1)" dispatchAsync="false"
          advisoryForFailedForward="true" useBrokerNamesAsIdSeed="false"/>
    </networkConnectors>
    <persistenceAdapter>
      <jdbcPersistenceAdapter dataSource="#pg"/>
    </persistenceAdapter>
  </broker>
  <bean id="pg" class="org.apache.commons.dbcp2.BasicDataSource">
    <property name="url" value="jdbc:postgresql://127.0.0.1/db"/>
    <property name="maxTotal" value="200"/>
  </bean>
</beans>
"""


def _check(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path = tmp_path / "activemq.xml"
    path.write_text(text, encoding="utf-8")
    code = main(["check-config", str(path)])
    return code, capsys.readouterr().out.replace(str(path), "activemq.xml")


def test_lists_every_error_and_every_ignored_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _check(tmp_path, BROKEN, capsys)
    assert code == 1
    errors, ignored = out.split("ignored or not yet supported")
    assert errors.splitlines() == [
        "errors (the broker will not start):",
        '  activemq.xml:2: <broker useJmxx="false">: attribute useJmxx: unknown attribute; '
        "did you mean useJmx?",
        '  activemq.xml:4: <kahaDB journalMaxFileLength="lots">: attribute journalMaxFileLength: '
        "expected a size such as 1024, 64 mb or 100 gb, got 'lots'",
        '  activemq.xml:7: <transportConector uri="tcp://127.0.0.1:0">: unknown element '
        "<transportConector> in <transportConnectors>; did you mean transportConnector?",
        "  activemq.xml:11: <jaasDualAuthenticationPlugin>: not supported yet: FerryMQ has no "
        "dual (password or certificate) authentication yet, and will not run a broker without "
        "the security this file asks for: use <jaasAuthenticationPlugin> or "
        "<jaasCertificateAuthenticationPlugin> (docs/security.md)",
    ]
    assert "activemq.xml:4: <kahaDB enableIndexWriteAsync>: KahaDB tuning" in ignored
    assert "activemq.xml:8: <transportConnector uri> option transport.closeAsync" in ignored
    # Item 6: the connector named openwire serves STOMP, and check-config says so too.
    assert (
        'activemq.xml:8: <transportConnector name="openwire" '
        'uri="tcp://127.0.0.1:0?transport.closeAsync=false">: FerryMQ serves STOMP' in ignored
    )
    assert ignored.splitlines()[-1] == "activemq.xml: will not start: 4 errors, 3 ignored settings"


def test_settings_parsed_without_effect_are_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _check(tmp_path, IGNORED, capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "ignored or not yet supported (the broker starts and says so):"
    expected = [
        '  activemq.xml:2: <broker start="false">: start="false" leaves starting to the '
        "application that embeds ActiveMQ; `ferrymq broker` starts the broker it is given",
        '  activemq.xml:4: <networkConnector name="n"> dispatchAsync="false": ignored',
        '  activemq.xml:4: <networkConnector name="n"> advisoryForFailedForward="true": ignored',
        '  activemq.xml:4: <networkConnector name="n"> useBrokerNamesAsIdSeed="false": ignored',
        '  activemq.xml:11: <property name="maxTotal">: a connection pool setting',
    ]
    assert len(lines) == len(expected) + 2
    for line, start in zip(lines[1:], expected, strict=False):
        assert line.startswith(start)
    assert lines[-1] == "activemq.xml: loads: 0 errors, 5 ignored settings"


def test_a_clean_file_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _check(tmp_path, '<broker brokerName="ok"/>', capsys)
    assert (code, out) == (0, "activemq.xml: loads: 0 errors, 0 ignored settings\n")


def test_a_file_that_cannot_be_read_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "absent.xml"
    assert main(["check-config", str(path)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "errors (the broker will not start):",
        f"  {path}: cannot read: No such file or directory",
        f"{path}: will not start: 1 error, 0 ignored settings",
    ]


def test_the_command_line(tmp_path: Path) -> None:
    path = tmp_path / "activemq.xml"
    path.write_text(BROKEN, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "ferrymq.cli.main", "check-config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stdout + done.stderr
    assert done.stdout.count(f"{path}:") == 4 + 3 + 1  # errors, ignored settings, summary


@pytest.mark.parametrize("command", ["check-config", "broker"])
def test_a_property_without_a_value_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([command, "-D", "activemq.data", *(["x.xml"] if command == "check-config" else [])])
    assert exited.value.code == 2
    assert "-D expects NAME=VALUE, got 'activemq.data'" in capsys.readouterr().err
