"""A connection's local transaction: sends held back and acks held open until COMMIT.

ActiveMQ's STOMP semantics: sends become visible at COMMIT and vanish at ABORT; an ACK inside a
transaction frees the consumer's prefetch slot at once but removes the message only at COMMIT;
ABORT does not redeliver: the acked messages go back to "delivered, awaiting ack" and the client
must ACK them again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ferrymq.core.consumer import Consumer
from ferrymq.core.destination import Destination
from ferrymq.core.message import Message


@dataclass(slots=True)
class TransactedAck:
    consumer: Consumer
    ack_ids: list[str]
    nack: bool = False


@dataclass(slots=True)
class Transaction:
    transaction_id: str
    sends: list[tuple[Message, tuple[Destination, ...]]] = field(default_factory=list)
    acks: list[TransactedAck] = field(default_factory=list)
    refused: str | None = None
    """Why a SEND in it was refused (``core.authorization``): its COMMIT fails, so nothing of
    it is stored and the transaction is never half committed."""
