"""A mirror's target node id, kept across restarts (``<broker directory>/mirror-peers.json``).

Dual mirror A <-> B. A learns B's node id when its mirror link first comes up and writes it
down; restarted, A knows it before its link to B is up, so what B's own mirror brings to A in
the meantime is not queued in A's mirror queue toward B (it would only be skipped there)."""

from __future__ import annotations

import json
from pathlib import Path

from ferrymq.broker import Broker
from ferrymq.connections.local import MIRROR_PEERS_FILE
from ferrymq.testing import free_port, running_broker, wait_until
from tests.connections.mirror_support import (
    MIRROR_QUEUE,
    WAIT_S,
    depth,
    node_config,
    send,
    wait_depth,
)


def mirror_peer(broker: Broker, connection: str) -> object:
    elements = broker.broker_connections.get(connection).statistics()["elements"]
    assert isinstance(elements, list)
    return elements[0].get("peer")


async def test_restarted_source_knows_its_mirror_peer_before_the_link_is_up(
    tmp_path: Path,
) -> None:
    port_a, port_b = free_port(), free_port()
    to_b = [("tob", f"tcp://127.0.0.1:{port_b}", "")]
    to_a = [("toa", f"tcp://127.0.0.1:{port_a}", "")]
    async with running_broker(node_config(tmp_path, "b", to_a, amqp_port=port_b)) as b:
        b_node = b.service.region.node_id
        async with running_broker(node_config(tmp_path, "a", to_b, amqp_port=port_a)) as a:
            await wait_until(lambda: mirror_peer(a, "tob") == b_node, WAIT_S, "A knows B")
            directory = a.config.broker_directory
        kept = json.loads((directory / MIRROR_PEERS_FILE).read_text())
        assert kept == {"tob": b_node}

        # A again, its mirror to B not started: B's mirror to A comes up first.
        later = node_config(tmp_path, "a", to_b, amqp_port=port_a, options='auto-start="false"')
        async with running_broker(later) as a:
            await send(b, "/queue/orders", 5)
            await wait_depth(a, "orders", 5, "B's sends mirrored to A")
            assert (depth(a, MIRROR_QUEUE + "tob") or 0) == 0
