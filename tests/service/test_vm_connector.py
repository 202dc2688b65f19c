"""``<transportConnector uri="vm://NAME"/>``: the broker registered under NAME for in-process
clients (issue 15, defect 3; seed 001 Example 10.1, "Embedded Apache Camel JMS-to-JMS Bridge",
whose Camel side connects with ``vm://local?create=false``)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from ferrymq.broker import Broker
from ferrymq.client import ConnectFailedError, connect
from ferrymq.client.blocking import connect as blocking_connect
from ferrymq.config.activemq_xml import parse_config
from ferrymq.config.errors import ConfigError
from ferrymq.config.model import BrokerConfig
from ferrymq.config.pending import pending_features
from ferrymq.service.errors import BrokerStartError
from ferrymq.testing import BrokerProcess, broker_config, running_broker
from ferrymq.util import vm

# Seed 001 Example 10.1, with FerryMQ's placeholders filled by -D and the TCP listener given
# by the test (--listen on a free port of 127.0.0.1).
EXAMPLE_10_1 = """<?xml version="1.0" encoding="UTF-8"?>
<beans xmlns="http://www.springframework.org/schema/beans">
  <broker xmlns="http://activemq.apache.org/schema/core"
    brokerName="${broker-name}"
    dataDirectory="${data}"
    start="false">
    <transportConnectors>
      <!-- Create a VM endpoint to enable embedded connections -->
      <transportConnector uri="vm://local" />
    </transportConnectors>
  </broker>
</beans>
"""


def vm_broker_config(tmp_path: Path, *connectors: str, name: str = "vmhost") -> BrokerConfig:
    """A non-persistent broker on 127.0.0.1 port 0 plus the given ``vm://`` connectors."""
    listeners = "".join(f'<transportConnector uri="{uri}"/>' for uri in connectors)
    xml = f"<broker><transportConnectors>{listeners}</transportConnectors></broker>"
    parsed = parse_config(xml, "vm-test.xml")
    base = broker_config(tmp_path, name=name, persistent=False)
    return replace(
        base, transport_connectors=base.transport_connectors + parsed.transport_connectors
    )


def test_ferrymq_broker_starts_with_a_vm_connector_and_stays_up(tmp_path: Path) -> None:
    """`ferrymq broker --config F` with Example 10.1's connector serves and stops cleanly; the
    file's vm:// connector is not reported as unsupported."""
    process = BrokerProcess(
        tmp_path / "data",
        name="camel-host",
        config_xml=EXAMPLE_10_1,
        extra_args=["-D", "broker-name=camel-host", "-D", f"data={tmp_path / 'data'}"],
    )
    with process:
        with blocking_connect(process.url) as conn:  # still serving after the start
            conn.send("/queue/after-start", "up", receipt=True)
        assert process.process is not None
        assert process.process.poll() is None
        output = "".join(process.output)
        assert "serving STOMP in this process as vm://local" in output, output
        vm_lines = [line for line in process.output if "vm://local" in line]
        assert not [line for line in vm_lines if "not supported" in line], output
        assert "Traceback" not in output, output
    assert process.process.returncode == 0, "".join(process.output)


async def test_an_application_reaches_the_vm_connector_by_its_name(tmp_path: Path) -> None:
    async with running_broker(vm_broker_config(tmp_path, "vm://local")) as broker:
        async with connect("vm://local?create=false") as producer:
            await producer.send("/queue/orders", "one", receipt=True)
        async with connect("vm://local") as consumer:
            subscription = await consumer.subscribe("/queue/orders")
            message = await subscription.get(timeout=5)
            assert message.text == "one"
            # The connection is the connector's: it carries the connector's name.
            assert [c.connector for c in broker.service.connections.values()] == ["vm://local"]
        # Every broker is reachable by its brokerName too (ActiveMQ's BrokerRegistry).
        async with connect("vm://vmhost?create=false") as by_name:
            await by_name.send("/queue/orders", "two", receipt=True)
    assert vm.lookup("local") is None
    with pytest.raises(ConnectFailedError, match="no broker named 'local'"):
        await connect("vm://local?create=false")


async def test_vm_localhost_connector_for_a_broker_named_localhost(tmp_path: Path) -> None:
    """`vm://localhost` (ActiveMQ's default name) on a broker of that name: one registration."""
    config = vm_broker_config(tmp_path, "vm://localhost", name="localhost")
    async with running_broker(config), connect("vm://localhost?create=false") as conn:
        await conn.send("/queue/q", "x", receipt=True)


async def test_a_vm_name_bound_by_another_broker_stops_the_start(tmp_path: Path) -> None:
    async with running_broker(vm_broker_config(tmp_path / "a", "vm://shared", name="a")):
        second = Broker(vm_broker_config(tmp_path / "b", "vm://shared", name="b"))
        with pytest.raises(BrokerStartError, match=r"vm://shared is already bound"):
            await second.start()
        async with connect("vm://shared?create=false") as conn:  # still the first broker's
            assert conn.server is not None


def test_a_vm_connector_is_served_not_pending_and_takes_no_options() -> None:
    config = parse_config(EXAMPLE_10_1, "example.xml", {"broker-name": "b", "data": "d"})
    (connector,) = config.transport_connectors
    assert (connector.scheme, connector.host) == ("vm", "local")
    assert not [line for line in pending_features(config) if "vm://" in line]
    for uri in ("vm://local?marshal=false", "vm://local:61616"):
        with pytest.raises(ConfigError, match="a vm:// connector takes no port and no URI option"):
            parse_config(
                f'<broker><transportConnectors><transportConnector uri="{uri}"/>'
                "</transportConnectors></broker>",
                "bad.xml",
            )
