"""Names and numbers of AMQP 1.0 and of the conventions its brokers share, in one place.

Error conditions (AMQP 1.0, part 2.8.15 and the transaction conditions of part 4.5.8), the
filters ActiveMQ and Qpid JMS agree on (the AMQP filter registry: ``apache.org:selector-filter``
and ``apache.org:no-local-filter``), the terminus capabilities Qpid JMS sends, and the
transaction coordinator's descriptors (part 4).
"""

from __future__ import annotations

from typing import Final

# Error conditions.
NOT_ALLOWED: Final = "amqp:not-allowed"
UNAUTHORIZED: Final = "amqp:unauthorized-access"
INVALID_FIELD: Final = "amqp:invalid-field"
NOT_FOUND: Final = "amqp:not-found"
NOT_IMPLEMENTED: Final = "amqp:not-implemented"
RESOURCE_LIMIT: Final = "amqp:resource-limit-exceeded"
INTERNAL_ERROR: Final = "amqp:internal-error"
PRECONDITION_FAILED: Final = "amqp:precondition-failed"
RESOURCE_LOCKED: Final = "amqp:resource-locked"
INVALID_ID: Final = "amqp:invalid-id"  # proton also uses it for a client id in use
TRANSACTION_UNKNOWN_ID: Final = "amqp:transaction:unknown-id"
TRANSACTION_ROLLBACK: Final = "amqp:transaction:rollback"
CONNECTION_FORCED: Final = "amqp:connection:forced"
MESSAGE_SIZE_EXCEEDED: Final = "amqp:link:message-size-exceeded"
DECODE_ERROR: Final = "amqp:decode-error"
TRANSFER_LIMIT_EXCEEDED: Final = "amqp:link:transfer-limit-exceeded"

# Filters (keys of a source's filter set and their descriptors).
SELECTOR_FILTER: Final = "apache.org:selector-filter:string"
SELECTOR_FILTER_CODE: Final = 0x0000468C00000004
NO_LOCAL_FILTER: Final = "apache.org:no-local-filter:list"
NO_LOCAL_FILTER_CODE: Final = 0x0000468C00000003

# Terminus capabilities (Qpid JMS).
QUEUE: Final = "queue"
TOPIC: Final = "topic"
TEMPORARY_QUEUE: Final = "temporary-queue"
TEMPORARY_TOPIC: Final = "temporary-topic"
SHARED: Final = "shared"
GLOBAL: Final = "global"

# Connection capabilities and properties the broker offers.
ANONYMOUS_RELAY: Final = "ANONYMOUS-RELAY"
DELAYED_DELIVERY: Final = "DELAYED_DELIVERY"
SOLE_CONNECTION_CAPABILITY: Final = "sole-connection-for-container"
CONNECTION_ESTABLISHMENT_FAILED: Final = "amqp:connection-establishment-failed"

# Transactions (AMQP 1.0, part 4).
COORDINATOR: Final = 0x30
DECLARE: Final = 0x31
DISCHARGE: Final = 0x32
DECLARED: Final = 0x33
TRANSACTIONAL_STATE: Final = 0x34
LOCAL_TRANSACTIONS: Final = "amqp:local-transactions"

# Outcomes, as descriptors (inside a transactional-state).
ACCEPTED: Final = 0x24
REJECTED: Final = 0x25
RELEASED: Final = 0x26
MODIFIED: Final = 0x27

EMPTY_FRAME: Final = b"\x00\x00\x00\x08\x02\x00\x00\x00"
"""An AMQP frame with no body: the heart-beat of AMQP 1.0, part 2.4.5."""

_SYMBOLIC = {
    "amqp:coordinator:list": COORDINATOR,
    "amqp:declare:list": DECLARE,
    "amqp:discharge:list": DISCHARGE,
    "amqp:declared:list": DECLARED,
    "amqp:transactional-state:list": TRANSACTIONAL_STATE,
    "amqp:accepted:list": ACCEPTED,
    "amqp:rejected:list": REJECTED,
    "amqp:released:list": RELEASED,
    "amqp:modified:list": MODIFIED,
}


def descriptor_code(descriptor: object) -> int | None:
    """A descriptor as its numeric code: AMQP lets a peer send either the ulong or the symbol
    (proton's own client declares transactions with ``amqp:declare:list``)."""
    if isinstance(descriptor, int):
        return descriptor
    if isinstance(descriptor, str):
        return _SYMBOLIC.get(descriptor)
    return None
