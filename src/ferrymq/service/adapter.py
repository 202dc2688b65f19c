"""What a wire protocol implements for each connection: the protocol converter interface.

The service knows no wire protocol.  A listener's scheme (``stomp://``, ``tcp://``, later
``amqp://``) names a ``ProtocolAdapter``; for every accepted socket the service makes a
``BrokerConnection`` (its own, protocol-neutral: the ordered outbox, the commit waits, producer
flow control, the idle watchdog, the registry) and asks the adapter for the
``ProtocolConverter`` that turns that connection's bytes into core commands and the core's
deliveries back into bytes (ActiveMQ's ``ProtocolConverter``; its ``TransportConnection`` is the
``BrokerConnection``).  The composition root hands the service its adapters, so adding a protocol
edits neither the service nor the core.
"""

from __future__ import annotations

from typing import Protocol

from ferrymq.core.consumer import Consumer
from ferrymq.core.effects import Delivery
from ferrymq.core.errors import BrokerError
from ferrymq.core.message import Message


class ProtocolConverter(Protocol):
    """One connection's protocol side: bytes to core commands, deliveries to bytes."""

    @property
    def protocol(self) -> str:
        """The wire protocol's name as the admin API shows it (the adapter's: "STOMP", "AMQP")."""

    @property
    def version(self) -> str | None:
        """The protocol version agreed with the client (the admin API shows it), if any yet."""

    def links(self) -> list[dict[str, object]]:
        """The connection's links as plain records for the admin API (AMQP's: name, role,
        address, credit, unsettled); [] for a protocol that has none (STOMP's subscriptions
        are the core's consumers, which the admin API lists already)."""

    def receive(self, data: bytes) -> None:
        """Bytes from the socket: decode what is complete and hand it to ``connection.run``."""

    def handle(self, work: object) -> bool:
        """Carry out one decoded request; True when producer flow control holds it back
        (the connection stops reading and hands it back here once there is room)."""

    def refusal(self, error: BrokerError, work: object | None) -> bytes:
        """The frame that tells the client ``work`` was refused (an ERROR, a rejected
        disposition, a detach): the connection queues it, and closes after it when fatal."""

    def render(self, delivery: Delivery) -> bytes:
        """A delivery from the core as this protocol's message frame."""

    def render_browsed(self, consumer: Consumer, message: Message) -> bytes:
        """One message of a queue browser's snapshot (never acknowledged)."""

    def render_browse_end(self, consumer: Consumer) -> bytes:
        """The end of a browse."""

    def keepalive(self) -> bytes:
        """What the idle watchdog writes when nothing else was written for a while."""

    def session_ended(self) -> None:
        """The connection handles no more requests: release what the protocol attached
        (a replication link, cluster updates)."""
