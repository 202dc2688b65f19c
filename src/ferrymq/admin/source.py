"""What the admin API reads, and how it reads it from a running ``BrokerService``.

The HTTP side sees the broker only through ``AdminSource``: three calls that return snapshots
(plain records), never live objects, so a handler cannot mutate the broker by accident and tests
can serve a fake broker's numbers.  ``BrokerServiceSource`` builds those snapshots from the
service's current attributes; it reads and never writes.  The ``*View`` protocols spell out
exactly which attributes that is, so the admin package needs no import of the service layer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ferrymq.config.model import BrokerConfig
from ferrymq.core.destination import Destination
from ferrymq.core.mirror_statistics import statistics_for
from ferrymq.core.region import RegionBroker
from ferrymq.core.statistics import DestinationStatistics


@dataclass(frozen=True, slots=True)
class SubscriptionStatistics:
    """One STOMP subscription (a consumer) of a connection."""

    subscription_id: str
    destination: Destination
    ack_mode: str
    prefetch: int
    outstanding: int
    """Deliveries counted against the prefetch window (delivered, not yet acknowledged)."""
    selector: str | None


@dataclass(frozen=True, slots=True)
class LinkStatistics:
    """One link of a connection whose protocol has links (AMQP 1.0)."""

    name: str
    role: str
    """The broker's end: ``sender`` (a client's consumer) or ``receiver`` (a producer, or the
    transaction coordinator)."""
    address: str | None
    credit: int
    unsettled: int
    """Deliveries on the link not yet settled."""


@dataclass(frozen=True, slots=True)
class ConnectionStatistics:
    connection_id: str
    connector: str
    """The transport connector's name that accepted the connection."""
    remote_address: str | None
    connected: bool
    """False until the client's CONNECT frame was accepted."""
    stomp_version: str | None
    """The negotiated STOMP version; None before CONNECT."""
    client_id: str | None
    user: str | None
    """The authenticated user (without authentication configured: the login the client gave)."""
    connected_at_ms: int | None
    """Epoch milliseconds of the accepted CONNECT."""
    bytes_in: int
    bytes_out: int
    messages_sent: int
    """Messages this client sent to the broker."""
    messages_delivered: int
    """Messages the broker delivered to this client."""
    subscriptions: tuple[SubscriptionStatistics, ...]
    groups: tuple[str, ...] = ()
    """The authenticated user's groups, sorted (none without authentication)."""
    protocol: str = "STOMP"
    """The wire protocol ("STOMP", "AMQP")."""
    version: str | None = None
    """The protocol version agreed with the client (STOMP's or AMQP's); None before."""
    links: tuple[LinkStatistics, ...] = ()


@runtime_checkable
class AdminSource(Protocol):
    """A broker as the admin API sees it: snapshots only, taken without blocking."""

    def statistics(self) -> Mapping[str, Any]:
        """``BrokerService.statistics()``: includes at least ``name`` and ``id``."""
        ...

    def destination_statistics(self) -> Sequence[DestinationStatistics]: ...

    def connection_statistics(self) -> Sequence[ConnectionStatistics]: ...


# -- the parts of BrokerService that BrokerServiceSource reads -------------------------------


class TransportView(Protocol):
    """``ferrymq.transport.connection.TransportConnection``."""

    @property
    def remote_address(self) -> str | None: ...

    @property
    def bytes_in(self) -> int: ...

    @property
    def bytes_out(self) -> int: ...


class ConverterView(Protocol):
    """``ferrymq.service.adapter.ProtocolConverter``."""

    @property
    def protocol(self) -> str: ...

    def links(self) -> list[dict[str, object]]: ...


class ConnectionView(Protocol):
    """``ferrymq.service.connection.BrokerConnection``."""

    @property
    def converter(self) -> ConverterView: ...

    @property
    def connection_id(self) -> str: ...

    @property
    def connector(self) -> str: ...

    @property
    def version(self) -> str | None: ...

    @property
    def connected(self) -> bool: ...

    @property
    def transport(self) -> TransportView | None: ...


class BrokerServiceView(Protocol):
    """``ferrymq.service.broker.BrokerService``."""

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def broker_id(self) -> str: ...

    @property
    def region(self) -> RegionBroker: ...

    @property
    def connections(self) -> Mapping[str, ConnectionView]: ...

    def statistics(self) -> dict[str, Any]: ...


class BrokerServiceSource:
    """Snapshots of a ``BrokerService``, joined from the service's and the core's records."""

    def __init__(self, service: BrokerServiceView) -> None:
        self._service = service

    def statistics(self) -> Mapping[str, Any]:
        statistics = dict(self._service.statistics())
        statistics.setdefault("name", self._service.config.broker_name)
        statistics.setdefault("id", self._service.broker_id)
        # What the mirrors of other brokers applied here (this broker as their target).
        statistics.setdefault("mirror_target", statistics_for(self._service.region).as_dict())
        return statistics

    def destination_statistics(self) -> Sequence[DestinationStatistics]:
        return self._service.region.destination_statistics()

    def connection_statistics(self) -> Sequence[ConnectionStatistics]:
        states = self._service.region.connections
        result: list[ConnectionStatistics] = []
        for connection in list(self._service.connections.values()):
            transport = connection.transport
            state = states.get(connection.connection_id)
            remote = transport.remote_address if transport is not None else None
            subscriptions: tuple[SubscriptionStatistics, ...] = ()
            if state is not None:
                subscriptions = tuple(
                    SubscriptionStatistics(
                        subscription_id,
                        consumer.destination,
                        consumer.ack_mode.value,
                        consumer.prefetch,
                        consumer.outstanding,
                        consumer.selector.text if consumer.selector is not None else None,
                    )
                    for subscription_id, consumer in state.consumers.items()
                )
            converter = connection.converter
            version = connection.version if connection.connected else None
            result.append(
                ConnectionStatistics(
                    connection_id=connection.connection_id,
                    connector=connection.connector,
                    remote_address=remote or (state.remote_address if state else None),
                    connected=connection.connected,
                    stomp_version=version if converter.protocol == "STOMP" else None,
                    client_id=state.client_id if state else None,
                    user=state.user if state else None,
                    connected_at_ms=state.connected_at if state else None,
                    bytes_in=transport.bytes_in if transport is not None else 0,
                    bytes_out=transport.bytes_out if transport is not None else 0,
                    messages_sent=state.messages_sent if state else 0,
                    messages_delivered=state.messages_delivered if state else 0,
                    subscriptions=subscriptions,
                    groups=tuple(sorted(state.groups)) if state else (),
                    protocol=converter.protocol,
                    version=version,
                    links=tuple(_link(record) for record in converter.links()),
                )
            )
        return result


def _link(record: Mapping[str, object]) -> LinkStatistics:
    credit, unsettled = record.get("credit"), record.get("unsettled")
    address = record.get("address")
    return LinkStatistics(
        name=str(record.get("name")),
        role=str(record.get("role")),
        address=None if address is None else str(address),
        credit=credit if isinstance(credit, int) else 0,
        unsettled=unsettled if isinstance(unsettled, int) else 0,
    )


def as_source(service: AdminSource | BrokerServiceView) -> AdminSource:
    """Use ``service`` directly when it already offers the admin calls, else read its attributes."""
    if isinstance(service, AdminSource):
        return service
    return BrokerServiceSource(service)
