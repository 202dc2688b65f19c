"""A connection's local transaction: sends held back and acks held open until COMMIT.

ActiveMQ's STOMP semantics: sends become visible at COMMIT and vanish at ABORT; an ACK inside a
transaction frees the consumer's prefetch slot at once but removes the message only at COMMIT;
ABORT does not redeliver: the acked messages go back to "delivered, awaiting ack" and the client
must ACK them again.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from ferrymq.core.consumer import Consumer
from ferrymq.core.destination import Destination
from ferrymq.core.message import Message


class Settlement(enum.Enum):
    """How a consumer settles a delivery. STOMP has ACK and NACK; AMQP's outcomes are finer
    (ActiveMQ's mapping of them: accepted, released, modified, rejected)."""

    ACCEPT = "accept"
    NACK = "nack"
    """STOMP's NACK: dead-lettered at once (a poison ack), unless the queue's redelivery policy
    says a NACK redelivers."""
    RELEASE = "release"
    """Back to the queue as it was: the delivery does not count as a redelivery (AMQP
    released)."""
    REDELIVER = "redeliver"
    """Back to the queue as a failed delivery: counted, dead-lettered after
    maximumRedeliveries (AMQP modified with delivery-failed)."""
    DEAD_LETTER = "dead-letter"
    """To the dead-letter queue at once, whatever the policy (AMQP rejected, or modified with
    undeliverable-here, as ActiveMQ treats both)."""


@dataclass(slots=True)
class TransactedAck:
    consumer: Consumer
    ack_ids: list[str]
    settlement: Settlement = Settlement.ACCEPT


@dataclass(slots=True)
class Transaction:
    transaction_id: str
    sends: list[tuple[Message, tuple[Destination, ...]]] = field(default_factory=list)
    acks: list[TransactedAck] = field(default_factory=list)
    refused: str | None = None
    """Why a SEND in it was refused (``core.authorization``): its COMMIT fails, so nothing of
    it is stored and the transaction is never half committed."""
