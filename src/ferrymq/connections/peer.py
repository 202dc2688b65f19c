"""``<peer>``: this broker as the store-and-forward queue behind a router's waypoint address.

ActiveMQ Artemis manual, "Peers": for each matching local queue the broker attaches a sender
and a receiver to Apache Qpid Dispatch Router, both carrying the terminus capability
``qd.waypoint``, which replaces the router's own connector and auto-links to the broker. How
the router reads them (Qpid Dispatch Router book, "Brokered Messaging" and "Addresses"; its
``router_core``): a waypoint address has two phases; producers' messages enter it at phase 0
and consumers receive from phase 1. A link whose terminus names ``qd.waypoint`` (ordinal 1)
gets in-phase 1 and out-phase 0, so:

- the broker's **receiver** (source = the address, ``qd.waypoint`` on the source) is a link
  the router sends on: the router routes phase-0 messages, what clients send to the address,
  to it, and the broker stores them in the queue;
- the broker's **sender** (target = the address, ``qd.waypoint`` on the target) is a link the
  router receives on, at phase 1: what the broker sends from the queue goes on to the router's
  consumers of the address.

The phases keep the two directions apart at the router, so the queue's messages do not come
back into the queue: the loop that a sender and a receiver on one destination make against a
broker (the manual warns against pointing a peer at a broker: any message would echo). The
router only reads the first capability of a terminus, so ``qd.waypoint`` is the only one sent.
"""

from __future__ import annotations

import asyncio

from ferrymq.config.broker_connections import (
    AmqpConnectionConfig,
    PeerConfig,
    ReceiverConfig,
    SenderConfig,
)
from ferrymq.connections.api import ConnectionElement, LocalSide, RemoteConnection
from ferrymq.connections.links import WAYPOINT, ReceiverElement, SenderElement, first_error
from ferrymq.connections.matching import QueueSelection

__all__ = ["PeerElement", "link_elements"]


class PeerElement:
    """A waypoint's sender and receiver for each matching queue, run side by side."""

    def __init__(
        self,
        name: str,
        selection: QueueSelection,
        local: LocalSide,
    ) -> None:
        self.name = name
        self.selection = selection
        waypoint = (WAYPOINT,)
        self.sender = SenderElement(name, selection, local, capabilities=waypoint)
        self.receiver = ReceiverElement(name, selection, local, capabilities=waypoint)

    async def run(self, remote: RemoteConnection) -> None:
        await first_error(self._run(remote))

    async def _run(self, remote: RemoteConnection) -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(self.sender.run(remote))
            group.create_task(self.receiver.run(remote))

    def statistics(self) -> dict[str, object]:
        links: dict[str, dict[str, int]] = {}
        for side in (self.sender, self.receiver):
            for queue, counts in side.links.items():
                links.setdefault(queue, {}).update(counts)
        return {
            "type": "peer",
            "name": self.name,
            "match": str(self.selection),
            "messages": self.sender.messages + self.receiver.messages,
            "links": dict(sorted(links.items())),
        }


def _selection(config: SenderConfig | ReceiverConfig | PeerConfig) -> QueueSelection:
    return QueueSelection(address_match=config.address_match, queue_name=config.queue_name)


def link_elements(connection: AmqpConnectionConfig, local: LocalSide) -> list[ConnectionElement]:
    """The senders, receivers and peers of one ``<amqp-connection>``, in file order (its other
    children are other elements' business). A sender skips the queues a receiver of the same
    connection serves, so even a configuration the loader let through cannot loop."""
    receivers = [_selection(e) for e in connection.elements if isinstance(e, ReceiverConfig)]
    elements: list[ConnectionElement] = []
    for index, element in enumerate(connection.elements):
        if not isinstance(element, SenderConfig | ReceiverConfig | PeerConfig):
            continue
        kind = type(element).__name__.removesuffix("Config").lower()
        name = element.name or f"{connection.name}.{kind}.{index}"
        selection = _selection(element)
        if isinstance(element, SenderConfig):
            elements.append(SenderElement(name, selection, local, excluded=receivers))
        elif isinstance(element, ReceiverConfig):
            elements.append(ReceiverElement(name, selection, local))
        else:
            elements.append(PeerElement(name, selection, local))
    return elements
