"""The source side of Artemis's mirror: every event a mirror reproduces, queued in the same batch.

For each configured mirror (a `<mirror>` of an `<amqp-connection>`, given here as plain values:
``MirrorSpec``) the tap puts an event into the durable local queue
``$ACTIVEMQ_ARTEMIS_MIRROR_<name>`` while the batch that caused it is being decided, so one store
commit carries the send (or the ack) and its event: after a crash both are there or neither is
(Artemis's "Idempotent Mirrored ACKs", ARTEMIS-4558). The broker connection's forwarder
(``ferrymq.connections.mirror``) reads that queue as a client and sends each event to the target.

An event is a copy of the message (a send) or a small message (an ack, a queue or address made
or deleted), addressed to the mirror queue; what the forwarder needs travels in properties named
``ferrymq.mirror.*``, which only the forwarder reads (nothing else consumes a mirror queue).

What is never mirrored: the mirror queues themselves, temporary destinations, advisories,
Artemis's internal and management addresses, what the address filter rejects, messages sent to a
topic without a durable subscription, and the dead-letter or expiry copy of a message (the ack's
reason lets the target make its own). Loops are cut by origin tagging: an event whose message came
from the mirror's peer, or that the mirror target applied on the peer's behalf (``applying_for``),
is not queued toward that peer (Artemis's "controller in use").
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from ferrymq.core.context import ACK_NORMAL, CoreContext
from ferrymq.core.destination import Destination
from ferrymq.core.entry import Entry
from ferrymq.core.message import Message, MessageId
from ferrymq.core.mirror_queue_policy import sparing_mirror_queues
from ferrymq.core.queue import Queue
from ferrymq.core.topic import Topic, TopicSubscription
from ferrymq.store.base import DurableSubscriptionRecord

__all__ = [
    "MIRROR_QUEUE_PREFIX",
    "MirrorSpec",
    "MirrorTap",
    "acked_at",
    "applying_for",
    "is_internal",
    "rerouting",
]

MIRROR_QUEUE_PREFIX = "$ACTIVEMQ_ARTEMIS_MIRROR_"
"""As ``config.broker_connections.MIRROR_QUEUE_PREFIX`` (the core does not import config)."""
_INTERNAL_PREFIXES = ("$ACTIVEMQ_ARTEMIS", "activemq.management", "ActiveMQ.Advisory.")

# The properties of an event in a mirror queue (read by ferrymq.connections.mirror_codec).
EVENT = "ferrymq.mirror.event"
DESTINATION = "ferrymq.mirror.dst"
ORIGIN = "ferrymq.mirror.origin"
SKIP = "ferrymq.mirror.skip"
QUEUE = "ferrymq.mirror.queue"
REASON = "ferrymq.mirror.reason"
MESSAGE = "ferrymq.mirror.id"
PERSISTENT = "ferrymq.mirror.persistent"
PRIORITY = "ferrymq.mirror.priority"
EXPIRES = "ferrymq.mirror.expires"
ROUTE = "ferrymq.mirror.route"
ACKED_AT = "ferrymq.mirror.acked-at"

SEND = "send"
POST_ACK = "postAck"
CREATE_QUEUE = "createQueue"
DELETE_QUEUE = "deleteQueue"
ADD_ADDRESS = "addAddress"
DELETE_ADDRESS = "deleteAddress"

_applying: ContextVar[str | None] = ContextVar("ferrymq_mirror_applying", default=None)
_rerouting: ContextVar[str | None] = ContextVar("ferrymq_mirror_rerouting", default=None)
_acked_at: ContextVar[str | None] = ContextVar("ferrymq_mirror_acked_at", default=None)


@contextmanager
def applying_for(node_id: str) -> Iterator[None]:
    """The mirror target applies an event that came from ``node_id``: what it causes is not
    mirrored back to that node (it still reaches every other mirror)."""
    token = _applying.set(node_id)
    try:
        yield
    finally:
        _applying.reset(token)


@contextmanager
def acked_at(node_id: str) -> Iterator[None]:
    """The mirror target applies an ack a consumer made on ``node_id``: passed on along a
    chain, but never to that node (in a ring it would come back to where the message went)."""
    token = _acked_at.set(node_id)
    try:
        yield
    finally:
        _acked_at.reset(token)


@contextmanager
def rerouting(route: str = "") -> Iterator[None]:
    """An operator routes messages again (a move, a dead letter retried): each copy's mirrored
    send gets an id of its own for the target's duplicate detection, since the message keeps
    its id and may come back to a destination it was in before. A mirror target applying such
    a send names its ``route``, which goes on along a chain."""
    token = _rerouting.set(route)
    try:
        yield
    finally:
        _rerouting.reset(token)


def is_internal(name: str) -> bool:
    """Artemis's internal and management addresses, and ActiveMQ's advisories."""
    return name.startswith(_INTERNAL_PREFIXES)


@dataclass(frozen=True, slots=True)
class MirrorSpec:
    """One `<mirror>` as the core needs it (``service.regions`` makes it from the config)."""

    name: str
    """The broker connection's name: the mirror queue is ``MIRROR_QUEUE_PREFIX + name``."""
    includes: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()
    message_acknowledgements: bool = True
    queue_creation: bool = True
    queue_removal: bool = True
    sync: bool = False

    def matches(self, address: str) -> bool:
        """The address filter: prefixes, an exclusion wins (Artemis's MirrorAddressFilter)."""
        if any(address.startswith(prefix) for prefix in self.excludes):
            return False
        return not self.includes or any(address.startswith(p) for p in self.includes)


class _Mirror:
    __slots__ = ("added", "destination", "peer", "spec")

    def __init__(self, spec: MirrorSpec) -> None:
        self.spec = spec
        self.destination = Destination.queue(MIRROR_QUEUE_PREFIX + spec.name)
        self.peer: str | None = None
        """The target's node id, once its link told it (``MirrorTap.learn_peer``)."""
        self.added = 0
        """Events queued since the start (Artemis's ``messagesAdded`` of the mirror queue)."""

    def wants(self, address: str, origin: str | None, skip: str | None) -> bool:
        peer = self.peer
        if peer is not None and peer in (origin, skip):
            return False
        return self.spec.matches(address)


class MirrorTap:
    """Every configured mirror of this broker; dormant (``CoreContext.mirror`` None) without."""

    def __init__(self, context: CoreContext, queue: Callable[[Destination], Queue]) -> None:
        """``queue`` finds or creates a queue (the mirror queues are created by their first
        event, or by the forwarder's subscription)."""
        self._context = context
        self._queue = queue
        context.policies = sparing_mirror_queues(context.policies, MIRROR_QUEUE_PREFIX)
        self._mirrors: list[_Mirror] = []
        self._quiet = 0
        self._sync_pending: dict[int, Destination] = {}
        """Sync events not yet acknowledged by their forwarder (their mirror queue), by
        sequence, in the order they were queued."""
        self._sync_new = 0
        self.on_sync_settled: Callable[[int], None] | None = None
        """Told, when a sync event is acknowledged, the lowest sequence still waiting (or one
        past the last sequence handed out): the service's sync barrier (``service.commit``)."""

    def configure(self, specs: Sequence[MirrorSpec]) -> None:
        self._mirrors = [_Mirror(spec) for spec in specs]
        self._context.mirror = self if self._mirrors else None
        kept = {m.destination for m in self._mirrors}
        for gone in {d for d in self._sync_pending.values() if d not in kept}:
            self.purged(gone, ())  # a mirror no longer configured: nobody waits for it

    @property
    def mirror_queues(self) -> tuple[Destination, ...]:
        return tuple(m.destination for m in self._mirrors)

    def learn_peer(self, name: str, node_id: str) -> None:
        """The mirror ``name`` reaches ``node_id``: nothing of that node's goes back to it."""
        for mirror in self._mirrors:
            if mirror.spec.name == name:
                mirror.peer = node_id

    def statistics(self) -> dict[str, int]:
        """Events queued per mirror since the start."""
        return {m.spec.name: m.added for m in self._mirrors}

    @contextmanager
    def unmirrored(self) -> Iterator[None]:
        """Nothing in this block is mirrored (recovery; a dead-letter or expiry copy)."""
        self._quiet += 1
        try:
            yield
        finally:
            self._quiet -= 1

    # -- the hooks ----------------------------------------------------------------------------

    def routed(self, message: Message, container: object) -> None:
        destination = message.destination
        if self._quiet or not _mirrored(destination):
            return
        if isinstance(container, Topic) and not any(s.durable for s in container.subscriptions):
            return  # nothing durable holds it: Artemis mirrors no send to temporary queues
        origin = message.origin_node
        skip = _applying.get()
        route = _rerouting.get()
        if route == "":
            route = self._context.new_message_id()
        for mirror in self._mirrors:
            if mirror.wants(destination.name, origin, skip):
                event = _send_event(message, mirror.destination, origin, skip)
                if route is not None:
                    event.properties[ROUTE] = route
                self._put(mirror, event)

    def removed(self, entry: Entry, reason: int) -> None:
        container = entry.container
        destination = container.destination
        if destination.name.startswith(MIRROR_QUEUE_PREFIX):
            self._forwarded(entry.seq)
            return
        if self._quiet or not _mirrored(
            destination, durable=isinstance(container, TopicSubscription)
        ):
            return
        queue_name = _queue_name(container)
        if queue_name is None:
            return
        message = entry.message
        origin = message.origin_node
        skip = _applying.get()
        if skip is None and entry.dropped:
            skip = origin  # the origin's ack dropped it while in flight here (mirror target)
        made_at = _acked_at.get()
        properties = {QUEUE: queue_name, MESSAGE: message.message_id}
        if reason:
            properties[REASON] = str(reason)
        if made_at is not None:
            properties[ACKED_AT] = made_at
        for mirror in self._mirrors:
            # An ack goes to the origin too (it holds the message); only not back to the node
            # that made it here, nor to the node where its consumer acked.
            if (
                mirror.spec.message_acknowledgements
                and mirror.wants(destination.name, None, skip)
                and (made_at is None or made_at != mirror.peer)
            ):
                self._control(mirror, POST_ACK, destination, origin, skip, dict(properties), b"")

    def created(self, destination: Destination) -> None:
        if not _mirrored(destination) or self._quiet:
            return
        kind = CREATE_QUEUE if destination.is_queue else ADD_ADDRESS
        routing = "ANYCAST" if destination.is_queue else "MULTICAST"
        body = _json(address=destination.name, name=destination.name, routing=routing)
        properties = {QUEUE: destination.name} if destination.is_queue else {}
        self._lifecycle(True, kind, destination, properties, body)

    def deleted(self, destination: Destination) -> None:
        if not _mirrored(destination) or self._quiet:
            return
        kind = DELETE_QUEUE if destination.is_queue else DELETE_ADDRESS
        properties = {QUEUE: destination.name} if destination.is_queue else {}
        self._lifecycle(False, kind, destination, properties, destination.name.encode())

    def subscription_created(self, record: DurableSubscriptionRecord) -> None:
        topic = Destination.parse_qualified(record.destination)
        if not _mirrored(topic, durable=True) or self._quiet:
            return
        name = f"{record.client_id}.{record.subscription_name}"
        extra: dict[str, object] = {
            "client-id": record.client_id,
            "subscription-name": record.subscription_name,
            "no-local": record.no_local,
        }
        if record.selector:
            extra["filter-string"] = record.selector
        body = _json(address=topic.name, name=name, routing="MULTICAST", **extra)
        self._lifecycle(True, CREATE_QUEUE, topic, {QUEUE: name}, body)

    def subscription_removed(self, record: DurableSubscriptionRecord) -> None:
        topic = Destination.parse_qualified(record.destination)
        if not _mirrored(topic, durable=True) or self._quiet:
            return
        name = f"{record.client_id}.{record.subscription_name}"
        self._lifecycle(False, DELETE_QUEUE, topic, {QUEUE: name}, name.encode())

    # -- sync=true ------------------------------------------------------------------------------

    def take_sync(self) -> int:
        """The newest sync event queued since the last call (0: none): a confirmation asked for
        now waits until every sync event up to it is acknowledged by its forwarder."""
        newest, self._sync_new = self._sync_new, 0
        return newest if newest and self.sync_low_water <= newest else 0

    @property
    def sync_low_water(self) -> int:
        """The lowest sync event still waiting, or one past the last sequence handed out."""
        return next(iter(self._sync_pending), self._context.seq + 1)

    def _forwarded(self, seq: int) -> None:
        if seq in self._sync_pending:
            del self._sync_pending[seq]
            if self.on_sync_settled is not None:
                self.on_sync_settled(self.sync_low_water)

    def purged(self, destination: Destination, entries: Sequence[Entry]) -> None:
        """The operator emptied (or removed) ``destination``; ``entries`` are the waiting
        messages the purge took. A mirror queue's sync events will never be forwarded: nobody
        waits for them any more. Another queue's purge is mirrored as an ack of each message
        (as Artemis mirrors it); those in flight are acked by their consumer later."""
        if destination.name.startswith(MIRROR_QUEUE_PREFIX):
            pending = self._sync_pending
            gone = [seq for seq, queue in pending.items() if queue == destination]
            for seq in gone:
                del pending[seq]
            if gone and self.on_sync_settled is not None:
                self.on_sync_settled(self.sync_low_water)
            return
        for entry in entries:
            self.removed(entry, ACK_NORMAL)

    # -- making events --------------------------------------------------------------------------

    def _lifecycle(
        self,
        creating: bool,
        kind: str,
        destination: Destination,
        properties: dict[str, str],
        body: bytes,
    ) -> None:
        skip = _applying.get()
        for mirror in self._mirrors:
            spec = mirror.spec
            wanted = spec.queue_creation if creating else spec.queue_removal
            if wanted and mirror.wants(destination.name, None, skip):
                self._control(mirror, kind, destination, None, skip, dict(properties), body)

    def _control(
        self,
        mirror: _Mirror,
        kind: str,
        destination: Destination,
        origin: str | None,
        skip: str | None,
        properties: dict[str, str],
        body: bytes,
    ) -> None:
        properties[EVENT] = kind
        properties[DESTINATION] = destination.qualified
        _tag(properties, origin, skip)
        event = Message(
            self._context.new_message_id(),
            mirror.destination,
            body,
            properties,
            persistent=True,
            timestamp=self._context.now_ms,
        )
        self._put(mirror, event)

    def _put(self, mirror: _Mirror, event: Message) -> None:
        context = self._context
        queue = self._queue(mirror.destination)
        seq = context.next_seq()
        mirror.added += 1
        # What a mirror target applies makes nobody wait: only a client's operation does (and
        # a dual mirror's target must not wait on its way back to the node it serves).
        if mirror.spec.sync and _applying.get() is None:
            self._sync_pending[seq] = mirror.destination
            self._sync_new = seq
        queue.offer(event, seq)


def _mirrored(destination: Destination, *, durable: bool = False) -> bool:
    """Whether anything of ``destination`` is mirrored; a ``durable`` subscription's topic may
    be a wildcard (the target's subscription then collects what the mirrored sends bring)."""
    return not (
        destination.is_temporary
        or destination.is_advisory
        or (destination.is_wildcard and not durable)
        or is_internal(destination.name)
    )


def _queue_name(container: object) -> str | None:
    """The Artemis queue an ack names: the queue's own name, or ``<clientId>.<name>`` for a
    durable subscription (a plain subscription is a temporary queue: not mirrored)."""
    if isinstance(container, TopicSubscription):
        record = container.record
        return None if record is None else f"{record.client_id}.{record.subscription_name}"
    if isinstance(container, Queue):
        return container.destination.name
    return None


def _send_event(
    message: Message, mirror_queue: Destination, origin: str | None, skip: str | None
) -> Message:
    properties = dict(message.properties)
    properties[EVENT] = SEND
    properties[DESTINATION] = message.destination.qualified
    properties[PERSISTENT] = "true" if message.persistent else "false"
    properties[PRIORITY] = str(message.priority)
    if message.expires:
        properties[EXPIRES] = str(message.expires)
    _tag(properties, origin, skip)
    # Persistent, default priority, never expiring: the mirror queue keeps every event, in
    # order (a priority would let an ack overtake its send; Artemis's ARTEMIS-5090).
    return message.copy(
        message_id=MessageId(message.message_id),
        destination=mirror_queue,
        properties=properties,
        persistent=True,
        priority=4,
        expires=0,
    )


def _tag(properties: dict[str, str], origin: str | None, skip: str | None) -> None:
    if origin is not None:
        properties[ORIGIN] = origin
    if skip is not None:
        properties[SKIP] = skip


def _json(*, address: str, name: str, routing: str, **extra: object) -> bytes:
    """Artemis's ``QueueConfiguration``/``AddressInfo`` JSON, the fields a target reads."""
    document: dict[str, object] = {
        "address": address,
        "name": name,
        "routing-type": routing,
        "durable": True,
    }
    document.update(extra)
    return json.dumps(document, separators=(",", ":")).encode()
