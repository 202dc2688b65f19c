"""`<authorizationMap>`: which groups may read, write and administer which destinations.

ActiveMQ's DefaultAuthorizationMap, decided the same way:

* The groups of **every** entry whose pattern matches a destination are joined (with
  `<defaultEntry>`'s), so `queue=">" read="admins"` and `queue="USERS.>" read="users"`
  together let both groups read `USERS.X`. Queue entries apply to queues, topic entries to
  topics. `.` separates elements, `*` matches one, `>` the rest (zero or more: `USERS.>`
  covers `USERS` too). A group `*` means everybody.
* A destination no entry matches is refused to everybody (an empty set of groups).
* A wildcard destination (a SUBSCRIBE or SEND naming `*` or `>`) is granted only what every
  destination it could reach is granted: an entry counts when it covers the whole pattern (its
  `>` covers anything, its `*` one element but not a `>`, a plain element only itself), so with
  one entry `USERS.>` for `users`, `USERS.*` is granted to them but `*` or `>` is not, even
  when `>` would reach `USERS.X` too. ActiveMQ's map joins every entry the pattern touches
  instead (a `*` in the pattern reaching any element) and relies on checking each destination
  the wildcard reaches; FerryMQ does both (``core.authorization``): a pattern that could reach a
  destination its user may not use is refused up front, so a durable subscription collecting
  while its user is away, or a destination created later, can never widen it.
* Temporary destinations are decided by `<tempDestinationAuthorizationEntry>` only (joined, in
  FerryMQ, with `tempQueue`/`tempTopic` entries, which ActiveMQ parses but never consults);
  with neither, anybody may use them, as in ActiveMQ.
* Advisory topics (`ActiveMQ.Advisory.>`) are topics like any other: a client that subscribes
  to them needs an entry, as ActiveMQ's activemq-security.xml example gives one. What the
  broker itself publishes there is not checked.

The map does not change while the broker runs, so each decision is cached under (groups,
operation, destination): after the first time, `allowed` is one dict lookup.
"""

from __future__ import annotations

from collections.abc import Iterable

from ferrymq.config.security import AccessConfig, AuthorizationConfig, AuthorizationEntryConfig
from ferrymq.core.destination import Destination, DestinationType
from ferrymq.security.api import Operation, Subject

__all__ = ["EVERYBODY", "AuthorizationMap"]

EVERYBODY = "*"
_CACHE_LIMIT = 100_000
_Groups = tuple[frozenset[str], frozenset[str], frozenset[str]]
"""read, write, admin."""
_FAMILY = {
    "queue": DestinationType.QUEUE,
    "topic": DestinationType.TOPIC,
    "temp-queue": DestinationType.TEMP_QUEUE,
    "temp-topic": DestinationType.TEMP_TOPIC,
}


def _covers(pattern: tuple[str, ...], key: tuple[str, ...]) -> bool:
    """Whether the entry `pattern` matches every name `key` matches (for a plain name: whether it
    matches it). A `*` of `key` is covered by an entry's `*` or `>`, its `>` only by a `>`."""
    for index, part in enumerate(pattern):
        if part == ">":
            return True
        if index >= len(key):
            return False
        given = key[index]
        if given == ">" or (part != "*" and part != given):
            return False
    return len(pattern) == len(key)


def _access(entry: AuthorizationEntryConfig | AccessConfig) -> _Groups:
    return entry.read, entry.write, entry.admin


def _join(items: Iterable[_Groups]) -> _Groups:
    read: set[str] = set()
    write: set[str] = set()
    admin: set[str] = set()
    for r, w, a in items:
        read |= r
        write |= w
        admin |= a
    return frozenset(read), frozenset(write), frozenset(admin)


_INDEX = {Operation.READ: 0, Operation.WRITE: 1, Operation.ADMIN: 2}


class AuthorizationMap:
    """An `Authorizer` built from `AuthorizationConfig`."""

    def __init__(self, config: AuthorizationConfig) -> None:
        self._entries: dict[DestinationType, list[tuple[tuple[str, ...], _Groups]]] = {
            kind: [] for kind in DestinationType
        }
        for entry in config.entries:
            for pattern in entry.pattern.split(","):
                if pattern.strip():
                    parts = tuple(pattern.strip().split("."))
                    self._entries[_FAMILY[entry.kind]].append((parts, _access(entry)))
        self._most_specific = config.most_specific
        self._default = None if config.default_entry is None else _access(config.default_entry)
        temp = [_access(config.temp_destination)] if config.temp_destination else []
        self._temp: dict[DestinationType, _Groups | None] = {}
        for kind in (DestinationType.TEMP_QUEUE, DestinationType.TEMP_TOPIC):
            found = temp + [groups for _, groups in self._entries[kind]]
            self._temp[kind] = _join(found) if found else None
        self._cache: dict[tuple[frozenset[str], Operation, Destination], bool] = {}

    def allowed(self, subject: Subject, operation: Operation, destination: Destination) -> bool:
        key = (subject.groups, operation, destination)
        decision = self._cache.get(key)
        if decision is None:
            decision = self._decide(subject.groups, operation, destination)
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[key] = decision
        return decision

    def groups_for(self, operation: Operation, destination: Destination) -> frozenset[str] | None:
        """The groups that may do `operation` on `destination`; None: anybody may."""
        if destination.is_temporary:
            temp = self._temp[destination.type]
            return None if temp is None else temp[_INDEX[operation]]
        key = tuple(destination.name.split("."))
        found = [groups for parts, groups in self._entries[destination.type] if _covers(parts, key)]
        if self._most_specific:  # Artemis's settings: the most specific alone
            found = found[-1:]
        if self._default is not None:
            found.append(self._default)
        return _join(found)[_INDEX[operation]]

    def _decide(
        self, groups: frozenset[str], operation: Operation, destination: Destination
    ) -> bool:
        allowed = self.groups_for(operation, destination)
        if allowed is None or EVERYBODY in allowed:
            return True
        return not allowed.isdisjoint(groups)
