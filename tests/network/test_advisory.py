"""The ``ActiveMQ.Advisory.NetworkBridge`` advisory (issue 5 "Observability"; reference §4):
a broker announces on its own advisory topic when one of its bridges starts and when it stops."""

from __future__ import annotations

import json
from pathlib import Path

from ferrymq.client import connect
from ferrymq.testing.network import BrokerNetwork

ADVISORY = "/topic/ActiveMQ.Advisory.NetworkBridge"
WAIT_S = 15.0


async def test_a_bridge_advises_when_it_starts_and_when_its_remote_broker_stops(
    tmp_path: Path,
) -> None:
    net = BrokerNetwork(tmp_path)
    net.add("A", '<networkConnector name="to-B" uri="static:({B})"/>')
    net.add("B")
    await net.start("A")  # B is not up yet: the bridge keeps trying
    try:
        watcher = await connect(net.url("A"))
        try:
            sub = await watcher.subscribe(ADVISORY)
            await net.start("B")
            started = await sub.get(timeout=WAIT_S)
            await net.stop("B")
            stopped = await sub.get(timeout=WAIT_S)
        finally:
            await watcher.disconnect()
    finally:
        await net.stop()
    for message, flag in ((started, "true"), (stopped, "false")):
        assert message.headers["started"] == flag
        assert message.headers["networkConnector"] == "to-B"
        assert (message.headers["remoteBrokerName"], message.headers["remoteBrokerId"]) == (
            "B",
            "B",
        )
        info = json.loads(message.body)["BrokerInfo"]
        assert (info["brokerId"], info["brokerName"], info["networkConnection"]) == ("B", "B", True)
        assert info["duplexConnection"] is False
