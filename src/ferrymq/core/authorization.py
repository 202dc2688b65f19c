"""Authorization, checked once, where the core decides: ActiveMQ's ``AuthorizationBroker``.

Every protocol's commands reach the core as the same calls, so the checks sit here and no
adapter has code of its own for them. A connection authorized by a map carries a
``ConnectionGuard`` (``ConnectionState.guard``); one without (no map configured) carries None
and pays nothing. The rules are ActiveMQ's:

- a SEND needs WRITE on each destination it names (a composite send on each part);
- a consumer, durable or not, and a queue browser need READ on their destination;
- a command that would create a destination that does not exist yet (a send or a consumer; a
  wildcard creates nothing) needs ADMIN on it, checked after the WRITE or READ;
- a temporary destination's creation needs ADMIN on it, its use READ or WRITE (the map answers
  those from its ``tempDestinationAuthorizationEntry``);
- a wildcard needs the operation on the pattern itself (the map grants a pattern only what it
  grants every destination the pattern could reach), and each destination it reaches is checked
  again, as ActiveMQ's ``AuthorizationDestinationFilter`` does: a wildcard consumer joins only
  the destinations it may read (existing ones when it subscribes, new ones as they are created;
  another is skipped silently), and never another connection's temporary destination; a
  wildcard SEND needs WRITE on every destination it reaches, or it is refused whole, naming
  the first refused one, and nothing is stored (as a composite send: ActiveMQ checks only the
  pattern, FerryMQ never half delivers a send);
- a consumer on another connection's temporary destination is refused ("Cannot subscribe to
  remote temporary destination", ActiveMQ's words) unless it is a network bridge's demand
  (bridges mirror the other broker's temporary destinations);
- what the broker itself publishes (advisories, dead letters) is never checked;
- another broker's network bridge hears of demand (consumer advisories) only for destinations
  its user may write here (``demand_gate``), so it never takes a message it cannot forward.

A refused SEND inside a transaction dooms that transaction: its COMMIT fails and nothing of it
is stored, so a transaction is never half committed (ActiveMQ marks it rollback-only the same
way when an asynchronous send in it fails).

Decisions are cached per connection, keyed by (operation, destination): the map does not change
while the broker runs. A destination the connection may write and create is "sendable", so the
hot path of a producer is one set lookup per SEND. The cache is bounded: a client naming ever
new destinations cannot grow it without end.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Set
from typing import Protocol

from ferrymq.core.destination import Destination, DestinationError
from ferrymq.core.errors import BrokerError
from ferrymq.core.message import Message
from ferrymq.core.transaction import Transaction
from ferrymq.security.api import AuthorizationError, Authorizer, Operation, Subject

READ = Operation.READ
WRITE = Operation.WRITE
ADMIN = Operation.ADMIN

MAX_CACHED = 4096
"""Decisions a connection remembers; past this the cache starts over."""


class NotAuthorizedError(BrokerError):
    """An operation the connection's user may not do: reported, the connection kept open."""

    def __init__(self, error: AuthorizationError) -> None:
        super().__init__(str(error), fatal=False)
        self.error = error


class ConnectionGuard:
    """One connection's subject and the decisions the authorizer already made for it."""

    __slots__ = ("_decisions", "authorizer", "sendable", "subject")

    def __init__(self, authorizer: Authorizer, subject: Subject) -> None:
        self.authorizer = authorizer
        self.subject = subject
        self._decisions: dict[tuple[Operation, Destination], bool] = {}
        self.sendable: set[Destination] = set()
        """Destinations this connection may write and create: a SEND to them needs no other
        check (the producer's hot path: ``sendable.issuperset(targets)``)."""

    def permits(self, operation: Operation, destination: Destination) -> bool:
        """Whether the subject may do ``operation`` (asked once, then remembered)."""
        key = (operation, destination)
        decision = self._decisions.get(key)
        if decision is None:
            decision = self.authorizer.allowed(self.subject, operation, destination)
            if len(self._decisions) >= MAX_CACHED:
                self._decisions.clear()
                self.sendable.clear()
            self._decisions[key] = decision
        return decision

    def check(self, operation: Operation, destination: Destination) -> None:
        """Raise ``NotAuthorizedError`` unless the subject may do ``operation``."""
        if not self.permits(operation, destination):
            raise NotAuthorizedError(AuthorizationError(self.subject, operation, destination))

    def check_send(
        self,
        targets: Iterable[Destination],
        exists: Callable[[Destination], bool],
        transaction: Transaction | None,
        expand: Callable[[Destination], Iterable[Destination]] = lambda _: (),
    ) -> None:
        """WRITE on every target (ADMIN on one it creates), and on every destination a wildcard
        target reaches (``expand``); a refusal dooms ``transaction``. A target the user may also
        create joins ``sendable`` (never a wildcard: what it reaches changes); one it may only
        write is checked for existence at each SEND (it must not be created by it)."""
        try:
            for target in targets:
                if target in self.sendable:
                    continue
                self.check(WRITE, target)
                if target.is_wildcard:
                    for reached in expand(target):
                        self.check(WRITE, reached)
                elif self.permits(ADMIN, target):
                    self.sendable.add(target)
                elif _creates(target, exists):
                    self.check(ADMIN, target)
        except NotAuthorizedError as refusal:
            if transaction is not None and transaction.refused is None:
                transaction.refused = refusal.message
            raise

    def check_consume(
        self, destination: Destination, exists: Callable[[Destination], bool]
    ) -> None:
        """READ on a consumer's or browser's destination (ADMIN when it creates it)."""
        self.check(READ, destination)
        if _creates(destination, exists):
            self.check(ADMIN, destination)


def _creates(destination: Destination, exists: Callable[[Destination], bool]) -> bool:
    """Whether using ``destination`` creates it (a wildcard creates nothing; a temporary one is
    created explicitly, with its own ADMIN check)."""
    return not (destination.is_wildcard or destination.is_temporary or exists(destination))


class Owner(Protocol):
    """What a consumer's connection (``ConnectionState``) tells about what it may join."""

    @property
    def guard(self) -> ConnectionGuard | None: ...

    @property
    def temporary_destinations(self) -> Set[Destination]: ...


def _foreign(state: Owner | None, network: bool, destination: Destination) -> bool:
    """Whether ``destination`` is a temporary destination another connection made (a network
    bridge's demand owns none: it consumes the ones it mirrors from the other broker)."""
    if not destination.is_temporary or network:
        return False
    return state is None or destination not in state.temporary_destinations


def may_join(state: Owner | None, network: bool, destination: Destination) -> bool:
    """Whether a wildcard consumer of ``state``'s connection (None: a durable subscription whose
    user is away) joins ``destination``, one its pattern matches: READ on it, and a temporary
    destination only of its own connection (or a network bridge's demand)."""
    if _foreign(state, network, destination):
        return False
    guard = state.guard if state is not None else None
    return guard is None or guard.permits(READ, destination)


def check_temporary_owner(state: Owner, network: bool, destination: Destination) -> None:
    """Refuse a consumer on another connection's temporary destination (ActiveMQ's words)."""
    if _foreign(state, network, destination):
        raise BrokerError(
            f"Cannot subscribe to remote temporary destination: {destination.qualified}",
            fatal=False,
        )


def guard_for(authorizer: Authorizer | None, subject: Subject | None) -> ConnectionGuard | None:
    """The guard of a new connection: None when nothing is authorized (no map configured). A
    connection with a map but no proved subject is checked as a user with no groups."""
    if authorizer is None:
        return None
    return ConnectionGuard(authorizer, subject if subject is not None else Subject(""))


_CONSUMER_ADVISORY = "ActiveMQ.Advisory.Consumer."


def advised_destination(topic: Destination) -> Destination | None:
    """The destination a consumer advisory topic is about (None for any other topic)."""
    name = topic.name
    if not name.startswith(_CONSUMER_ADVISORY):
        return None
    kind, _, advised = name[len(_CONSUMER_ADVISORY) :].partition(".")
    advised = advised.replace("&sbquo;", ",")
    try:
        if kind == "Queue":
            return Destination.queue(advised)
        if kind == "Topic":
            return Destination.topic(advised)
    except DestinationError:
        return None
    return None


def demand_gate(guard: ConnectionGuard) -> Callable[[Message], bool]:
    """What a network bridge's advisory subscription admits: consumer advisories only for the
    destinations its user may write (the bridge would forward messages there)."""

    def admits(message: Message) -> bool:
        advised = advised_destination(message.destination)
        return advised is None or guard.permits(WRITE, advised)

    return admits
