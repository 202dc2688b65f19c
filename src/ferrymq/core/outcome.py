"""What a command of the core decided, returned to its caller.

A protocol adapter branches on this record instead of inspecting the core: whether the command
was refused (and why, and whether the connection must close), and whether its confirmation (a
STOMP RECEIPT, an AMQP disposition) must wait for the store write the command queued. What to
deliver is not here: deliveries of a whole batch leave together, through ``RegionBroker.drain``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ferrymq.core.errors import BrokerError
from ferrymq.core.message import Message


@dataclass(frozen=True, slots=True)
class Outcome:
    needs_commit: bool = False
    """A durable write this command queued (or, for a duplicate, the write of its first copy)
    must complete before the command is confirmed."""
    duplicate: bool = False
    """A send whose producer message id was seen before: not stored again."""
    refused: BrokerError | None = None
    """Why the command was refused; None when it was accepted. Its ``fatal`` says whether the
    connection is closed after the error is reported."""
    affected: int = 0
    """How many messages an operator's command touched (``core.management``: purged, moved)."""

    @property
    def accepted(self) -> bool:
        return self.refused is None


ACCEPTED = Outcome()
ACCEPTED_DURABLY = Outcome(needs_commit=True)
"""Accepted; the confirmation waits for the store (the records are frozen, so shared)."""
DUPLICATE = Outcome(needs_commit=True, duplicate=True)


def refused(refusal: BrokerError, *, needs_commit: bool) -> Outcome:
    return Outcome(needs_commit=needs_commit, refused=refusal)


@dataclass(frozen=True, slots=True)
class QueueBrowse:
    """What a queue browser sees now: the messages held in memory that it selects, in order,
    and where the queue's paged-out messages start in the store (the service reads those)."""

    messages: list[Message]
    container: str
    """The queue's name in the store."""
    cursor: int
    """The store sequence the paged-out messages start from."""
    paged_out: int
    """How many messages exist only in the store (0: ``messages`` is everything)."""
