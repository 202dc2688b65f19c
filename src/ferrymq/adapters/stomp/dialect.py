"""ActiveMQ's STOMP dialect: destination names and how frame headers map to a message.

Destinations (ActiveMQ's LegacyFrameTranslator): ``/queue/X``, ``/topic/X``, per-connection
``/temp-queue/N`` and ``/temp-topic/N``, another connection's ``/remote-temp-queue/ID`` and
``/remote-temp-topic/ID``, comma-separated composites, and, as ActiveMQ does, an unprefixed name
means a queue of that name.  Unlike ActiveMQ, a name that starts with ``/`` but with none of these
prefixes is refused (ActiveMQ would silently create a queue called ``/foo/bar``).

SEND headers: ``persistent:true`` makes a message persistent (absent means non-persistent, the
STOMP default that ActiveMQ keeps); ``priority`` 0-9 (default 4); ``expires`` is an absolute epoch
time in ms (0 never); every other header except the frame's own (``receipt``, ``transaction``,
``content-length``...) is kept as a message property and handed back on delivery.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ferrymq.core.destination import Destination, DestinationError, DestinationType
from ferrymq.core.errors import BrokerError
from ferrymq.core.message import (
    MAX_PRIORITY,
    MIN_PRIORITY,
    Message,
    MessageId,
    require_long,
)
from ferrymq.stomp import constants as h
from ferrymq.stomp.encoder import header_block
from ferrymq.stomp.errors import LocalProtocolError
from ferrymq.stomp.escaping import escape

QUEUE_PREFIX = "/queue/"
TOPIC_PREFIX = "/topic/"
TEMP_QUEUE_PREFIX = "/temp-queue/"
TEMP_TOPIC_PREFIX = "/temp-topic/"
REMOTE_TEMP_QUEUE_PREFIX = "/remote-temp-queue/"
REMOTE_TEMP_TOPIC_PREFIX = "/remote-temp-topic/"

DELIVERY_COUNT = h.JMSX_DELIVERY_COUNT

# Headers that belong to the SEND frame, not to the message (ActiveMQ strips the same ones).
_FRAME_ONLY = frozenset(
    {
        h.DESTINATION,
        h.RECEIPT_HEADER,
        h.TRANSACTION,
        h.CONTENT_LENGTH,
        h.MESSAGE_ID,
        h.REDELIVERED,
        h.SUBSCRIPTION,
        h.ACK_HEADER,
        h.ORIGINAL_DESTINATION,
        h.PERSISTENT,
        h.PRIORITY,
        h.EXPIRES,
        h.TIMESTAMP,
        "JMSXUserID",
        h.BROKER_PATH,
        DELIVERY_COUNT,
        h.FERRYMQ_PRODUCER_MESSAGE_ID,
    }
)


class TemporaryNames:
    """One connection's temporary destinations: the client's name ``N`` <-> a broker-wide name."""

    def __init__(self, connection_id: str) -> None:
        self._connection_id = connection_id
        self._physical: dict[tuple[DestinationType, str], str] = {}
        self._local: dict[tuple[DestinationType, str], str] = {}

    def physical(self, kind: DestinationType, local_name: str) -> tuple[str, bool]:
        """The broker-wide name for ``/temp-queue/<local_name>``, and whether it is new."""
        key = (kind, local_name)
        name = self._physical.get(key)
        if name is not None:
            return name, False
        name = f"{self._connection_id}:{len(self._physical) + 1}"
        self._physical[key] = name
        self._local[(kind, name)] = local_name
        return name, True

    def local(self, destination: Destination) -> str | None:
        return self._local.get((destination.type, destination.name))


_PARSED: dict[str, tuple[Destination, ...]] = {}
"""Destination headers already resolved (those naming no temporary destination, whose meaning
does not depend on the connection): a producer names the same few destinations again and
again."""
_PARSED_LIMIT = 4096
_NO_TEMPORARIES: tuple[Destination, ...] = ()


def parse_destinations(
    text: str | None, names: TemporaryNames | None = None
) -> tuple[tuple[Destination, ...], tuple[Destination, ...]]:
    """Resolve a STOMP destination header; returns (destinations, temporaries created now)."""
    if text is None:
        raise BrokerError("destination header is missing or empty")
    cached = _PARSED.get(text)
    if cached is not None:
        return cached, _NO_TEMPORARIES
    if not text.strip():
        raise BrokerError("destination header is missing or empty")
    destinations: list[Destination] = []
    created: list[Destination] = []
    for raw in text.split(","):
        part = raw.strip()
        destination, new = _parse_one(part, names)
        destinations.append(destination)
        if new:
            created.append(destination)
    result = tuple(destinations)
    if "/temp-" not in text:
        if len(_PARSED) >= _PARSED_LIMIT:
            _PARSED.clear()
        _PARSED[text] = result
    return result, tuple(created)


def _parse_one(text: str, names: TemporaryNames | None) -> tuple[Destination, bool]:
    try:
        for prefix, kind in (
            (QUEUE_PREFIX, DestinationType.QUEUE),
            (TOPIC_PREFIX, DestinationType.TOPIC),
            (REMOTE_TEMP_QUEUE_PREFIX, DestinationType.TEMP_QUEUE),
            (REMOTE_TEMP_TOPIC_PREFIX, DestinationType.TEMP_TOPIC),
        ):
            if text.startswith(prefix):
                return Destination(kind, text[len(prefix) :]), False
        for prefix, kind in (
            (TEMP_QUEUE_PREFIX, DestinationType.TEMP_QUEUE),
            (TEMP_TOPIC_PREFIX, DestinationType.TEMP_TOPIC),
        ):
            if text.startswith(prefix):
                local_name = text[len(prefix) :]
                if not local_name:
                    raise DestinationError("destination name is empty")
                if names is None:
                    raise BrokerError(f"temporary destination {text} needs a connection")
                physical, new = names.physical(kind, local_name)
                return Destination(kind, physical), new
        if text.startswith("/"):
            raise BrokerError(
                f"Illegal destination name: [{text}] -- STOMP destinations must begin with one "
                "of: /queue/ /topic/ /temp-queue/ /temp-topic/ /remote-temp-queue/ "
                "/remote-temp-topic/ (or be a plain queue name)"
            )
        return Destination.queue(text), False
    except DestinationError as exc:
        raise BrokerError(f"Illegal destination name: [{text}]: {exc}") from None


def format_destination(destination: Destination, names: TemporaryNames | None = None) -> str:
    """The STOMP name a given connection sees for a destination."""
    kind = destination.type
    if kind is DestinationType.QUEUE:
        return QUEUE_PREFIX + destination.name
    if kind is DestinationType.TOPIC:
        return TOPIC_PREFIX + destination.name
    local = names.local(destination) if names is not None else None
    if kind is DestinationType.TEMP_QUEUE:
        return (
            TEMP_QUEUE_PREFIX + local
            if local is not None
            else REMOTE_TEMP_QUEUE_PREFIX + destination.name
        )
    return (
        TEMP_TOPIC_PREFIX + local
        if local is not None
        else REMOTE_TEMP_TOPIC_PREFIX + destination.name
    )


def _int_value(name: str, value: str, default: int) -> int:
    if value == "":
        return default
    try:
        return int(value.strip())
    except ValueError:
        raise BrokerError(f"header {name} must be an integer, got {value!r}") from None


def message_from_send(
    message_id: MessageId,
    headers: Mapping[str, str],
    body: bytes,
    destinations: Sequence[Destination],
    now_ms: int,
    names: TemporaryNames | None = None,
) -> Message:
    properties: dict[str, str] = {}
    priority = 4
    expires = 0
    timestamp = 0
    persistent = False
    path: str | None = None
    producer_message_id: str | None = None
    # One pass over the headers: this runs for every message a producer sends.
    for name, value in headers.items():
        if name not in _FRAME_ONLY:
            properties[name] = value
        elif name == h.PERSISTENT:
            persistent = value.strip().lower() == "true"
        elif name == h.PRIORITY:
            priority = _int_value(name, value, 4)
            if not MIN_PRIORITY <= priority <= MAX_PRIORITY:
                raise BrokerError(f"header priority must be 0-9, got {priority}")
        elif name == h.EXPIRES:
            expires = max(require_long(name, _int_value(name, value, 0)), 0)
        elif name == h.TIMESTAMP:
            timestamp = require_long(name, _int_value(name, value, 0))
        elif name == h.BROKER_PATH:
            path = value
        elif name == h.FERRYMQ_PRODUCER_MESSAGE_ID:
            producer_message_id = value or None
    reply_to = properties.get(h.REPLY_TO)
    if reply_to is not None and reply_to.startswith((TEMP_QUEUE_PREFIX, TEMP_TOPIC_PREFIX)):
        # Another connection cannot reach this connection's name for it; publish the
        # broker-wide one (ActiveMQ does the same).
        (target,), _ = parse_destinations(reply_to, names)
        properties[h.REPLY_TO] = format_destination(target)
    return Message(
        message_id,
        destinations[0],
        body,
        properties,
        persistent,
        priority,
        expires,
        timestamp or now_ms,
        0,
        tuple(p for p in path.split(",") if p) if path else (),
        producer_message_id,
    )


def renders_alike_for_all(message: Message) -> bool:
    """Whether every connection sees the same headers (no temporary destination to translate)."""
    if message.destination.is_temporary:
        return False
    reply_to = message.properties.get(h.REPLY_TO)
    return reply_to is None or not reply_to.startswith(
        (REMOTE_TEMP_QUEUE_PREFIX, REMOTE_TEMP_TOPIC_PREFIX)
    )


_ESCAPED_DESTINATIONS: dict[tuple[Destination, str], str] = {}


def standard_block(message: Message, version: str) -> bytes | None:
    """The delivery-independent MESSAGE headers, rendered directly for the common case (STOMP
    1.1/1.2, no temporary destination, no original destination); None means "use
    ``message_headers``".  Equivalent to ``header_block(message_headers(...))``, in fewer steps:
    this runs for every message delivered from a queue."""
    if version == h.V1_0 or message.original_destination is not None:
        return None
    destination = message.destination
    if destination.is_temporary:
        return None
    key = (destination, version)
    name = _ESCAPED_DESTINATIONS.get(key)
    if name is None:
        if len(_ESCAPED_DESTINATIONS) >= _PARSED_LIMIT:
            _ESCAPED_DESTINATIONS.clear()
        name = _ESCAPED_DESTINATIONS[key] = escape(format_destination(destination), version)
    message_id: str = message.message_id
    if ":" in message_id or "\\" in message_id or "\n" in message_id or "\r" in message_id:
        if version == h.V1_1 and "\r" in message_id:
            return None
        message_id = escape(message_id, version)
    head = (
        f"\n{h.DESTINATION}:{name}\n{h.MESSAGE_ID}:{message_id}\n{h.EXPIRES}:{message.expires}"
        f"\n{h.PRIORITY}:{message.priority}\n{h.TIMESTAMP}:{message.timestamp}"
    )
    if message.persistent:
        head += "\npersistent:true"
    block = head.encode()
    extra: list[tuple[str, str]] = []
    if message.broker_path:
        extra.append((h.BROKER_PATH, ",".join(message.broker_path)))
    if message.producer_message_id is not None:
        extra.append((h.FERRYMQ_PRODUCER_MESSAGE_ID, message.producer_message_id))
    properties = message.properties
    if properties:
        reply_to = properties.get(h.REPLY_TO)
        if reply_to is not None and reply_to.startswith(
            (REMOTE_TEMP_QUEUE_PREFIX, REMOTE_TEMP_TOPIC_PREFIX)
        ):
            return None
        extra.extend(properties.items())
    if extra:
        try:
            block += header_block(extra, version)
        except LocalProtocolError:
            return None
    return block


def message_headers(message: Message, names: TemporaryNames | None = None) -> dict[str, str]:
    """The MESSAGE headers that do not depend on the delivery (ActiveMQ's
    copyStandardHeadersFromMessageToFrame): everything but subscription, ack, redelivered and
    the delivery count."""
    headers = {
        h.DESTINATION: format_destination(message.destination, names),
        h.MESSAGE_ID: message.message_id,
        h.EXPIRES: str(message.expires),
        h.PRIORITY: str(message.priority),
        h.TIMESTAMP: str(message.timestamp),
    }
    if message.persistent:
        headers[h.PERSISTENT] = "true"
    if message.original_destination is not None:
        headers[h.ORIGINAL_DESTINATION] = format_destination(message.original_destination)
    if message.broker_path:
        headers[h.BROKER_PATH] = ",".join(message.broker_path)
    if message.producer_message_id is not None:
        headers[h.FERRYMQ_PRODUCER_MESSAGE_ID] = message.producer_message_id
    for name, value in message.properties.items():
        if (
            name == h.REPLY_TO
            and names is not None
            and value.startswith((REMOTE_TEMP_QUEUE_PREFIX, REMOTE_TEMP_TOPIC_PREFIX))
        ):
            (target,), _ = parse_destinations(value)
            value = format_destination(target, names)
        headers.setdefault(name, value)
    return headers


def sanitize_for_version(headers: dict[str, str]) -> dict[str, str]:
    """Make headers representable in STOMP 1.0, which cannot escape: a header written by a
    1.1+ producer may hold a line break or a colon that a 1.0 subscriber cannot be sent."""
    clean: dict[str, str] = {}
    for name, value in headers.items():
        name = name.replace(":", "_").replace("\n", " ").replace("\r", " ")
        value = value.replace("\r", " ").replace("\n", " ").replace("\x00", "")
        if name:
            clean[name] = value
    return clean
