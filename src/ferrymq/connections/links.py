"""``<sender>`` and ``<receiver>``: message bridges between local queues and the remote end.

ActiveMQ Artemis manual, "Senders and Receivers". A sender consumes each matching local queue
and sends every message over an AMQP sender link whose target is the queue's address (on
FerryMQ a queue's address is its name); a receiver attaches a receiver link whose source is
that address and routes what arrives into the local queue. Both reach their own broker as a
client over ``vm://``, as a network bridge does, and learn the queues from
``ActiveMQ.Advisory.Queue`` (``connections.queues``): a sender serves the queues that exist
and those created later (Artemis's ``afterCreateQueue``); a receiver too, since the manual's
rule is only that a receiver needs its local queue to exist before it attaches.

Nothing is acknowledged on either side before the other side has it:

- sender: the local consumer is ``client-individual`` with a bounded prefetch; a message is
  acknowledged locally only once the remote settled it ``accepted``. ``released`` and
  ``modified`` leave it unacknowledged and offer it again after ``RETRY_S``, ahead of every
  message of its queue not yet sent (Artemis returns it to the head of the queue): the queue's
  sending pauses until it is settled otherwise. Messages already in flight when it came back
  may arrive before it. After ``MAX_DELIVERY_ATTEMPTS`` offers (Artemis's default
  ``max-delivery-attempts``) it is NACKed locally, as a ``rejected`` one is at once, and the
  local dead-letter policy decides (ActiveMQ's: a persistent message to the DLQ, a
  non-persistent one dropped). A link or connection lost leaves the unacknowledged messages
  with the local broker, which redelivers them to the next connection's sender; a copy the
  remote may already hold carries the same ``ferrymq.producer-message-id``, which a FerryMQ
  remote drops as a duplicate.
- receiver: a transfer is settled ``accepted`` only after the local broker's receipt (for a
  persistent message: after the store commit), with credit given back as transfers are
  settled, so at most ``RECEIVER_CREDIT`` are in flight. A message the local broker refuses is
  settled ``rejected``. The local connection identifies as a forwarding one (as a network
  bridge's does), so the message keeps its id here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Coroutine, Iterator, Sequence

from ferrymq.client import BrokerErrorFrame, Connection, Message, connect
from ferrymq.connections.api import (
    Incoming,
    LinkOptions,
    LinkSetupError,
    LocalSide,
    RemoteConnection,
    RemoteReceiver,
    RemoteSender,
)
from ferrymq.connections.matching import QueueSelection
from ferrymq.connections.messages import amqp_for_local, local_for_amqp
from ferrymq.connections.queues import queue_events
from ferrymq.stomp import constants as h

log = logging.getLogger(__name__)

__all__ = [
    "RECEIVER_CREDIT",
    "SENDER_PREFETCH",
    "WAYPOINT",
    "ReceiverElement",
    "SenderElement",
    "first_error",
]

SENDER_PREFETCH = 100
"""Local messages a sender holds unsettled per queue (its consumer's prefetch)."""
RECEIVER_CREDIT = 100
"""Link credit a receiver keeps open per queue."""
RETRY_S = 1.0
"""Pause before a sender offers a released or modified message again."""
MAX_DELIVERY_ATTEMPTS = 10
"""Offers of one message a remote may release or modify before it goes to the local
dead-letter policy (Artemis's ``max-delivery-attempts`` default)."""
WAYPOINT = "qd.waypoint"
"""Apache Qpid Dispatch Router's terminus capability for a waypoint link (``<peer>``)."""


class _QueueElement:
    """What senders and receivers share: the local connection, the queue watch, one task per
    served queue (started when the queue appears, cancelled when it goes)."""

    kind = "element"

    def __init__(
        self,
        name: str,
        selection: QueueSelection,
        local: LocalSide,
        *,
        capabilities: tuple[str, ...] = (),
        excluded: Sequence[QueueSelection] = (),
    ) -> None:
        self.name = name
        self.selection = selection
        self.local = local
        self.capabilities = capabilities
        """Terminus capabilities on the remote end's terminus (a peer's ``qd.waypoint``)."""
        self.excluded = tuple(excluded)
        """Queues another element of the same connection serves the other way: serving them
        here too would loop (the manual: "Do not create a sender and a receiver to the same
        destination"); they are skipped with a warning."""
        self.links: dict[str, dict[str, int]] = {}
        self.messages = 0

    async def _connect_local(self, remote: RemoteConnection) -> Connection:
        return await connect(
            self.local.vm_url,
            login=self.local.user,
            passcode=self.local.password,
            headers=self._identity(remote),
        )

    async def run(self, remote: RemoteConnection) -> None:
        own = await self._connect_local(remote)
        try:
            await first_error(self._serve(remote, own))
        finally:
            self.links.clear()
            await own.close()

    def _identity(self, remote: RemoteConnection) -> dict[str, str]:
        return {}

    async def _serve(self, remote: RemoteConnection, own: Connection) -> None:
        tasks: dict[str, asyncio.Task[None]] = {}
        async with asyncio.TaskGroup() as group:
            async for event in queue_events(own, self.local):
                if event.exists and self._serves(event.queue):
                    tasks[event.queue] = group.create_task(
                        self._serve_queue(remote, own, event.queue)
                    )
                elif not event.exists and (task := tasks.pop(event.queue, None)) is not None:
                    task.cancel()
                    self.links.pop(event.queue, None)
            raise ConnectionError(f"{self.label}: the local queue advisories ended")

    def address_of(self, queue: str) -> str:
        """The queue's address (broker.xml's ``<addresses>``; else the queue's own name, as
        for every queue a client creates)."""
        return self.local.address_of(queue)

    def _serves(self, queue: str) -> bool:
        address = self.address_of(queue)
        if not self.selection.selects(queue, address):
            return False
        if any(other.selects(queue, address) for other in self.excluded):
            log.warning(
                "%s: not serving queue %s: a %s of the same broker connection serves it the "
                "other way, which would send its messages round in a loop",
                self.label,
                queue,
                "receiver" if self.kind == "sender" else "sender",
            )
            return False
        return True

    async def _serve_queue(self, remote: RemoteConnection, own: Connection, queue: str) -> None:
        raise NotImplementedError

    def _link_options(self, queue: str, *, sender: bool) -> LinkOptions:
        """Source and target are the queue's address (the manual, "Address Consideration")."""
        caps = self.capabilities
        address = self.address_of(queue)
        return LinkOptions(
            name=f"{self.name}:{queue}:{uuid.uuid4().hex[:12]}",
            source=address,
            target=address,
            target_capabilities=caps if sender else (),
            source_capabilities=() if sender else caps,
        )

    @property
    def label(self) -> str:
        return f"{self.kind} {self.name} ({self.selection})"

    def statistics(self) -> dict[str, object]:
        return {
            "type": self.kind,
            "name": self.name,
            "match": str(self.selection),
            "messages": self.messages,
            "links": {queue: dict(counts) for queue, counts in sorted(self.links.items())},
        }


class SenderElement(_QueueElement):
    """``<sender>``: local queues -> the remote end."""

    kind = "sender"

    async def _serve_queue(self, remote: RemoteConnection, own: Connection, queue: str) -> None:
        # A connection of its own per queue: when the queue is deleted the broker drops its
        # consumer, and an UNSUBSCRIBE then would be an error that closes the connection.
        # Closing this one instead hands back whatever is unacknowledged.
        consumer = await self._connect_local(remote)
        try:
            link = await remote.attach_sender(self._link_options(queue, sender=True))
            try:
                await self._pump(remote, consumer, link, queue)
            finally:
                with contextlib.suppress(Exception):
                    await link.close()
        finally:
            await consumer.close()
        if queue in self.local.queues():
            raise ConnectionError(f"{self.label}: the local subscription to {queue} ended")

    async def _pump(
        self, remote: RemoteConnection, consumer: Connection, link: RemoteSender, queue: str
    ) -> None:
        subscription = await consumer.subscribe(
            f"/queue/{queue}", ack=h.ACK_CLIENT_INDIVIDUAL, prefetch=SENDER_PREFETCH
        )
        # Shown as a link once its subscription is in place (its receipt came), not before.
        counts = self.links.setdefault(queue, {"sent": 0, "released": 0, "rejected": 0})
        address = self.address_of(queue)
        log.info("%s: sending queue %s to %s at %s", self.label, queue, address, remote.url)
        gate = _Gate()
        async with asyncio.TaskGroup() as group:
            async for message in subscription:
                await gate.wait()
                group.create_task(self._forward(link, message, queue, counts, gate))

    async def _forward(
        self,
        link: RemoteSender,
        message: Message,
        queue: str,
        counts: dict[str, int],
        gate: _Gate,
    ) -> None:
        encoded = amqp_for_local(message, self.address_of(queue))
        with gate.holding() as hold:
            for attempt in range(1, MAX_DELIVERY_ATTEMPTS + 1):
                outcome = await link.send(encoded)
                if outcome.accepted:
                    await message.ack()
                    counts["sent"] += 1
                    self.messages += 1
                    return
                if outcome.outcome == "rejected":
                    why = f"rejected: {outcome.description or 'no reason given'}"
                    await self._dead_letter(message, queue, counts, why)
                    return
                counts["released"] += 1
                hold()
                if attempt < MAX_DELIVERY_ATTEMPTS:
                    await asyncio.sleep(RETRY_S)
            why = f"{outcome.outcome} {MAX_DELIVERY_ATTEMPTS} times"
            await self._dead_letter(message, queue, counts, why)

    async def _dead_letter(
        self, message: Message, queue: str, counts: dict[str, int], why: str
    ) -> None:
        log.warning(
            "%s: %s refused message %s (%s); it goes to the local dead-letter policy",
            self.label,
            queue,
            message.message_id,
            why,
        )
        await message.nack()
        counts["rejected"] += 1


class _Gate:
    """One queue's sending, paused while a message the remote released waits to be offered
    again, so that it goes before every message not yet sent."""

    def __init__(self) -> None:
        self._held = 0
        self._open = asyncio.Event()
        self._open.set()

    async def wait(self) -> None:
        await self._open.wait()

    @contextlib.contextmanager
    def holding(self) -> Iterator[Callable[[], None]]:
        """A ``hold()`` that pauses the queue (once) until the block ends."""
        held = False

        def hold() -> None:
            nonlocal held
            if not held:
                held = True
                self._held += 1
                self._open.clear()

        try:
            yield hold
        finally:
            if held:
                self._held -= 1
                if not self._held:
                    self._open.set()


class ReceiverElement(_QueueElement):
    """``<receiver>``: the remote end -> local queues that exist."""

    kind = "receiver"

    def _identity(self, remote: RemoteConnection) -> dict[str, str]:
        # A forwarding connection (network.BridgeRequests) keeps the message id it is given.
        return {
            h.FERRYMQ_NETWORK_BRIDGE: f"broker-connection:{self.name}",
            h.FERRYMQ_BROKER_ID: remote.remote_container_id,
            h.FERRYMQ_BROKER_NAME: remote.remote_container_id,
        }

    async def _serve_queue(self, remote: RemoteConnection, own: Connection, queue: str) -> None:
        options = self._link_options(queue, sender=False)
        link = await remote.attach_receiver(options, credit=RECEIVER_CREDIT)
        counts = self.links.setdefault(queue, {"received": 0, "refused": 0})
        log.info(
            "%s: receiving %s from %s into queue %s",
            self.label,
            self.address_of(queue),
            remote.url,
            queue,
        )
        try:
            async with asyncio.TaskGroup() as group:
                while True:
                    incoming = await link.receive()
                    group.create_task(self._route(link, own, incoming, queue, counts))
        finally:
            with contextlib.suppress(Exception):
                await link.close()

    async def _route(
        self,
        link: RemoteReceiver,
        own: Connection,
        incoming: Incoming,
        queue: str,
        counts: dict[str, int],
    ) -> None:
        outcome = "accepted"
        try:
            body, headers = local_for_amqp(incoming.encoded, round(time.time() * 1000))
            await own.send(f"/queue/{queue}", body, headers=headers, receipt=True)
        except (ValueError, KeyError, BrokerErrorFrame) as exc:
            # The message does not decode, or this broker refuses it (and only it: a fatal
            # error closes the local connection, which ends this element).
            if own.closed:
                raise
            log.warning("%s: message refused by local queue %s: %s", self.label, queue, exc)
            outcome = "rejected"
            counts["refused"] += 1
        else:
            counts["received"] += 1
            self.messages += 1
        if incoming.delivery:
            link.settle(incoming.delivery, outcome)
        link.flow(1)


async def first_error(work: Coroutine[object, object, None]) -> None:
    """Await ``work`` (a coroutine using a task group) and raise the first real error out of
    its exception group: the runtime tells ``LinkSetupError`` (a failed attempt) from any other
    end by the exception's class."""
    try:
        await work
    except BaseExceptionGroup as group:
        errors = _flatten(group)
        setup = [e for e in errors if isinstance(e, LinkSetupError)]
        first = (setup or errors or [group])[0]
        raise first from group


def _flatten(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    found: list[BaseException] = []
    for error in group.exceptions:
        if isinstance(error, BaseExceptionGroup):
            found.extend(_flatten(error))
        elif not isinstance(error, asyncio.CancelledError):
            found.append(error)
    return found
