"""Destinations and ActiveMQ's wildcard patterns.

A destination is a kind (queue, topic, temporary queue or topic) plus a physical name. Names are
dot-separated paths; in a *pattern* ``*`` matches one element and ``>`` matches the rest (zero or
more elements, as ActiveMQ's ``PrefixDestinationFilter`` does: ``foo.>`` matches ``foo`` too).
The STOMP spelling (``/queue/X``) is the service's business; the core only sees these objects.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

WILDCARD_ONE = "*"
WILDCARD_REST = ">"
SEPARATOR = "."


class DestinationType(enum.Enum):
    QUEUE = "queue"
    TOPIC = "topic"
    TEMP_QUEUE = "temp-queue"
    TEMP_TOPIC = "temp-topic"

    @property
    def is_topic(self) -> bool:
        return self in (DestinationType.TOPIC, DestinationType.TEMP_TOPIC)

    @property
    def is_temporary(self) -> bool:
        return self in (DestinationType.TEMP_QUEUE, DestinationType.TEMP_TOPIC)


class DestinationError(ValueError):
    """A destination name that cannot be used; the message says why."""


@dataclass(frozen=True, slots=True)
class Destination:
    type: DestinationType
    name: str
    # Derived once: these are read for every message routed.
    is_topic: bool = field(init=False, repr=False, compare=False)
    is_temporary: bool = field(init=False, repr=False, compare=False)
    is_wildcard: bool = field(init=False, repr=False, compare=False)
    is_advisory: bool = field(init=False, repr=False, compare=False)
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.name:
            raise DestinationError("destination name is empty")
        kind = self.type
        topic = kind is DestinationType.TOPIC or kind is DestinationType.TEMP_TOPIC
        _set(self, "is_topic", topic)
        _set(
            self,
            "is_temporary",
            kind is DestinationType.TEMP_QUEUE or kind is DestinationType.TEMP_TOPIC,
        )
        _set(self, "is_wildcard", _is_wildcard(self.name))
        _set(
            self,
            "is_advisory",
            kind is DestinationType.TOPIC and self.name.startswith("ActiveMQ.Advisory."),
        )
        # Destinations are dict keys on every routing step; an Enum hashes slowly.
        _set(self, "_hash", hash((kind.value, self.name)))

    def __hash__(self) -> int:
        return self._hash

    @classmethod
    def queue(cls, name: str) -> Destination:
        return cls(DestinationType.QUEUE, name)

    @classmethod
    def topic(cls, name: str) -> Destination:
        return cls(DestinationType.TOPIC, name)

    @property
    def is_queue(self) -> bool:
        return not self.is_topic

    @property
    def qualified(self) -> str:
        """``queue://X``: the form ActiveMQ's JDBC store uses for its CONTAINER column."""
        return f"{self.type.value}://{self.name}"

    @classmethod
    def parse_qualified(cls, text: str) -> Destination:
        kind, sep, name = text.partition("://")
        if not sep:
            raise DestinationError(f"not a qualified destination: {text!r}")
        try:
            return cls(DestinationType(kind), name)
        except ValueError:
            raise DestinationError(f"unknown destination kind {kind!r} in {text!r}") from None

    def __str__(self) -> str:
        return self.qualified


def _is_wildcard(name: str) -> bool:
    if WILDCARD_ONE not in name and WILDCARD_REST not in name:
        return False
    return any(part in (WILDCARD_ONE, WILDCARD_REST) for part in name.split(SEPARATOR))


_set = object.__setattr__


class DestinationPattern:
    """A destination that may contain wildcards; matches destinations of the same family.

    Queues and temporary queues form one family, topics and temporary topics the other, so a
    ``/queue/>`` consumer does not see topics.
    """

    __slots__ = ("_parts", "destination")

    def __init__(self, destination: Destination) -> None:
        self.destination = destination
        self._parts = tuple(destination.name.split(SEPARATOR)) if destination.is_wildcard else None

    def matches(self, other: Destination) -> bool:
        if other.is_topic != self.destination.is_topic:
            return False
        if self._parts is None:
            return other.type is self.destination.type and other.name == self.destination.name
        return match_parts(self._parts, tuple(other.name.split(SEPARATOR)))

    def __repr__(self) -> str:
        return f"DestinationPattern({self.destination})"


def match_parts(pattern: tuple[str, ...], path: tuple[str, ...]) -> bool:
    """True when ``path`` (no wildcards) is matched by ``pattern``."""
    for i, part in enumerate(pattern):
        if part == WILDCARD_REST:
            return True
        if i >= len(path):
            return False
        if part != WILDCARD_ONE and part != path[i]:
            return False
    return len(path) == len(pattern)


def name_matches(pattern: str, name: str) -> bool:
    """Match a bare name against a bare pattern (used for policy entries and filters)."""
    if not _is_wildcard(pattern):
        return pattern == name
    return match_parts(tuple(pattern.split(SEPARATOR)), tuple(name.split(SEPARATOR)))
