"""The STOMP connection another broker's network bridge opens (ActiveMQ's demand forwarding).

It is an application client's connection with these differences: a forwarded message keeps the
id it was given where it was first sent (so duplicates are found across the network); a
subscription marked ``ferrymq.network-subscription`` is demand, which carries the consumers'
broker path (read by other bridges from the advisories) and a ``NetworkFilter`` that keeps
messages off routes they took already or that are too long (ActiveMQ's NetworkBridgeFilter and
networkTTL); on a broker with an authorization map, its consumer advisories tell only of
destinations its user may write here, so it never takes a message it could not forward; and
another broker's temporary destinations it names exist here for as long as the bridge's
connection (bridgeTempDestinations: replies cross the network).
"""

from __future__ import annotations

from collections.abc import Sequence

from ferrymq.adapters.stomp.base import StompLink
from ferrymq.adapters.stomp.requests import ClientRequests
from ferrymq.adapters.stomp.subscribe import int_option
from ferrymq.core.authorization import demand_gate
from ferrymq.core.consumer import Consumer, NetworkFilter
from ferrymq.core.destination import Destination, DestinationError, DestinationPattern
from ferrymq.core.errors import BrokerError
from ferrymq.stomp import constants as h
from ferrymq.stomp.events import Send


class BridgeRequests(ClientRequests):
    """An application client's requests, as a network bridge makes them."""

    forwards = True

    def __init__(self, link: StompLink, bridge: str, connect_headers: dict[str, str]) -> None:
        super().__init__(link)
        self.bridge = bridge
        """The network connector's name on the other broker."""
        self.remote_broker_id = connect_headers.get(h.FERRYMQ_BROKER_ID)
        self.remote_broker_name = connect_headers.get(h.FERRYMQ_BROKER_NAME)

    def forwarded_id(self, event: Send) -> str | None:
        return event.headers.get(h.MESSAGE_ID) or None

    def mirror_temporaries(self, destinations: Sequence[Destination]) -> None:
        region = self.region
        for destination in destinations:
            if destination.is_temporary and not region.has_destination(destination):
                region.create_temporary(self.connection_id, destination)

    def make_demand(self, consumer: Consumer, headers: dict[str, str]) -> None:
        consumer.network = True
        path = headers.get(h.FERRYMQ_CONSUMER_PATH, "")
        consumer.broker_path = tuple(p for p in path.split(",") if p)
        ids = headers.get(h.FERRYMQ_NETWORK_CONSUMER_IDS, "")
        consumer.network_consumer_ids = tuple(i for i in ids.split(",") if i)
        target = headers.get(h.FERRYMQ_FORWARD_TO) or self.remote_broker_id
        if target:
            consumer.network_filter = NetworkFilter(
                target,
                int_option(headers, h.FERRYMQ_MESSAGE_TTL, 1),
                _patterns(headers, h.FERRYMQ_NETWORK_EXCLUDED),
                _patterns(headers, h.FERRYMQ_NETWORK_INCLUDED),
            )

    def gate_advisories(self, consumer: Consumer) -> None:
        state = self.region.connections.get(self.connection_id)
        if state is not None and state.guard is not None:
            consumer.network_filter = NetworkFilter(
                self.remote_broker_id or "", -1, gate=demand_gate(state.guard)
            )


def _patterns(headers: dict[str, str], name: str) -> tuple[DestinationPattern, ...]:
    text = headers.get(name, "")
    try:
        return tuple(
            DestinationPattern(Destination.parse_qualified(part.strip()))
            for part in text.split(",")
            if part.strip()
        )
    except DestinationError as exc:
        raise BrokerError(f"header {name}: {exc}") from None
