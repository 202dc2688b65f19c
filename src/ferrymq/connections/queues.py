"""The local queues a sender, receiver or peer serves, as they come and go.

An element learns them the way a network bridge learns demand: as a client of its own broker
(``vm://``), from an advisory topic. ``ActiveMQ.Advisory.Queue`` carries a ``DestinationInfo``
per queue created (``operationType`` 0) or removed (1), and a new subscriber first hears of
every queue that exists (``ferrymq.core.advisory``), so one subscription gives the whole set
and every later change, in order. Artemis re-attaches a sender's links from its
``afterCreateQueue`` hook; this is that hook, seen from outside the broker.

Which queues are the users' is the broker's call (``LocalSide.queues``: not temporary, not
internal); on top of it the broker connections' own queues (the mirror's
``$ACTIVEMQ_ARTEMIS_MIRROR_<name>``) are never served, whatever ``address-match`` says: a
sender on ``#`` must not drain a mirror's store-and-forward queue.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

from ferrymq.client import Connection
from ferrymq.connections.api import LocalSide
from ferrymq.core.destination import Destination, DestinationError

log = logging.getLogger(__name__)

__all__ = ["QUEUE_ADVISORIES", "QueueEvent", "is_internal", "queue_events"]

QUEUE_ADVISORIES = "/topic/ActiveMQ.Advisory.Queue"
INTERNAL_PREFIXES = ("$ACTIVEMQ_ARTEMIS", "ActiveMQ.Advisory.")
_ADD, _REMOVE = 0, 1
"""``DestinationInfo.operationType`` (ActiveMQ's ``DestinationInfo.ADD_OPERATION_TYPE``...)."""


@dataclass(frozen=True, slots=True)
class QueueEvent:
    queue: str
    exists: bool
    """True: the queue was created (or existed when the watch began); False: removed."""


def is_internal(queue: str) -> bool:
    return queue.startswith(INTERNAL_PREFIXES)


async def queue_events(own: Connection, local: LocalSide) -> AsyncIterator[QueueEvent]:
    """Every user queue of the local broker now, then each creation and removal; ends (raises
    the client's error) when the local connection ends."""
    subscription = await own.subscribe(QUEUE_ADVISORIES, id="broker-connection-queues")
    known: set[str] = set()
    users = set(local.queues())
    async for message in subscription:
        event = _parse(message.body)
        if event is None or is_internal(event.queue):
            continue
        if event.exists and event.queue not in known:
            if event.queue not in users:
                users = set(local.queues())  # a new queue, or one the broker keeps to itself
                if event.queue not in users:
                    continue
            known.add(event.queue)
            yield event
        elif not event.exists and event.queue in known:
            known.discard(event.queue)
            yield event


def _parse(body: bytes) -> QueueEvent | None:
    try:
        info = json.loads(body)["DestinationInfo"]
        destination = Destination.parse_qualified(info["destination"])
        operation = info["operationType"]
    except (ValueError, KeyError, TypeError, DestinationError) as exc:
        log.warning("ignoring a queue advisory that does not read: %s", exc)
        return None
    if not destination.is_queue or operation not in (_ADD, _REMOVE):
        return None
    return QueueEvent(destination.name, operation == _ADD)
