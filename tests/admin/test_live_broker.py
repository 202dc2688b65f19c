"""The admin API in front of a real broker, with traffic from a real STOMP client."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from pathlib import Path
from typing import Any

from ferrymq.config.cli import config_from_flags
from ferrymq.testing import running_broker


def _get(url: str) -> tuple[str, bytes]:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.headers["Content-Type"], response.read()


async def _json(url: str) -> Any:
    _, body = await asyncio.to_thread(_get, url)
    return json.loads(body)


async def test_broker_destinations_connections_and_metrics(tmp_path: Path) -> None:
    config = config_from_flags(
        "live", tmp_path / "data", ["stomp://127.0.0.1:0"], "127.0.0.1:0", True
    )
    async with running_broker(config) as broker:
        assert broker.admin is not None
        base = broker.admin.url
        reader, writer = await asyncio.open_connection("127.0.0.1", broker.stomp_ports[0])
        writer.write(
            b"CONNECT\naccept-version:1.2\nhost:x\nclient-id:admin-test\n\n\x00"
            b"SUBSCRIBE\nid:7\ndestination:/queue/watched\nack:client\n\n\x00"
            b"SEND\ndestination:/queue/watched\npersistent:true\nreceipt:r\n\nhello\x00"
        )
        await writer.drain()
        received = b""
        while b"RECEIPT" not in received or b"MESSAGE" not in received:
            received += await asyncio.wait_for(reader.read(4096), 5)

        info = await _json(base + "/api/v1/broker")
        assert info["name"] == "live"
        assert info["connections"] == 1
        assert info["store"]["commits"] >= 1

        (queue,) = (await _json(base + "/api/v1/destinations?type=queue"))["destinations"]
        assert (queue["name"], queue["depth"], queue["in_flight"], queue["consumers"]) == (
            "watched",
            1,
            1,
            1,
        )
        (connection,) = (await _json(base + "/api/v1/connections"))["connections"]
        assert connection["client_id"] == "admin-test"
        assert connection["subscriptions"][0]["destination"] == {
            "type": "queue",
            "name": "watched",
        }

        content_type, metrics = await asyncio.to_thread(_get, base + "/metrics")
        assert content_type.startswith("text/plain; version=0.0.4")
        text = metrics.decode()
        assert 'ferrymq_destination_depth{name="watched",type="queue"} 1.0' in text
        assert "ferrymq_store_commits_total" in text
        writer.close()
        await writer.wait_closed()
