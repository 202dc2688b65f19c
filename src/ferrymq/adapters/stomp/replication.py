"""The STOMP connection of a pure master/slave slave, on the master (seed 002's replication).

The slave CONNECTs with ``ferrymq.replication:true`` and from then on only acknowledges: the
master sends every batch of store operations as a MESSAGE on the reserved subscription
``ferrymq.replication`` (``service.replication.ReplicaLink`` numbers and tracks them), and the
slave ACKs each batch's number once it is durable in its own store.  Anything else is refused.
"""

from __future__ import annotations

from ferrymq.adapters.stomp.base import StompLink
from ferrymq.core.errors import BrokerError
from ferrymq.stomp import constants as h
from ferrymq.stomp.events import (
    Abort,
    Ack,
    Begin,
    Commit,
    Connect,
    Disconnect,
    Nack,
    Send,
    Subscribe,
    Unsubscribe,
)
from ferrymq.util.text import is_decimal


class ReplicationRequests:
    """The master's side of one attached slave's connection."""

    def __init__(self, link: StompLink, name: str) -> None:
        self.link = link
        self.replica = link.service.attach_replica(self.send_batch, name)

    def handle(self, event: object) -> bool:
        match event:
            case Ack(id=str(number)) if is_decimal(number):
                self.replica.acknowledged(int(number))
            case Disconnect():
                self.link.on_disconnect(event)
            case Connect():
                self.link.on_connect(event)
            case (
                Ack() | Nack() | Send() | Subscribe() | Unsubscribe() | Begin() | Commit() | Abort()
            ):
                raise BrokerError("a replication connection only acknowledges batches")
        return False

    def ended(self) -> None:
        self.link.service.detach_replica(self.replica)

    def send_batch(self, number: int, data: bytes, reset: bool) -> None:
        """One batch of store operations for the slave."""
        headers = [
            (h.DESTINATION, "/queue/" + h.REPLICATION_SUBSCRIPTION),
            (h.MESSAGE_ID, str(number)),
            (h.SUBSCRIPTION, h.REPLICATION_SUBSCRIPTION),
            (h.ACK_HEADER, str(number)),
            (h.FERRYMQ_BATCH, str(number)),
        ]
        if reset:
            headers.append((h.FERRYMQ_REPLICATION_RESET, "true"))
        renderer = self.link.renderer
        self.link.connection.send(
            self.link.session.assembled_message((renderer.block(headers),), data)
        )
