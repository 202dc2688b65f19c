"""What `ferrymq check-config` finds in `<broker-connections>` that the broker used to refuse
only at start, or never: `<amqp-connection uri>` options (read by the code the runtime uses,
`config.connection_hosts`), senders, receivers, peers and federations on a broker whose
advisories are off, and `<mirror durable="false">` (ignored, said so)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from ferrymq.cli.main import main
from ferrymq.config import ConfigError, parse_config
from ferrymq.config.broker_connections import AmqpConnectionConfig, MirrorConfig
from ferrymq.service.errors import BrokerStartError
from ferrymq.testing import broker_config, running_broker

ACTIVEMQ = """\
<beans xmlns="http://www.springframework.org/schema/beans">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="b1" {broker}>
    <broker-connections>
      <amqp-connection uri="{uri}" name="c">
        {children}
      </amqp-connection>
    </broker-connections>
  </broker>
</beans>
"""


def check(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    *,
    uri: str = "tcp://h:5672",
    children: str = "<mirror/>",
    broker: str = "",
) -> tuple[int, list[str]]:
    path = tmp_path / "activemq.xml"
    text = ACTIVEMQ.format(uri=uri.replace("&", "&amp;"), children=children, broker=broker)
    path.write_text(text, encoding="utf-8")
    code = main(["check-config", str(path)])
    return code, capsys.readouterr().out.replace(str(path), "activemq.xml").splitlines()


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("tcp://h:5672?amqpIdleTimeout=abc", "amqpIdleTimeout must be milliseconds, got 'abc'"),
        ("tcp://h:5672?connectTimeoutMillis=-5", "connectTimeoutMillis must be milliseconds"),
        ("tcp://h:5672?sslEnabled=maybe", "sslEnabled must be true or false, got 'maybe'"),
        (
            "tcp://h:5672?sslEnabled=true&trustStorePath=/nonexistent/ca.pem",
            "cannot read the truststore /nonexistent/ca.pem",
        ),
        ("amqps://h:5671?verifyHost=perhaps", "verifyHost must be true or false, got 'perhaps'"),
        (
            "tcp://a:5672#tcp://b:5672?amqpIdleTimeout=x",
            "tcp://b:5672?amqpIdleTimeout=x: amqpIdleTimeout must be milliseconds",
        ),
    ],
)
def test_a_uri_option_the_broker_would_refuse_is_an_error_with_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], uri: str, expected: str
) -> None:
    code, lines = check(tmp_path, capsys, uri=uri)
    assert code == 1
    assert lines[0] == "errors (the broker will not start):"
    assert lines[1].startswith("  activemq.xml:4: <amqp-connection uri=")
    assert f": attribute uri: {expected}" in lines[1]
    assert lines[-1] == "activemq.xml: will not start: 1 error, 0 ignored settings"


def test_good_uri_options_load(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    uri = "tcp://h:5672?amqpIdleTimeout=0&connectTimeoutMillis=500&sslEnabled=false#k:1"
    assert check(tmp_path, capsys, uri=uri) == (
        0,
        ["activemq.xml: loads: 0 errors, 0 ignored settings"],
    )


def test_broker_xml_checks_the_options_too() -> None:
    text = (
        '<configuration xmlns="urn:activemq"><core xmlns="urn:activemq:core">\n'
        "<broker-connections>\n"
        '<amqp-connection name="c" uri="tcp://h:5672?amqpIdleTimeout=soon"><mirror/>'
        "</amqp-connection>\n</broker-connections></core></configuration>\n"
    )
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "broker.xml")
    assert (caught.value.line, caught.value.attribute) == (3, "uri")
    assert "amqpIdleTimeout must be milliseconds" in str(caught.value)


async def test_a_configuration_built_in_code_still_fails_its_start_in_one_line(
    tmp_path: Path,
) -> None:
    connection = AmqpConnectionConfig(
        "c", "tcp://h:5672?sslEnabled=maybe", elements=(MirrorConfig(),)
    )
    config = replace(broker_config(tmp_path), broker_connections=(connection,))
    with pytest.raises(BrokerStartError) as raised:
        async with running_broker(config):
            pass
    assert str(raised.value) == (
        "broker connection c: broker connection uri 'tcp://h:5672?sslEnabled=maybe': "
        "sslEnabled must be true or false, got 'maybe' (correct the uri)"
    )


def test_links_and_federation_need_advisories(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    children = (
        '<mirror/>\n<sender queue-name="a"/>\n<receiver queue-name="b"/>\n'
        '<peer address-match="c.#"/>\n<federation><local-queue-policy name="p"/></federation>'
    )
    code, lines = check(tmp_path, capsys, children=children, broker='advisorySupport="false"')
    assert code == 1
    errors = lines[1:-1]
    expected = [(6, "sender"), (7, "receiver"), (8, "peer"), (9, "federation")]
    assert len(errors) == len(expected)
    for line, (number, tag) in zip(errors, expected, strict=True):
        assert line.startswith(f"  activemq.xml:{number}: <{tag}> of broker connection 'c' needs")
        assert 'advisorySupport="false"' in line
        assert 'set advisorySupport="true" on <broker>' in line


def test_a_mirror_needs_no_advisories(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, lines = check(tmp_path, capsys, broker='advisorySupport="false"')
    assert (code, lines) == (0, ["activemq.xml: loads: 0 errors, 0 ignored settings"])


def test_a_non_durable_mirror_is_ignored_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines = check(tmp_path, capsys, children='<mirror durable="false"/>')
    assert code == 0
    assert lines[1].startswith(
        '  activemq.xml:5: <mirror durable="false">: ignored: the mirror queue is always durable'
    )
    assert lines[-1] == "activemq.xml: loads: 0 errors, 1 ignored setting"
