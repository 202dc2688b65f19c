"""ActiveMQ 5.x's AMQP addressing: which destination an AMQP address names.

An address is ``queue://X``, ``topic://X``, ``temp-queue://X`` or ``temp-topic://X`` (ActiveMQ's
qualified names, ``Destination.qualified``), or a plain name.  A plain name is a queue, as in
ActiveMQ 5.x, unless the terminus capabilities that Qpid JMS sends say otherwise (``topic``,
``temporary-queue``, ``temporary-topic``); a prefix wins over a capability.  Temporary
destinations are addressed by their broker-wide name (the address of the dynamic node the broker
created), so, unlike STOMP's ``/temp-queue/N``, an AMQP address means the same on every
connection and no per-connection table is needed.

One destination must be the same whichever protocol reaches it, so two spellings are refused
instead of being taken literally: a plain name starting with ``/`` (STOMP's ``/queue/X``, which
ActiveMQ would turn into a second queue literally called ``/queue/X``) and a comma (STOMP's
composite separator, so STOMP could never reach a queue named ``a,b``).  Wildcards (``*``,
``>``) pass, as over STOMP: consumers subscribe with them, and the core decides what a send to a
pattern means.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from urllib.parse import parse_qsl

from ferrymq.core.destination import Destination, DestinationError, DestinationType
from ferrymq.core.errors import BrokerError

# Terminus capabilities (Qpid JMS's AmqpDestinationHelper).
QUEUE_CAPABILITY = "queue"
TOPIC_CAPABILITY = "topic"
TEMPORARY_QUEUE_CAPABILITY = "temporary-queue"
TEMPORARY_TOPIC_CAPABILITY = "temporary-topic"

# Message annotations that say what kind of destination ``to`` and ``reply-to`` name.
JMS_DEST = "x-opt-jms-dest"
JMS_REPLY_TO = "x-opt-jms-reply-to"

# Their byte values (Qpid JMS's AmqpDestinationHelper, ActiveMQ's AmqpMessageSupport).
QUEUE_CODE = 0
TOPIC_CODE = 1
TEMP_QUEUE_CODE = 2
TEMP_TOPIC_CODE = 3

_CODES: Mapping[DestinationType, int] = {
    DestinationType.QUEUE: QUEUE_CODE,
    DestinationType.TOPIC: TOPIC_CODE,
    DestinationType.TEMP_QUEUE: TEMP_QUEUE_CODE,
    DestinationType.TEMP_TOPIC: TEMP_TOPIC_CODE,
}
_TYPES: Mapping[int, DestinationType] = {code: kind for kind, code in _CODES.items()}

_PREFIXES: Mapping[str, DestinationType] = {kind.value: kind for kind in DestinationType}
"""``queue`` -> QUEUE ... : the part before ``://`` of a qualified name."""

# The most specific capability first: Qpid JMS sends one, other clients may send several.
_CAPABILITIES: tuple[tuple[str, DestinationType], ...] = (
    (TEMPORARY_TOPIC_CAPABILITY, DestinationType.TEMP_TOPIC),
    (TEMPORARY_QUEUE_CAPABILITY, DestinationType.TEMP_QUEUE),
    (TOPIC_CAPABILITY, DestinationType.TOPIC),
    (QUEUE_CAPABILITY, DestinationType.QUEUE),
)

_FORMS = "queue://NAME, topic://NAME, temp-queue://NAME, temp-topic://NAME or a plain queue name"


def destination_for(address: str | None, capabilities: Collection[str] = ()) -> Destination:
    """The destination an AMQP address names; ``capabilities`` type a plain name.

    Raises a non-fatal ``BrokerError`` saying what is wrong with the address and how to write
    it: the adapter refuses the link (or the one message, for the anonymous relay), not the
    connection.
    """
    kind = DestinationType.QUEUE
    for capability, capability_kind in _CAPABILITIES:
        if capability in capabilities:
            kind = capability_kind
            break
    return _resolve(address, kind)


def destination_for_code(address: str | None, code: int | None) -> Destination:
    """The destination of an address typed by an ``x-opt-jms-*`` annotation (None: a queue)."""
    return _resolve(address, DestinationType.QUEUE if code is None else type_for_code(code))


def address_for(destination: Destination) -> str:
    """The AMQP address of a destination: what the broker puts in ``to``, in ``reply-to`` and
    in the address of a dynamic node it creates."""
    return destination.qualified


def destination_type_code(destination: Destination) -> int:
    """The ``x-opt-jms-dest`` / ``x-opt-jms-reply-to`` byte for a destination."""
    return _CODES[destination.type]


def type_for_code(code: int) -> DestinationType:
    """The destination kind of an ``x-opt-jms-dest`` / ``x-opt-jms-reply-to`` byte."""
    kind = _TYPES.get(code)
    if kind is None:
        raise BrokerError(
            f"destination type annotation {code} is not one of 0 (queue), 1 (topic), "
            "2 (temporary queue), 3 (temporary topic)",
            fatal=False,
        )
    return kind


def _resolve(address: str | None, plain_kind: DestinationType) -> Destination:
    if address is None or not address.strip():
        raise BrokerError(f"AMQP address is missing or empty: use {_FORMS}", fatal=False)
    prefix, separator, name = address.partition("://")
    if separator:
        kind = _PREFIXES.get(prefix)
        if kind is None:
            raise BrokerError(
                f"AMQP address {address!r} has an unknown prefix {prefix}://: use {_FORMS}",
                fatal=False,
            )
    elif address.startswith("/"):
        raise BrokerError(
            f"AMQP address {address!r} is STOMP's spelling, which AMQP does not use: "
            f"write queue://NAME for /queue/NAME and topic://NAME for /topic/NAME ({_FORMS})",
            fatal=False,
        )
    else:
        kind, name = plain_kind, address
    if "," in name:
        raise BrokerError(
            f"AMQP address {address!r} contains a comma: composite destinations are STOMP's "
            "(/queue/a,/queue/b); over AMQP open one link per destination",
            fatal=False,
        )
    try:
        return Destination(kind, name)
    except DestinationError as exc:
        raise BrokerError(f"AMQP address {address!r}: {exc}; use {_FORMS}", fatal=False) from None


@dataclass(frozen=True, slots=True)
class ConsumerOptions:
    """Options a consumer's source address may carry, as ActiveMQ's destination options
    (``queue://ORDERS?consumer.exclusive=true&consumer.priority=5``)."""

    exclusive: bool = False
    priority: int = 0


CONSUMER_OPTIONS = ("consumer.exclusive", "consumer.priority")


def consumer_address(address: str) -> tuple[str, ConsumerOptions]:
    """The address without its options, and the options. Unknown ones are refused by name."""
    base, sep, query = address.partition("?")
    if not sep:
        return address, ConsumerOptions()
    exclusive, priority = False, 0
    for name, value in parse_qsl(query, keep_blank_values=True):
        if name == "consumer.exclusive":
            exclusive = value.strip().lower() == "true"
        elif name == "consumer.priority":
            try:
                priority = int(value)
            except ValueError:
                raise BrokerError(
                    f"address option consumer.priority must be an integer, got {value!r}",
                    fatal=False,
                ) from None
        else:
            raise BrokerError(
                f"unknown address option {name!r} in {address!r} (supported: "
                f"{', '.join(CONSUMER_OPTIONS)})",
                fatal=False,
            )
    return base, ConsumerOptions(exclusive, priority)
