"""The ``MessageStore`` protocol: what the broker needs from durable storage.

The store knows nothing of connections, STOMP or the message format: a message is an opaque
``blob`` (the core encodes it) filed under a *container* (a queue, a durable subscription or a
spooling topic subscription) and a broker-wide sequence number.  Writes are batches of operations
applied atomically; one commit (and one fsync) serves every batch that arrived while the previous
commit ran ("group commit").  Reads (``load``) are ordered after every write submitted before them,
so the core can page a container in without racing its own writes.

Non-persistent messages are written only when the broker spools them because memory is full
(``persistent=False``); they are deleted at start-up, never recovered.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, TypeAlias

if TYPE_CHECKING:  # the core imports these records and must not import asyncio
    import asyncio

DEFAULT_PRODUCER_ID_WINDOW = 65536
"""How many producer message ids a store remembers for duplicate detection, newest kept."""


@dataclass(frozen=True, slots=True)
class AddMessage:
    """File a message; adding an existing ``(container, seq)`` again replaces that row."""

    container: str
    seq: int
    blob: bytes
    priority: int = 4
    expiration: int = 0
    persistent: bool = True
    producer_message_id: str | None = None
    """Remembered in the duplicate-detection window (persistent messages only)."""
    delivered: bool = False


@dataclass(frozen=True, slots=True)
class RemoveMessage:
    container: str
    seq: int


@dataclass(frozen=True, slots=True)
class MarkDelivered:
    """The message may have reached a consumer: after a crash it comes back flagged redelivered."""

    container: str
    seq: int


@dataclass(frozen=True, slots=True)
class PurgeContainer:
    """Delete every message of a container (queue removed, durable subscription destroyed)."""

    container: str


@dataclass(frozen=True, slots=True)
class DurableSubscriptionRecord:
    client_id: str
    subscription_name: str
    destination: str
    """Qualified destination (``topic://X``), possibly a wildcard pattern."""
    selector: str | None
    no_local: bool
    container: str


@dataclass(frozen=True, slots=True)
class AddDurableSubscription:
    record: DurableSubscriptionRecord


@dataclass(frozen=True, slots=True)
class RemoveDurableSubscription:
    client_id: str
    subscription_name: str


@dataclass(frozen=True, slots=True)
class AddDestination:
    """A queue or topic that exists until removed, so it survives restarts even when empty."""

    qualified_name: str


@dataclass(frozen=True, slots=True)
class RemoveDestination:
    qualified_name: str


StoreOp: TypeAlias = (
    AddMessage
    | RemoveMessage
    | MarkDelivered
    | PurgeContainer
    | AddDurableSubscription
    | RemoveDurableSubscription
    | AddDestination
    | RemoveDestination
)


@dataclass(frozen=True, slots=True)
class StoredMessage:
    container: str
    seq: int
    blob: bytes
    delivered: bool


@dataclass(frozen=True, slots=True)
class ContainerState:
    container: str
    count: int
    bytes: int
    """Sum of blob sizes."""
    first_seq: int
    last_seq: int


@dataclass(frozen=True, slots=True)
class Recovery:
    """What the store holds at start-up; messages themselves are paged in with ``load``."""

    containers: dict[str, ContainerState] = field(default_factory=dict)
    durable_subscriptions: list[DurableSubscriptionRecord] = field(default_factory=list)
    destinations: list[str] = field(default_factory=list)
    producer_message_ids: list[str] = field(default_factory=list)
    """The duplicate-detection window, oldest first."""
    last_seq: int = 0


@dataclass(frozen=True, slots=True)
class StoreStatistics:
    commits: int
    operations: int
    last_commit_ms: float
    """Wall time of the most recent commit, fsync included."""
    total_commit_ms: float
    pending_operations: int


class StoreError(Exception):
    """The store cannot be used (locked, corrupt, unwritable); the message says which and where,
    ``fix`` (when known) what the user can do about it."""

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        super().__init__(message)
        self.fix = fix


class LockLostError(StoreError):
    """A fenced write found that this broker no longer holds the group's lock (the database
    lease, or the shared lock file): nothing of the batch was written and the store refuses
    every later write (DESIGN.md "Fencing")."""


class StoreBusyError(StoreError):
    """The store cannot be opened now because another process holds its database (for the
    SQLite store: a paused or deposed master that has not closed it yet).  Unlike other start
    failures it may pass: a broker that holds the group's lock retries the open."""


class MessageStore(Protocol):
    async def start(self) -> Recovery:
        """Open (creating if needed), drop spooled non-persistent rows, report what is stored."""
        ...

    async def stop(self) -> None:
        """Finish pending writes, then close; later writes fail with ``StoreError``."""
        ...

    def write(self, ops: Sequence[StoreOp]) -> asyncio.Future[None]:
        """Queue a batch applied atomically; the future resolves once it is durable.

        Must be called from the event loop thread.  Batches are applied in call order.
        """
        ...

    async def load(self, container: str, from_seq: int, limit: int) -> list[StoredMessage]:
        """Up to ``limit`` messages of ``container`` with ``seq >= from_seq``, in seq order.

        Sees every write submitted before the call.
        """
        ...

    def statistics(self) -> StoreStatistics: ...
