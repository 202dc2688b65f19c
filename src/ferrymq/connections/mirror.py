"""``<mirror>``: the forwarder that drains a mirror's store-and-forward queue to the target.

ActiveMQ Artemis manual, "Broker Connections", "Mirroring". The events themselves are made by
the core, in the batch (and store commit) of what they reproduce (``ferrymq.core.mirror``); they
wait in the durable local queue ``$ACTIVEMQ_ARTEMIS_MIRROR_<connection name>`` for as long as
the target is away. While connected, this element:

- attaches one sender link as Artemis's mirror does (name ``<mirror queue>:<uuid>``, target
  the mirror queue's name, desired capability ``amq.mirror``, link property
  ``x-opt-amq-bkr-id`` = this broker's node id, unsettled sends). A remote that does not offer
  ``amq.mirror``, or whose node id is this broker's own (a mirror to itself), fails the attempt
  (``LinkSetupError``, counted against ``reconnect-attempts``);
- consumes the mirror queue in process, as the broker itself (``LocalSide.consume_raw``: the
  core's deliveries, no ``vm://`` client and no frame per event; cumulative acks, at most
  ``WINDOW`` events in flight), encodes each event once (``mirror_codec``) and acknowledges it
  locally only once the target settled it ``accepted``, which a FerryMQ target does after its
  durable write. A connection lost at any point gives the unacknowledged events back to the
  queue, in order and uncounted: they are sent again, and the target drops the repeats (its
  duplicate detection per origin). A sync mirror's waiting clients are released by those acks;
- never sends the target its own events back: an event whose origin, or whose cause, is the
  target (origin tagging) is acknowledged locally without being sent, whether or not the core
  already knew the target's node id when it queued it.

An event the target rejects (it cannot apply it, and would not later either) is logged and
dropped, so one bad event cannot stop the mirror; ``released`` or ``modified`` (not now) ends
the connection, and the reconnect sends it again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import deque
from collections.abc import Callable

from ferrymq.config.broker_connections import (
    MIRROR_QUEUE_PREFIX,
    AmqpConnectionConfig,
    MirrorConfig,
)
from ferrymq.connections.api import (
    LinkOptions,
    LinkSetupError,
    LocalMessage,
    LocalQueueReader,
    LocalSide,
    RemoteConnection,
    RemoteSender,
    SendOutcome,
)
from ferrymq.connections.links import first_error
from ferrymq.connections.mirror_codec import (
    BROKER_ID,
    MIRROR_CAPABILITY,
    encode_local,
    read_event,
)

log = logging.getLogger(__name__)

__all__ = ["WINDOW", "MirrorElement", "mirror_elements"]

WINDOW = 1000
"""Events in flight to the target at once (the local reader's window): as many as a
target grants credit by default (Artemis's ``amqpCredits``), so the stream never stops to wait for
one batch's settlements before the next is taken."""


_Sent = tuple[LocalMessage, "asyncio.Future[SendOutcome] | None"]
"""An event taken, and the target's settlement of it (None: not sent, it was the target's)."""


class MirrorElement:
    """One `<mirror>` of an `<amqp-connection>` (the events are the core's; this sends them)."""

    def __init__(
        self,
        connection_name: str,
        config: MirrorConfig,
        local: LocalSide,
        *,
        on_peer: Callable[[str], None] | None = None,
        backlog: Callable[[], int | None] | None = None,
    ) -> None:
        """``on_peer`` is told the target's node id once its link is up (the broker passes it
        to the core's tap: ``MirrorTap.learn_peer``); ``backlog`` reads the mirror queue's
        depth (None: unknown), for the statistics."""
        self.name = connection_name
        self.config = config
        self.local = local
        self.queue = MIRROR_QUEUE_PREFIX + connection_name
        self._on_peer = on_peer
        self._backlog = backlog
        self.peer: str | None = None
        """The target's node id, from its link's ``x-opt-amq-bkr-id``."""
        self.forwarded = 0
        self.skipped = 0
        """Events not sent because they came from the target (loop prevention)."""
        self.rejected = 0
        self._oldest_ms: int | None = None
        """When the oldest event taken but not yet settled was queued (for ``lag``)."""
        self._pending: deque[tuple[int, LocalMessage]] = deque()
        self._progress_ms = _now_ms()
        """The last time an event was settled (or the start): with a backlog and nothing
        taken, the oldest waiting event is at most this old."""

    # -- the connection -------------------------------------------------------------------------

    async def run(self, remote: RemoteConnection) -> None:
        link = await self._attach(remote)
        peer = self.peer
        assert peer is not None
        try:
            reader = self.local.consume_raw(self.queue, WINDOW)
        except BaseException:
            with contextlib.suppress(Exception):
                await link.close()
            raise
        try:
            # Every event is forwarded: the events of a composite send, or of a message moved
            # or retried, share its ids; a repeat is the target's to drop (its dedup).
            log.info("mirror %s: forwarding %s to %s (%s)", self.name, self.queue, remote.url, peer)
            await first_error(self._forward_all(reader, link, peer))
        finally:
            if self._pending:
                self._oldest_ms = self._pending[0][0]  # still waiting: the lag keeps growing
            self._pending.clear()
            reader.close()  # what the target did not settle goes back, in order
            with contextlib.suppress(Exception):
                await link.close()

    async def _attach(self, remote: RemoteConnection) -> RemoteSender:
        options = LinkOptions(
            name=f"{self.queue}:{uuid.uuid4()}",
            source=self.queue,
            target=self.queue,
            desired_capabilities=(MIRROR_CAPABILITY,),
            properties={BROKER_ID: self.local.node_id},
        )
        link = await remote.attach_sender(options)
        problem = self._refusal(link)
        if problem is not None:
            with contextlib.suppress(Exception):
                await link.close()
            raise LinkSetupError(f"mirror {self.name} to {remote.url}: {problem}")
        return link

    def _refusal(self, link: RemoteSender) -> str | None:
        if MIRROR_CAPABILITY not in [str(c) for c in link.offered_capabilities]:
            return f"the remote does not offer the {MIRROR_CAPABILITY} capability"
        properties = {str(k): v for k, v in link.remote_properties.items()}
        peer = properties.get(BROKER_ID)
        if not isinstance(peer, str) or not peer:
            return f"the remote did not give its node id ({BROKER_ID})"
        if peer == self.local.node_id:
            return "the remote is this broker (a mirror to itself)"
        if peer != self.peer and self._on_peer is not None:
            self._on_peer(peer)
        self.peer = peer
        return None

    # -- forwarding -----------------------------------------------------------------------------

    async def _forward_all(self, reader: LocalQueueReader, link: RemoteSender, peer: str) -> None:
        """Send events in order, with up to ``WINDOW`` unsettled; ack each once accepted."""
        sent: asyncio.Queue[list[_Sent]] = asyncio.Queue()
        send = link.send
        async with asyncio.TaskGroup() as group:
            group.create_task(self._acknowledge(reader, sent))
            while True:
                batch: list[_Sent] = []
                for message in await reader.take():
                    event = read_event(message.properties)
                    self._taken(message)
                    if event.returns_to(peer):
                        batch.append((message, None))
                    else:
                        batch.append((message, send(encode_local(message, event))))
                sent.put_nowait(batch)

    async def _acknowledge(
        self, reader: LocalQueueReader, sent: asyncio.Queue[list[_Sent]]
    ) -> None:
        """Acknowledge the events locally in the order taken, cumulatively: one ack covers
        every event settled before it, made as soon as the next one is not settled yet, so a
        sync mirror's clients never wait for a later event."""
        unacknowledged: LocalMessage | None = None
        while True:
            if unacknowledged is not None and sent.empty():
                self._ack(reader, unacknowledged)
                unacknowledged = None
            for message, outcome in await sent.get():
                if outcome is None:
                    self.skipped += 1
                else:
                    if not outcome.done() and unacknowledged is not None:
                        self._ack(reader, unacknowledged)
                        unacknowledged = None
                    self._count(message, await outcome)
                self._settled(message)
                unacknowledged = message

    def _ack(self, reader: LocalQueueReader, message: LocalMessage) -> None:
        reader.ack(message.handle)
        self._progress_ms = _now_ms()

    def _count(self, message: LocalMessage, outcome: SendOutcome) -> None:
        if not outcome.accepted and outcome.outcome != "rejected":
            raise ConnectionError(
                f"mirror {self.name}: the target answered {outcome.outcome} "
                f"({outcome.description or 'no reason given'}); sending again later"
            )
        if outcome.accepted:
            self.forwarded += 1
            return
        self.rejected += 1
        log.error(
            "mirror %s: the target rejected event %s (%s); it is dropped",
            self.name,
            message.message_id,
            outcome.description or "no reason given",
        )

    def _taken(self, message: LocalMessage) -> None:
        self._oldest_ms = None
        self._pending.append((message.timestamp or _now_ms(), message))

    def _settled(self, message: LocalMessage) -> None:
        pending = self._pending
        if pending and pending[0][1] is message:
            pending.popleft()
        else:
            for item in pending:
                if item[1] is message:
                    pending.remove(item)
                    break

    # -- what the admin API shows ---------------------------------------------------------------

    def statistics(self) -> dict[str, object]:
        backlog = self._backlog() if self._backlog is not None else None
        oldest = self._pending[0][0] if self._pending else self._oldest_ms
        if oldest is None and backlog:
            oldest = self._progress_ms
        lag = max(_now_ms() - oldest, 0) if oldest is not None else 0
        return {
            "type": "mirror",
            "queue": self.queue,
            "peer": self.peer,
            "sync": self.config.sync,
            "address_filter": str(self.config.address_filter),
            "backlog": backlog,
            "lag_ms": lag,
            "forwarded": self.forwarded,
            "skipped": self.skipped,
            "rejected": self.rejected,
        }


def _now_ms() -> int:
    return round(time.time() * 1000)


def mirror_elements(connection: AmqpConnectionConfig, local: LocalSide) -> list[MirrorElement]:
    """The mirror of ``connection`` (at most one: the configuration says so).

    A ``local`` that also offers ``queue_depth(name)`` and ``learn_mirror_peer(mirror,
    node_id)`` (``connections.local.BrokerLocalSide``) gives the statistics their backlog and
    tells the core's tap the target's node id (so the tap stops queueing the target's own
    events for it; the forwarder skips them either way)."""
    mirror = connection.mirror
    if mirror is None:
        return []
    depth: Callable[[str], int | None] | None = getattr(local, "queue_depth", None)
    learn: Callable[[str, str], None] | None = getattr(local, "learn_mirror_peer", None)
    name, queue = connection.name, connection.mirror_queue
    return [
        MirrorElement(
            name,
            mirror,
            local,
            on_peer=(lambda peer: learn(name, peer)) if learn is not None else None,
            backlog=(lambda: depth(queue)) if depth is not None else None,
        )
    ]
