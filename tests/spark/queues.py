"""What the source's tests do to a broker: fill a destination with numbered messages, and read
how many messages a queue holds."""

from __future__ import annotations

import time

from ferrymq.client.blocking import connect
from ferrymq.core.destination import Destination
from ferrymq.testing import BrokerThread


def send_numbered(
    url: str,
    destination: str,
    count: int,
    *,
    first: int = 0,
    prefix: str = "m",
    pause_s: float = 0.0,
) -> None:
    """Persistent messages ``<prefix><n>`` for n from ``first``, the last one receipted (the
    broker handles a connection's frames in order, so all are stored when it returns)."""
    conn = connect(url)
    try:
        for n in range(first, first + count):
            conn.send(destination, f"{prefix}{n}", persistent=True, receipt=n == first + count - 1)
            if pause_s:
                time.sleep(pause_s)
    finally:
        conn.disconnect()


def queue_depth(broker: BrokerThread, name: str) -> int:
    """Messages on queue ``name``: waiting, paged out or in flight."""

    def read() -> int:
        assert broker.broker is not None
        queue = broker.broker.service.region.queues.get(Destination.queue(name))
        return queue.depth if queue is not None else 0

    return broker.call(read)
