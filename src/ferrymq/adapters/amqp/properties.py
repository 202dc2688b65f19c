"""AMQP values as the core's string properties, and back: ids, property values, names.

The core keeps every property as a string (they are STOMP headers), so an AMQP value becomes its
text: a bool ``true``/``false``, a number ``str()``, a string, symbol or char as is.  A binary,
list, map, array or described value has no faithful text and is refused, naming the property.

Ids (message-id, correlation-id) follow Qpid JMS's AmqpMessageIdHelper, so the four AMQP id
types survive a trip through the string world: a ulong becomes ``ID:AMQP_ULONG:<n>``, a uuid
``ID:AMQP_UUID:<uuid>``, a binary ``ID:AMQP_BINARY:<HEX>``, and a string stays as it is, unless
it starts with one of these prefixes (or ``ID:AMQP_STRING:``, ``ID:AMQP_NO_PREFIX:``), when it is
escaped as ``ID:AMQP_STRING:<string>``.  The reverse undoes exactly that.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from proton import byte, ulong

from ferrymq.adapters.amqp.errors import AmqpError
from ferrymq.amqp import codes
from ferrymq.core.errors import BrokerError
from ferrymq.stomp import constants as h
from ferrymq.util.text import is_decimal

ID_ULONG = "ID:AMQP_ULONG:"
ID_UUID = "ID:AMQP_UUID:"
ID_BINARY = "ID:AMQP_BINARY:"
ID_STRING = "ID:AMQP_STRING:"
ID_NO_PREFIX = "ID:AMQP_NO_PREFIX:"
_TYPED_IDS = (ID_ULONG, ID_UUID, ID_BINARY, ID_STRING, ID_NO_PREFIX)
_MAX_ULONG = 2**64 - 1

ANNOTATION_PREFIX = "JMS_AMQP_MA_"
FOOTER_PREFIX = "JMS_AMQP_FT_"
MESSAGE_TYPE = "x-opt-jms-msg-type"
MESSAGE_TYPE_PROPERTY = ANNOTATION_PREFIX + MESSAGE_TYPE
BYTES_MESSAGE = 3
TEXT_MESSAGE = 5
DELIVERY_TIME = "x-opt-delivery-time"
DELIVERY_DELAY = "x-opt-delivery-delay"
USER_ID = "JMSXUserID"
REPLY_TO_GROUP_ID = "JMSXReplyToGroupID"
CONTENT_ENCODING = "content-encoding"

RESERVED = frozenset(
    {
        h.DESTINATION,
        h.MESSAGE_ID,
        h.SUBSCRIPTION,
        h.ACK_HEADER,
        h.REDELIVERED,
        h.CONTENT_LENGTH,
        h.RECEIPT_HEADER,
        h.TRANSACTION,
        h.PERSISTENT,
        h.PRIORITY,
        h.EXPIRES,
        h.TIMESTAMP,
        h.ORIGINAL_DESTINATION,
        h.BROKER_PATH,
        h.JMSX_DELIVERY_COUNT,
    }
)
"""Application property names that are STOMP MESSAGE headers the broker writes itself: dropped
on the way in, as a STOMP SEND's copies of them are, so no STOMP consumer gets two of them."""


def id_text(value: object, field: str) -> str | None:
    """An AMQP message-id or correlation-id as the core's string."""
    if value is None:
        return None
    if isinstance(value, str):
        # Escaped only when ``id_value`` would read it as another type (Qpid JMS escapes every
        # prefixed string, but then fails on one that does not parse): both ways stay inverse.
        return ID_STRING + value if id_value(value) != value else str.__str__(value)
    if isinstance(value, uuid.UUID):
        return ID_UUID + str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return ID_BINARY + bytes(value).hex().upper()
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _MAX_ULONG:
        return ID_ULONG + str(int(value))
    raise BrokerError(
        f"{field} must be a string, ulong, uuid or binary, got {type(value).__name__}",
        fatal=False,
    )


def id_value(text: str) -> object:
    """The AMQP id for a core string: the type ``id_text`` encoded, else the string itself (a
    prefix that does not parse, written by a STOMP producer, is sent as the string it is)."""
    if not text.startswith("ID:AMQP_"):
        return text
    for prefix in (ID_STRING, ID_NO_PREFIX):
        if text.startswith(prefix):
            return text[len(prefix) :]
    rest = text[len(ID_ULONG) :]
    try:
        if text.startswith(ID_ULONG) and is_decimal(rest) and int(rest) <= _MAX_ULONG:
            return ulong(int(rest))
        if text.startswith(ID_UUID):
            return uuid.UUID(text[len(ID_UUID) :])
        if text.startswith(ID_BINARY):
            return bytes.fromhex(text[len(ID_BINARY) :])
    except ValueError:
        pass
    return text


def property_text(value: object, what: str) -> str | None:
    """A property value as text; None for a null value (JMS has no null property)."""
    if value is None:
        return None
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    # int() and float() first: proton's subclasses (ulong, float32) print as "ulong(5)".
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return str(float(value))
    if isinstance(value, uuid.UUID):
        return str(value)
    raise BrokerError(
        f"{what} holds a {_type_name(value)}, which FerryMQ cannot keep (message properties "
        "are strings, numbers or booleans): send it as a string",
        fatal=False,
    )


def _type_name(value: object) -> str:
    if isinstance(value, bytes | bytearray | memoryview):
        return "binary"
    if isinstance(value, Mapping):
        return "map"
    if isinstance(value, list | tuple):
        return "list"
    return type(value).__name__


def application_properties(values: Mapping[object, object] | None) -> dict[str, str]:
    """The application-properties section as the core's properties."""
    properties: dict[str, str] = {}
    if not values:
        return properties
    for name, value in values.items():
        if not isinstance(name, str):
            raise BrokerError(
                f"application property key {name!r} is not a string (AMQP 1.0 3.2.5)",
                fatal=False,
            )
        if name in RESERVED:
            continue
        if type(value) is str:  # the common types first, without the checks below
            properties[name] = value
            continue
        if type(value) is int:
            properties[name] = str(value)
            continue
        if isinstance(value, Mapping | list | tuple):
            raise AmqpError(
                codes.INVALID_FIELD,
                f"application property {name!r} holds a {_type_name(value)}: AMQP 1.0 (3.2.5) "
                "allows only simple types there; send it as a string",
            )
        text = property_text(value, f"application property {name!r}")
        if text is not None:
            properties[name] = text
    return properties


def prefixed(values: Mapping[object, object] | None, prefix: str, what: str) -> dict[str, str]:
    """Annotations or footer entries as ``<prefix><name>`` properties (ActiveMQ's names)."""
    properties: dict[str, str] = {}
    for name, value in (values or {}).items():
        text = property_text(value, f"{what} {name!r}")
        if text is not None:
            key = property_text(name, f"{what} name {name!r}") or ""
            properties[prefix + key] = text
    return properties


def annotation_value(name: str, text: str) -> object:
    """The typed value of an annotation kept as a property: ``x-opt-jms-msg-type`` is a byte
    for Qpid JMS; any other goes out as the string it was kept as."""
    if name == MESSAGE_TYPE:
        try:
            number = int(text)
        except ValueError:
            return text
        if -128 <= number <= 127:
            return byte(number)
    return text
