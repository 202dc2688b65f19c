"""A real broker with its admin API, a STOMP client (stomp.py) and an AMQP client (proton's
``BlockingConnection``) connected to it: what the admin API, ``/metrics`` and ``ferrymq stat``
must show side by side.

The AMQP client opens a consumer (credit 5) and a producer on ``queue://orders`` and sends two
messages it receives but does not settle: the broker's sender link then has 3 credit left and 2
unsettled deliveries.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proton import Message
from proton.utils import BlockingConnection

from ferrymq.config.cli import config_from_flags
from ferrymq.testing import BrokerThread
from tests.fuzz.canary import Collector, connect, disconnect

TIMEOUT_S = 10.0
CONTAINER = "amqp-watched"
STOMP_CLIENT = "stomp-watched"
ADDRESS = "queue://orders"
CREDIT = 5
SENT = 2


@dataclass
class Mixed:
    broker: BrokerThread
    admin_url: str


@contextmanager
def mixed_clients(tmp_path: Path) -> Iterator[Mixed]:
    listen = ["stomp://127.0.0.1:0", "amqp://127.0.0.1:0"]
    config = config_from_flags("mixed", tmp_path / "data", listen, "127.0.0.1:0", True)
    with BrokerThread(config) as broker:
        assert broker.broker is not None
        assert broker.broker.admin is not None
        collector = Collector()
        stomp: Any = connect(broker.port, collector)
        stomp.subscribe("/queue/stomp.watched", id="s-1", ack="client", receipt="sub")
        collector.wait(lambda: "sub" in collector.receipts, "the SUBSCRIBE receipt")
        amqp = BlockingConnection(
            f"amqp://127.0.0.1:{broker.amqp_port}",
            timeout=TIMEOUT_S,
            reconnect=False,
            container_id=CONTAINER,
        )
        try:
            receiver = amqp.create_receiver(ADDRESS, name="orders-consumer", credit=CREDIT)
            sender = amqp.create_sender(ADDRESS, name="orders-producer")
            for n in range(SENT):
                sender.send(Message(body=f"order {n}"))
            for _ in range(SENT):
                receiver.receive(timeout=TIMEOUT_S)  # received, not settled
            yield Mixed(broker, broker.broker.admin.url)
        finally:
            amqp.close()
            disconnect(stomp, collector)


def amqp_connection(connections: list[dict[str, Any]]) -> dict[str, Any]:
    (found,) = [c for c in connections if c.get("client_id") == CONTAINER]
    return found
