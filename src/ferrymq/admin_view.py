"""``AdminView``: what the admin API reads of a running broker, whichever service is current.

It reads the broker through ``ObservedBroker``, the few parts it needs, so this module and the
composition root (``ferrymq.broker``, which creates the view) do not import each other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ferrymq.admin.broker_connections import BrokerConnectionControl
from ferrymq.admin.operations import BrokerOperations
from ferrymq.admin.source import BrokerServiceSource, ConnectionStatistics
from ferrymq.core.management import ManagementError, Refusal
from ferrymq.core.statistics import DestinationStatistics
from ferrymq.ha.locker import Locker
from ferrymq.ha.replica import MasterConnector
from ferrymq.ha.role import Role
from ferrymq.network import NetworkService
from ferrymq.service.broker import BrokerService
from ferrymq.service.duplex import duplex_bridge_records
from ferrymq.service.management import BrokerManagement


class ObservedConnections(BrokerConnectionControl, Protocol):
    """``ferrymq.connections.service.BrokerConnections``: plain records, and management."""

    def statistics(self) -> list[dict[str, object]]: ...


class ObservedBroker(Protocol):
    """The parts of ``ferrymq.broker.Broker`` the view reads."""

    @property
    def service(self) -> BrokerService: ...

    @property
    def role(self) -> Role: ...

    @property
    def terms(self) -> int: ...

    @property
    def network(self) -> NetworkService: ...

    @property
    def replica(self) -> MasterConnector | None: ...

    @property
    def broker_connections(self) -> ObservedConnections: ...

    @property
    def locker(self) -> Locker | None: ...

    @property
    def failure(self) -> str | None: ...


class AdminView:
    """The admin API's view of a broker: whichever service is current, plus its role."""

    def __init__(self, broker: ObservedBroker) -> None:
        self._broker = broker

    def statistics(self) -> Mapping[str, Any]:
        broker = self._broker
        statistics = dict(BrokerServiceSource(broker.service).statistics())
        statistics["role"] = broker.role.value
        statistics["master_terms"] = broker.terms
        if broker.failure is not None:
            statistics["failure"] = broker.failure
        # Plain records, shaped by the admin package (it may not import the network layer).
        statistics["network_bridges"] = broker.network.statistics() + duplex_bridge_records(
            broker.service.connections.values(), broker.service.region
        )
        statistics["broker_connections"] = broker.broker_connections.statistics()
        if broker.replica is not None:
            statistics["replication"] = {
                "master": broker.replica.remote_uri,
                "attached": broker.replica.statistics.attached,
                "batches": broker.replica.statistics.batches,
                "snapshots": broker.replica.statistics.snapshots,
            }
        replica_link = broker.service.replica
        if replica_link is not None:
            statistics["slave"] = {
                "name": replica_link.name,
                "in_sync": replica_link.live,
                "batches_acknowledged": replica_link.batches_acknowledged,
            }
        if broker.locker is not None:
            status = broker.locker.status()
            statistics["lock"] = {
                "locker": status.locker,
                "resource": status.resource,
                "holder_id": status.holder_id,
                "held": status.held,
                "current_holder": status.current_holder,
                "lease_expires_ms": status.lease_expires_ms,
                "keep_alive_period_ms": status.keep_alive_period_ms,
                "lock_acquire_sleep_interval_ms": status.lock_acquire_sleep_interval_ms,
            }
        return statistics

    def destination_statistics(self) -> Sequence[DestinationStatistics]:
        return BrokerServiceSource(self._broker.service).destination_statistics()

    def operations(self) -> BrokerOperations:
        """The current service's write operations; refused unless this broker serves."""
        self._serving()
        return BrokerManagement(self._broker.service)

    def broker_connection_control(self) -> BrokerConnectionControl:
        """Start and stop broker connections; refused unless this broker serves."""
        self._serving()
        return self._broker.broker_connections

    def _serving(self) -> None:
        broker = self._broker
        if not broker.role.serving:
            role = broker.role.value
            name = broker.service.config.broker_name
            raise ManagementError(
                f"broker {name} is not serving ({role}): send write operations to its master",
                reason=Refusal.NOT_SERVING,
            )

    def connection_statistics(self) -> Sequence[ConnectionStatistics]:
        return BrokerServiceSource(self._broker.service).connection_statistics()
