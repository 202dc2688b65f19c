"""Dynamic nodes: the temporary queues and topics a client asks the broker to create.

A receiver link with a dynamic source (a reply queue) or a sender link with a dynamic target
(Qpid JMS's ``createTemporaryQueue``) gets a new temporary destination; the ``attach`` answers
with its address (``temp-queue://...``). It lives as long as the link, as ActiveMQ 5.x's do
(delete-on-close): closing the link, or the connection, deletes it with what it holds.
"""

from __future__ import annotations

from collections.abc import Collection

from ferrymq.adapters.amqp import addressing
from ferrymq.adapters.stomp.dialect import TemporaryNames
from ferrymq.amqp import codes
from ferrymq.core.destination import Destination, DestinationType
from ferrymq.core.region import RegionBroker


class DynamicNodes:
    """One connection's dynamic nodes."""

    def __init__(self, region: RegionBroker, connection_id: str, names: TemporaryNames) -> None:
        self.region = region
        self.connection_id = connection_id
        self.names = names
        self._made = 0

    def create(self, capabilities: Collection[str]) -> tuple[Destination, str]:
        """A new temporary destination (a topic when the capabilities say so) and its address;
        the user needs ADMIN on it (tempDestinationAuthorizationEntry)."""
        self._made += 1
        topic = codes.TEMPORARY_TOPIC in capabilities or codes.TOPIC in capabilities
        kind = DestinationType.TEMP_TOPIC if topic else DestinationType.TEMP_QUEUE
        name, _ = self.names.physical(kind, f"dynamic-{self._made}")
        destination = Destination(kind, name)
        self.region.create_temporary(self.connection_id, destination)
        return destination, addressing.address_for(destination)

    def delete(self, destination: Destination | None) -> None:
        if destination is not None and destination.is_temporary:
            self.region.remove_destination(destination)
