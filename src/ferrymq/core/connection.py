"""What the core remembers about one client connection."""

from __future__ import annotations

from dataclasses import dataclass, field

from ferrymq.core.authorization import ConnectionGuard
from ferrymq.core.consumer import Consumer
from ferrymq.core.destination import Destination
from ferrymq.core.transaction import Transaction
from ferrymq.security.api import Subject


@dataclass(slots=True, eq=False)
class ConnectionState:
    connection_id: str
    client_id: str
    """The JMS client id: from CONNECT's ``client-id``, else the connection id."""
    explicit_client_id: bool
    user: str | None = None
    """The authenticated user, or (no authentication configured) the login the client gave."""
    remote_address: str | None = None
    subject: Subject | None = None
    """Who an ``Authenticator`` proved the client to be (None: nothing was checked)."""
    guard: ConnectionGuard | None = None
    """What this connection may do (None: no authorization map, everything is allowed)."""
    connected_at: int = 0
    consumers: dict[str, Consumer] = field(default_factory=dict)
    transactions: dict[str, Transaction] = field(default_factory=dict)
    temporary_destinations: set[Destination] = field(default_factory=set)
    ack_owners: dict[str, Consumer] = field(default_factory=dict)
    """ack id -> consumer, connection-wide (STOMP 1.2 ``id`` on ACK/NACK)."""
    next_ack: int = 0
    """The last ack id handed out on this connection (``Dispatcher.deliver`` counts)."""
    messages_sent: int = 0
    messages_delivered: int = 0

    @property
    def groups(self) -> frozenset[str]:
        """The authenticated user's groups (none when nothing was authenticated)."""
        return self.subject.groups if self.subject is not None else frozenset()
