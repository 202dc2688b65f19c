"""Removing one message from a queue or a durable subscription by its message id.

A mirror's target applies its peer's acknowledgements this way (Artemis's
``removeWithSuppliedID``): the peer names the message by its id, and the target must not lose
the ack whatever state its copy is in. Waiting in memory: removed now, its store removal in the
caller's batch. In flight to a consumer here: marked dropped (``Entry.dropped``, as a purge
marks it), so an ack by that consumer counts as the ack and a release does not deliver it again.
Paged out: the caller reads the container's rows from the store and hands the one found to
``remove_paged``. Not there at all (the send has not arrived yet): ``NOT_FOUND``, and the
caller retries.
"""

from __future__ import annotations

import enum
import json

from ferrymq.core import codec
from ferrymq.core.entry import Entry
from ferrymq.core.queue import Queue
from ferrymq.store.base import StoredMessage


class AckReason(enum.IntEnum):
    """Why the peer removed the message (Artemis's ``AckReason``; unknown values: NORMAL)."""

    NORMAL = 0
    KILLED = 1
    """Dead-lettered on the peer (too many deliveries)."""
    EXPIRED = 2
    REPLACED = 3
    """A last-value queue replaced it."""

    @classmethod
    def of(cls, value: object) -> AckReason:
        if isinstance(value, int) and value in cls._value2member_map_:
            return cls(value)
        return cls.NORMAL


class Removal(enum.Enum):
    REMOVED = "removed"
    DROPPED = "in flight to a consumer: dropped when it comes back"
    PAGED_OUT = "not in memory; the container has messages in the store only"
    NOT_FOUND = "not here"


KILLED_CAUSE = "dead-lettered on the mirror's source"


def remove_by_id(container: Queue, message_id: str, reason: AckReason) -> Removal:
    """Take the message out of ``container`` as its peer did (``reason``)."""
    for entry in container.pending:
        if entry.message.message_id == message_id:
            container.pending.remove(entry)
            _finish(container, entry, reason)
            return Removal.REMOVED
    for consumer in container.consumers:
        ack_id = consumer.ack_id_for_message(message_id)
        held = consumer.entry(ack_id) if ack_id is not None else None
        if held is not None and held.container is container:
            if not held.dropped:
                container.drop(held)
            return Removal.DROPPED
    return Removal.PAGED_OUT if container.paged_out else Removal.NOT_FOUND


def find_stored(records: list[StoredMessage], message_id: str) -> StoredMessage | None:
    """The row of ``message_id`` among rows read from the container's store: its id as the
    codec writes it is looked for in the bytes first, and only a row that has it is decoded."""
    needle = b'"id":' + json.dumps(message_id, ensure_ascii=False).encode()
    for record in records:
        if needle in record.blob and codec.decode(record.blob).message_id == message_id:
            return record
    return None


def remove_paged(container: Queue, record: StoredMessage, reason: AckReason) -> bool:
    """Remove a row found in the store (``find_stored``); False when a page-in under way
    may bring it into memory (try ``remove_by_id`` again later)."""
    entry = container.take_paged(record)
    if entry is None:
        return False
    _finish(container, entry, reason)
    return True


def _finish(container: Queue, entry: Entry, reason: AckReason) -> None:
    """The entry is out of the waiting list: settle it as the peer did."""
    if reason is AckReason.EXPIRED:
        container.kill(entry, None)
    elif reason is AckReason.KILLED:
        container.kill(entry, KILLED_CAUSE)
    else:
        container.settle(entry, int(reason))
