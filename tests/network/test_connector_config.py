"""Network connector configuration that a broker refuses or cannot follow (seed 001 ch. 2:
"each connector has a unique name")."""

from __future__ import annotations

from pathlib import Path

import pytest

from ferrymq.config.errors import ConfigError
from ferrymq.testing import broker_config, running_broker

XML = """<beans><broker xmlns="http://activemq.apache.org/schema/core" brokerName="A">
<networkConnectors>{}</networkConnectors></broker></beans>"""


def test_two_connectors_with_one_name_are_refused(tmp_path: Path) -> None:
    connectors = (
        '<networkConnector name="link" uri="static:(tcp://127.0.0.1:1)"/>'
        '<networkConnector name="link" uri="static:(tcp://127.0.0.1:2)"/>'
    )
    with pytest.raises(ConfigError, match="name 'link' is used twice") as raised:
        broker_config(tmp_path, name="A", xml=XML.format(connectors))
    assert raised.value.attribute == "name"


async def test_a_bad_discovery_agent_option_names_itself_and_leaves_the_broker_serving(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    connectors = '<networkConnector name="mc" uri="multicast://default?bogusOption=1"/>'
    config = broker_config(tmp_path, name="A", xml=XML.format(connectors))
    async with running_broker(config) as broker:
        assert broker.network.connectors == []
        assert broker.stomp_ports
    assert "networkConnector mc" in caplog.text
    assert "bogusOption" in caplog.text
