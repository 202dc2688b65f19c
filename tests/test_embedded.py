"""``ferrymq.embedded``: a broker started inside an application and reached over ``vm://``, as
docs/embedding.md describes (issue 15, defect 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ferrymq.client import ConnectFailedError, connect
from ferrymq.embedded import BrokerStartError, ConfigError, embedded_broker, embedded_config
from ferrymq.util import vm


async def test_a_default_embedded_broker_is_reachable_by_its_name_only(tmp_path: Path) -> None:
    async with embedded_broker(name="plain", data_dir=tmp_path, persistent=False) as broker:
        assert broker.service.listeners == []  # no TCP listener
        assert broker.admin is None  # no admin listener
        async with connect("vm://plain?create=false") as conn:
            await conn.send("/queue/q", "x", receipt=True)
    with pytest.raises(ConnectFailedError):
        await connect("vm://plain?create=false")


async def test_an_embedded_broker_from_a_file_keeps_its_messages(tmp_path: Path) -> None:
    config = tmp_path / "activemq.xml"
    config.write_text(
        '<broker brokerName="filed" dataDirectory="${activemq.data}">'
        '<transportConnectors><transportConnector uri="vm://app"/></transportConnectors>'
        "</broker>"
    )
    data = tmp_path / "data"
    async with embedded_broker(config, data_dir=data), connect("vm://app?create=false") as conn:
        await conn.send("/queue/kept", "persistent", persistent=True, receipt=True)
    assert vm.lookup("app") is None
    async with embedded_broker(str(config), data_dir=data), connect("vm://filed") as conn:
        subscription = await conn.subscribe("/queue/kept")
        message = await subscription.get(timeout=5)
        assert message.text == "persistent"


async def test_two_embedded_brokers_may_not_share_a_name(tmp_path: Path) -> None:
    async with embedded_broker(name="twin", persistent=False):
        with pytest.raises(BrokerStartError, match="a broker named 'twin' already runs"):
            async with embedded_broker(name="twin", persistent=False):
                pass


def test_embedded_config_errors() -> None:
    with pytest.raises(ValueError, match="not both"):
        embedded_config("activemq.xml", xml="<broker/>")
    with pytest.raises(ConfigError, match="embedded configuration"):
        embedded_config(xml="<broker brokerNme='x'/>")
