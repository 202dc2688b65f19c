"""``AdminView``: what the admin API reads of a running broker, whichever service is current.

It reads the broker through ``ObservedBroker``, the few parts it needs, so this module and the
composition root (``ferrymq.broker``, which creates the view) do not import each other.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ferrymq.admin.source import BrokerServiceSource, ConnectionStatistics
from ferrymq.core.statistics import DestinationStatistics
from ferrymq.ha.locker import Locker
from ferrymq.ha.replica import MasterConnector
from ferrymq.network import NetworkService
from ferrymq.service.broker import BrokerService


class ObservedBroker(Protocol):
    """The parts of ``ferrymq.broker.Broker`` the view reads."""

    @property
    def service(self) -> BrokerService: ...

    @property
    def role(self) -> enum.Enum: ...

    @property
    def terms(self) -> int: ...

    @property
    def network(self) -> NetworkService: ...

    @property
    def replica(self) -> MasterConnector | None: ...

    @property
    def locker(self) -> Locker | None: ...


class AdminView:
    """The admin API's view of a broker: whichever service is current, plus its role."""

    def __init__(self, broker: ObservedBroker) -> None:
        self._broker = broker

    def statistics(self) -> Mapping[str, Any]:
        broker = self._broker
        statistics = dict(BrokerServiceSource(broker.service).statistics())
        statistics["role"] = broker.role.value
        statistics["master_terms"] = broker.terms
        # Plain records, shaped by the admin package (it may not import the network layer).
        statistics["network_bridges"] = broker.network.statistics()
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

    def connection_statistics(self) -> Sequence[ConnectionStatistics]:
        return BrokerServiceSource(self._broker.service).connection_statistics()
