"""What a broker connection's elements (mirror, sender, receiver, peer, federation) are given.

A broker connection (``AmqpBrokerConnection``) owns the reconnect loop. Each time it is
connected it hands every element one ``RemoteConnection`` (the AMQP 1.0 connection to the
other endpoint, with the links the element attaches on it) and runs the elements' ``run``
side by side. An element reaches its own broker the way a network bridge does: as a client,
through ``LocalSide`` (``vm://`` to this broker), never through the broker's memory; only a
mirror's forwarder reads its queue in process (``LocalSide.consume_raw``: the broker's own
consumer, acknowledged on the core's rules, without a frame per event).

The rules (Artemis's, ``AMQPBrokerConnection``):
- an element that cannot set its links up raises ``LinkSetupError``: the connection is torn
  down and the attempt counts against ``reconnect-attempts``;
- any element's ``run`` ending or raising anything else (a link detached by the remote, the
  connection lost) tears the whole connection down and reconnects; the attempt counter starts
  again from 0 after a connection that was fully set up;
- ``run`` is cancelled when the connection stops; an element acknowledges nothing locally that
  the remote end did not settle, so a cancel at any point loses nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from ferrymq.amqp.peer import LinkOptions

__all__ = [
    "ConnectionElement",
    "Incoming",
    "LinkOptions",
    "LinkSetupError",
    "LocalMessage",
    "LocalQueueReader",
    "LocalSide",
    "RemoteConnection",
    "RemoteReceiver",
    "RemoteSender",
    "SendOutcome",
]


class LinkSetupError(Exception):
    """A link could not be attached as the element needs it (refused, a capability missing,
    the remote is this broker): a failed attempt, as Artemis counts one."""


@dataclass(frozen=True, slots=True)
class SendOutcome:
    """How the remote settled a transfer: ``accepted``, or the outcome's name (``rejected``,
    ``released``, ``modified``) and the error's description."""

    accepted: bool
    outcome: str = "accepted"
    description: str = ""


@dataclass(slots=True)
class Incoming:
    """A transfer that arrived on a ``RemoteReceiver``; settle it with ``RemoteReceiver.settle``.

    ``encoded`` is the whole AMQP message as it came (its sections, delivery annotations
    included), ready for ``ferrymq.adapters.amqp``'s or the client's decoders."""

    encoded: bytes
    delivery: int
    """The receiver's handle for ``settle``; 0 when the remote sent it pre-settled."""


class RemoteSender(Protocol):
    offered_capabilities: tuple[str, ...]
    remote_properties: Mapping[str, object]
    address: str | None
    """The remote terminus's address (for a dynamic link, the node the remote made)."""

    def send(self, encoded: bytes) -> asyncio.Future[SendOutcome]:
        """Transfer one encoded message (waits for credit itself); the future completes when
        the remote settles it, or fails with ``ConnectionError`` if the link or connection
        ends first."""
        ...

    async def close(self) -> None: ...


class RemoteReceiver(Protocol):
    offered_capabilities: tuple[str, ...]
    remote_properties: Mapping[str, object]
    address: str | None
    """The remote terminus's address (for a dynamic link, the node the remote made)."""

    async def receive(self) -> Incoming:
        """The next transfer (raises ``ConnectionError`` when the link or connection ends)."""
        ...

    def settle(self, delivery: int, outcome: str = "accepted") -> None:
        """``accepted``, ``released``, ``rejected`` or ``modified`` (delivery-failed)."""
        ...

    def flow(self, credit: int) -> None:
        """Grant this much more credit."""
        ...

    async def drain(self) -> None:
        """Drain the credit and wait for the remote's answer (before a detach: nothing in
        flight is lost or duplicated)."""
        ...

    async def close(self) -> None: ...


class RemoteConnection(Protocol):
    container_id: str
    """This broker's container id on the connection."""
    remote_container_id: str
    remote_properties: Mapping[str, object]
    url: str
    """The host actually connected (one of the alternates), password redacted."""

    async def attach_sender(self, options: LinkOptions) -> RemoteSender:
        """Attach and wait for the remote's attach; ``LinkSetupError`` if it refused (answered
        with a null terminus or detached at once)."""
        ...

    async def attach_receiver(self, options: LinkOptions, *, credit: int) -> RemoteReceiver: ...

    async def closed(self) -> None:
        """Returns when the connection is lost or closed."""
        ...


class LocalMessage(Protocol):
    """A message of a local queue taken in process (``LocalQueueReader``): the broker's own
    values, not copies, so taking one costs nothing per event beyond this record."""

    @property
    def message_id(self) -> str: ...

    @property
    def properties(self) -> Mapping[str, str]:
        """The message's properties (its headers as a STOMP consumer sees them, less those
        that describe the delivery or are a field here). Read only: the broker's message
        holds them."""
        ...

    @property
    def body(self) -> bytes: ...

    @property
    def timestamp(self) -> int:
        """When the broker accepted it, epoch milliseconds (0: unknown)."""
        ...

    @property
    def handle(self) -> str:
        """The reader's name for it in ``LocalQueueReader.ack``."""
        ...

    @property
    def redeliveries(self) -> int:
        """Counted redeliveries (a reader's close gives its messages back uncounted)."""
        ...

    @property
    def original_destination(self) -> str | None:
        """Where a dead-lettered message was first sent, qualified (``queue://X``)."""
        ...

    @property
    def broker_path(self) -> tuple[str, ...]: ...

    @property
    def producer_message_id(self) -> str | None: ...


class LocalQueueReader(Protocol):
    """One local queue consumed in process (``LocalSide.consume_raw``), at most ``window``
    messages taken and not acknowledged at once. A message is given out only once the store
    holds it (as a client's delivery waits for that commit), and leaves the queue only when
    acknowledged: a reader closed, or lost with its broker, gives back what it did not
    acknowledge, in order."""

    async def take(self) -> Sequence[LocalMessage]:
        """The next messages in queue order (one or more); waits for them. ``ConnectionError``
        once the reader is closed or its broker stops serving it."""
        ...

    def ack(self, handle: str) -> None:
        """Acknowledge the message ``handle`` names and every one taken before it."""
        ...

    def close(self) -> None:
        """Give back every message not acknowledged (not counted as a redelivery) and stop."""
        ...


class LocalSide(Protocol):
    """This broker, as the elements see it."""

    broker_id: str
    broker_name: str
    node_id: str
    """The broker's node id (Artemis's server id): stable across restarts of a persistent
    broker; what the mirror's origin tagging and a self-connection check compare."""
    vm_url: str
    """``vm://`` URL of this broker for the client library."""
    user: str | None
    password: str | None

    def queues(self) -> Sequence[str]:
        """The names of the local queues now (not temporary, not internal)."""
        ...

    def address_of(self, queue: str) -> str:
        """The address a local queue is under: the Artemis ``<address name>`` broker.xml
        declared it in, else its own name (senders, receivers and peers match and attach by
        it)."""
        ...

    def consume_raw(self, queue: str, window: int) -> LocalQueueReader:
        """Consume local queue ``queue`` in process, as the broker itself (no ``vm://``
        client, no frames): the mirror's forwarder reads its events so. ``ConnectionError``
        when the broker cannot serve it now."""
        ...


class ConnectionElement(Protocol):
    name: str

    async def run(self, remote: RemoteConnection) -> None:
        """Serve one connection: attach, then work until cancelled or the connection ends."""
        ...

    def statistics(self) -> dict[str, object]: ...
