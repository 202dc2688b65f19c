"""``BrokerServiceSource`` over a real ``RegionBroker``.

The service-layer records below (connection, transport, service) carry only the attributes the
admin reads from ``BrokerConnection``, ``TransportConnection`` and ``BrokerService``; the core's
connection and consumer state is real, driven through ``RegionBroker``'s own methods.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ferrymq.admin import AdminServer, BrokerServiceSource
from ferrymq.admin.source import as_source
from ferrymq.config.model import BrokerConfig
from ferrymq.core.consumer import AckMode, Consumer
from ferrymq.core.destination import Destination
from ferrymq.core.message import Message
from ferrymq.core.region import RegionBroker
from ferrymq.core.selector import parse_selector
from ferrymq.service.policies import PolicyResolver
from tests.admin.fake_broker import FakeBroker
from tests.admin.wire import close, open_connection, read_response, request


@dataclass
class TransportRecord:
    remote_address: str | None
    bytes_in: int
    bytes_out: int


@dataclass
class StompConverterRecord:
    protocol: str = "STOMP"

    def links(self) -> list[dict[str, object]]:
        return []


@dataclass
class StompConnectionRecord:
    connection_id: str
    connector: str
    version: str
    connected: bool
    transport: TransportRecord | None
    converter: StompConverterRecord = field(default_factory=StompConverterRecord)


@dataclass
class ServiceRecord:
    region: RegionBroker
    config: BrokerConfig = field(default_factory=lambda: BrokerConfig(broker_name="amq-west"))
    broker_id: str = "broker-1"
    connections: dict[str, StompConnectionRecord] = field(default_factory=dict)

    def statistics(self) -> dict[str, Any]:
        return {"uptime_s": 1.0, "connections": len(self.connections)}


def service_with_a_consumer() -> ServiceRecord:
    region = RegionBroker("broker-1", "amq-west", policies=PolicyResolver(BrokerConfig()))
    region.begin_batch(1_700_000_000_000)
    connected = region.add_connection("c1", "shop", user="alice", remote_address="10.0.0.9:4000")
    assert connected.accepted
    consumer = Consumer(
        "c1",
        "sub-0",
        Destination.queue("orders"),
        ack_mode=AckMode.CLIENT,
        prefetch=10,
        selector=parse_selector("color = 'red'"),
    )
    assert region.subscribe(consumer).accepted
    for color in ("red", "blue"):
        message = Message(
            region.new_message_id(), Destination.queue("orders"), b"x", {"color": color}
        )
        assert region.send("c1", message).accepted
    region.drain()
    service = ServiceRecord(region)
    service.connections["c1"] = StompConnectionRecord(
        "c1", "stomp", "1.2", True, TransportRecord("127.0.0.1:4000", 120, 480)
    )
    service.connections["c2"] = StompConnectionRecord(
        "c2", "stomp", "1.0", False, TransportRecord("127.0.0.1:4001", 7, 0)
    )
    return service


def test_connections_join_the_service_and_core_records() -> None:
    source = BrokerServiceSource(service_with_a_consumer())
    connected, pending = sorted(source.connection_statistics(), key=lambda c: c.connection_id)
    assert connected.client_id == "shop"
    assert connected.user == "alice"
    assert connected.remote_address == "127.0.0.1:4000"
    assert connected.connector == "stomp"
    assert (connected.connected, connected.stomp_version) == (True, "1.2")
    assert connected.connected_at_ms == 1_700_000_000_000
    assert (connected.bytes_in, connected.bytes_out) == (120, 480)
    assert (connected.messages_sent, connected.messages_delivered) == (2, 1)
    (subscription,) = connected.subscriptions
    assert subscription.subscription_id == "sub-0"
    assert subscription.destination == Destination.queue("orders")
    assert (subscription.ack_mode, subscription.prefetch) == ("client", 10)
    assert subscription.outstanding == 1
    assert subscription.selector == "color = 'red'"
    # Accepted by the transport, no CONNECT yet: the core knows nothing of it.
    assert (pending.connected, pending.stomp_version, pending.client_id) == (False, None, None)
    assert (pending.bytes_in, pending.subscriptions, pending.connected_at_ms) == (7, (), None)


def test_broker_statistics_always_name_the_broker() -> None:
    source = BrokerServiceSource(service_with_a_consumer())
    statistics = source.statistics()
    assert (statistics["name"], statistics["id"]) == ("amq-west", "broker-1")
    assert statistics["connections"] == 2


def test_destinations_come_from_the_region() -> None:
    source = BrokerServiceSource(service_with_a_consumer())
    stats = {d.destination: d for d in source.destination_statistics()}
    orders = stats[Destination.queue("orders")]
    assert (orders.enqueued, orders.depth, orders.in_flight, orders.consumers) == (2, 2, 1, 1)


def test_a_source_with_the_admin_calls_is_used_as_it_is() -> None:
    broker = FakeBroker()
    assert as_source(broker) is broker
    assert isinstance(as_source(service_with_a_consumer()), BrokerServiceSource)


async def test_the_server_reads_a_service_through_the_adapter() -> None:
    async with AdminServer(service_with_a_consumer(), port=0) as server:
        reader, writer = await open_connection(server.port)
        writer.write(request("GET", "/api/v1/connections?") + request("GET", "/api/v1/broker"))
        connections = (await read_response(reader)).json()["connections"]
        broker = (await read_response(reader)).json()
        await close(writer)
    assert [c["id"] for c in connections] == ["c1", "c2"]
    assert connections[0]["subscriptions"][0]["destination"] == {"type": "queue", "name": "orders"}
    assert broker["name"] == "amq-west"
