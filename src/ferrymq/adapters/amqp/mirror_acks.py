"""A peer's acks (``postAck``) on a mirror target, retried until their message is here.

The message an ack names is usually waiting in its queue: it is removed in the batch of the
transfer, which is accepted after the group commit. When a consumer of this broker holds it,
it is marked dropped instead (``core.removal``). When it is not in memory, the transfer stays
unsettled and the ack is tried again every ``RETRY_DELAY_S`` (Artemis's
``mirrorAckManagerRetryDelay``, 100 ms), up to ``ATTEMPTS`` times; each try that finds the
queue with messages in the store only reads the store for it, page by page. Then the ack is
accepted, applied or not (given up silently, as Artemis does unless asked to warn, and counted
in the link statistics ``acks_given_up``). Nothing is written while the ack waits: if this
broker stops first, the peer, which never saw it settled, sends it again.

Each retry runs as a task of the broker service (``BrokerService.spawn``, which cancels and
awaits it at stop); it ends early when its link or its connection has gone.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Protocol

import proton

from ferrymq.adapters.amqp.base import AmqpSide
from ferrymq.adapters.amqp.work import Transfer
from ferrymq.core import mirror_apply
from ferrymq.core.destination import Destination
from ferrymq.core.mirror import applying_for
from ferrymq.core.queue import PAGE_SIZE, Queue
from ferrymq.core.removal import AckReason, Removal, find_stored, remove_by_id, remove_paged
from ferrymq.store.base import StoredMessage

log = logging.getLogger(__name__)

RETRY_DELAY_S = 0.1
ATTEMPTS = 7
"""Artemis tries 5 times in memory, then twice in the paged store; here every try looks in both."""
_SETTLED = (Removal.REMOVED, Removal.DROPPED)
"""What ends an ack's tries early: the message taken care of."""
LOOKUP_PAGES = 50
"""Pages of the store read per try, at most (``PAGE_SIZE`` messages each)."""


class Counters(Protocol):
    acks_retried: int
    acks_given_up: int


class MirrorLinkState(Protocol):
    @property
    def peer(self) -> str:
        """The node at the other end: what the ack causes is not mirrored back to it."""

    @property
    def closed(self) -> bool: ...


@dataclass(slots=True)
class PostAck:
    state: MirrorLinkState
    work: Transfer
    address: Destination | None
    queue_name: str
    message_id: str
    reason: AckReason


class MirrorAcks:
    def __init__(self, converter: AmqpSide, counters: Counters) -> None:
        self.converter = converter
        self.region = converter.region
        self.counters = counters

    def apply(self, ack: PostAck) -> bool:
        """Apply now if the message is in memory (True: accept after the commit); else start
        the retries and leave the transfer unsettled (False)."""
        result = self._try(ack)
        if result in _SETTLED:
            return True
        self.counters.acks_retried += 1
        # A message in the store (a restarted broker pages its queues in lazily) is looked up
        # at once: waiting a retry delay for it would hold every such ack (and, with a sync
        # mirror, the client behind it) 100 ms.
        first = 0.0 if result is Removal.PAGED_OUT else RETRY_DELAY_S
        self.converter.service.spawn(self._retry(ack, first))
        return False

    def _try(self, ack: PostAck) -> Removal:
        """One try in memory (inside ``applying_for``). A queue not here (yet) is waited for
        like a message: its create event or its first send may follow."""
        container = self._container(ack)
        if container is None:
            return Removal.NOT_FOUND
        with applying_for(ack.state.peer):
            return remove_by_id(container, ack.message_id, ack.reason)

    def _container(self, ack: PostAck) -> Queue | None:
        """The queue or durable subscription named (None: not here)."""
        return mirror_apply.container_named(self.region, ack.address, ack.queue_name)

    async def _retry(self, ack: PostAck, first_delay_s: float) -> None:
        delay_s = first_delay_s
        for _ in range(ATTEMPTS):
            await asyncio.sleep(delay_s)
            delay_s = RETRY_DELAY_S
            if self._gone(ack):
                return
            service = self.converter.service
            service.tick_clock()
            result = self._try(ack)
            if result is Removal.PAGED_OUT:
                result = await self._from_store(ack)
                if self._gone(ack):
                    return
            if result in _SETTLED:
                self._settle(ack)
                return
        self.counters.acks_given_up += 1
        log.debug("mirror: ack of %s on %s given up", ack.message_id, ack.queue_name)
        self._settle(ack)

    async def _from_store(self, ack: PostAck) -> Removal:
        """Look for the message among the queue's rows in the store; remove it if found."""
        container = self._container(ack)
        if container is None:
            return Removal.NOT_FOUND
        record = await self._lookup(container, ack.message_id)
        if record is None or self._container(ack) is not container or self._gone(ack):
            return Removal.NOT_FOUND  # not there, or its queue went (or was made anew) meanwhile
        self.converter.service.tick_clock()
        with applying_for(ack.state.peer):
            removed = remove_paged(container, record, ack.reason)
        return Removal.REMOVED if removed else Removal.PAGED_OUT

    async def _lookup(self, container: Queue, message_id: str) -> StoredMessage | None:
        store = self.converter.service.store
        cursor = container.cursor
        for _ in range(LOOKUP_PAGES):
            records = await store.load(container.key, cursor, PAGE_SIZE)
            found = find_stored(records, message_id)
            if found is not None or len(records) < PAGE_SIZE:
                return found
            cursor = records[-1].seq + 1
        return None

    def _gone(self, ack: PostAck) -> bool:
        return ack.state.closed or not self.converter.connection.handling

    def _settle(self, ack: PostAck) -> None:
        """Accept the transfer once what the last try decided is durable."""
        delivery = ack.work.delivery
        if not delivery.settled:
            delivery.update(proton.Delivery.ACCEPTED)
        delivery.settle()
        self.converter.flush(needs_commit=True)
        self.converter.service.process()
