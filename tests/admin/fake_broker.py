"""The admin server's input in tests: a broker's snapshots as plain records.

This is not a stand-in for a component a user runs; it is what ``AdminSource`` hands the server,
filled with numbers a test can predict.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ferrymq.admin import ConnectionStatistics, SubscriptionStatistics
from ferrymq.core.destination import Destination, DestinationType
from ferrymq.core.statistics import DestinationStatistics


def broker_statistics() -> dict[str, Any]:
    """The shape of ``BrokerService.statistics()``."""
    return {
        "name": "amq-east",
        "id": "host-1-42-18f",
        "version": "0.1.0",
        "uptime_s": 12.5,
        "connections": 1,
        "listeners": [{"name": "stomp", "address": "tcp://127.0.0.1:61613"}],
        "memory": {"used": 2048, "limit": 134217728},
        "store": {
            "used": 4096,
            "limit": 107374182400,
            "commits": 7,
            "operations": 21,
            "last_commit_ms": 1.25,
            "total_commit_ms": 250.0,
        },
        "temp": {"used": 0, "limit": 53687091200},
        "duplicates_suppressed": 3,
    }


def destination(
    type_: DestinationType, name: str, depth: int = 0, **counts: int
) -> DestinationStatistics:
    values = {
        "enqueued": 0,
        "dequeued": 0,
        "dispatched": 0,
        "expired": 0,
        "in_flight": 0,
        "consumers": 0,
        "paged_out": 0,
    }
    values.update(counts)
    return DestinationStatistics(Destination(type_, name), depth, **values)


def destinations() -> list[DestinationStatistics]:
    return [
        destination(
            DestinationType.QUEUE,
            "orders.in",
            5,
            enqueued=9,
            dequeued=4,
            dispatched=6,
            expired=1,
            in_flight=2,
            consumers=1,
            paged_out=3,
        ),
        destination(DestinationType.QUEUE, "audit", 1, enqueued=1),
        destination(DestinationType.TOPIC, "orders.events", 0, enqueued=2, consumers=2),
        destination(DestinationType.TEMP_QUEUE, "ID:host-1-42-18f-1:1", 0),
    ]


def connection() -> ConnectionStatistics:
    return ConnectionStatistics(
        connection_id="ID:host-1-42-18f-1",
        connector="stomp",
        remote_address="127.0.0.1:50123",
        connected=True,
        stomp_version="1.2",
        client_id="shop",
        user="alice",
        connected_at_ms=1_700_000_000_000,
        bytes_in=300,
        bytes_out=900,
        messages_sent=4,
        messages_delivered=6,
        subscriptions=(
            SubscriptionStatistics(
                "sub-0", Destination.queue("orders.in"), "client", 10, 2, "color = 'red'"
            ),
        ),
    )


@dataclass
class FakeBroker:
    broker: dict[str, Any] = field(default_factory=broker_statistics)
    destinations: list[DestinationStatistics] = field(default_factory=destinations)
    connections: list[ConnectionStatistics] = field(default_factory=lambda: [connection()])
    failure: Exception | None = None
    """Raised by ``destination_statistics`` when set: a broken source."""

    def statistics(self) -> dict[str, Any]:
        return self.broker

    def destination_statistics(self) -> list[DestinationStatistics]:
        if self.failure is not None:
            raise self.failure
        return self.destinations

    def connection_statistics(self) -> list[ConnectionStatistics]:
        return self.connections
