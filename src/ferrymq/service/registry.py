"""The broker's connections, and what one pass of the service collects from them.

The admin API lists connections from here; the service finds a delivery's connection here.  A
pass (``BrokerService.process``) also gathers two things the connections report as they write:
the sockets written to (flushed once, at the end of the pass, one write per socket) and the
auto-acknowledge deliveries written (acknowledged to the core in one batch).  Producers stalled
by flow control wait here until the pass finds room for them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, Protocol, TypeVar

from ferrymq.core.effects import Delivery
from ferrymq.transport.connection import TransportConnection


class Registered(Protocol):
    """A connection as the registry knows it (``service.connection.BrokerConnection``)."""

    @property
    def connection_id(self) -> str: ...

    def resume(self) -> None: ...


C = TypeVar("C", bound=Registered)


class ConnectionRegistry(Generic[C]):
    """Connections by id, sockets to flush, auto-acks to settle, producers waiting for room."""

    def __init__(self) -> None:
        self.connections: dict[str, C] = {}
        self._unflushed: set[TransportConnection] = set()
        self._auto_acks: list[Delivery] = []
        self._flow_waiters: list[C] = []

    def __len__(self) -> int:
        return len(self.connections)

    def __iter__(self) -> Iterator[C]:
        return iter(list(self.connections.values()))

    def register(self, connection: C) -> None:
        self.connections[connection.connection_id] = connection

    def unregister(self, connection: C) -> None:
        self.connections.pop(connection.connection_id, None)
        self.stop_waiting(connection)

    # -- what a pass collects -----------------------------------------------------------------

    def wrote(self, transport: TransportConnection) -> None:
        """``transport`` was written to: flush it at the end of this pass."""
        self._unflushed.add(transport)

    def flush(self) -> None:
        unflushed, self._unflushed = self._unflushed, set()
        for transport in unflushed:
            transport.flush()

    def auto_acked(self, delivery: Delivery) -> None:
        """An auto-acknowledge delivery whose frame was written."""
        self._auto_acks.append(delivery)

    def take_auto_acks(self) -> list[Delivery]:
        acks, self._auto_acks = self._auto_acks, []
        return acks

    # -- producer flow control ----------------------------------------------------------------

    def wait_for_space(self, connection: C) -> None:
        """A producer is blocked by flow control; the service resumes it when space frees."""
        if connection not in self._flow_waiters:
            self._flow_waiters.append(connection)

    def stop_waiting(self, connection: C) -> None:
        if connection in self._flow_waiters:
            self._flow_waiters.remove(connection)

    @property
    def producers_waiting(self) -> bool:
        return bool(self._flow_waiters)

    def resume_producers(self) -> None:
        waiters, self._flow_waiters = self._flow_waiters, []
        for waiter in waiters:
            waiter.resume()
