"""One connection a failover transport holds: the current one, a standby, or one being opened.

A ``Link`` is its member transport's listener (``TcpTransport`` or ``AmqpTransport``): it passes
events to its owner (a ``LinkOwner``: the ``FailoverTransport``) tagged with itself, so the owner
can tell the current broker's events from a standby's or a retired one's.
"""

from __future__ import annotations

import asyncio
from enum import Enum
from typing import Protocol

from ferrymq.client.amqp_transport import AmqpTransport
from ferrymq.client.errors import ClientError, ConnectionClosed
from ferrymq.client.failover.policy import BrokerKey, broker_key
from ferrymq.client.tcp import TcpTransport
from ferrymq.client.transport import BrokerEvent
from ferrymq.stomp.events import Connected
from ferrymq.util.uri import URI


class Role(Enum):
    NEW = "new"
    """Being opened by the reconnect loop."""
    STANDBY = "standby"
    """Held for ``backup``/``priorityBackup``."""
    REPLAYING = "replaying"
    """Chosen; the connection's state is being restored on it."""
    CURRENT = "current"
    DRAINING = "draining"
    """Being left in a planned failover: DISCONNECT sent, its receipt awaited."""
    RETIRED = "retired"


class LinkOwner(Protocol):
    """Where a link reports its broker's events and its loss."""

    def link_event(self, link: Link, event: BrokerEvent) -> None: ...

    def link_closed(self, link: Link, error: ConnectionClosed) -> None: ...


class Link:
    __slots__ = ("connected", "key", "lost", "opened_at", "owner", "role", "transport", "uri")

    def __init__(
        self,
        owner: LinkOwner,
        uri: URI,
        transport: TcpTransport | AmqpTransport,
        opened_at: float,
    ) -> None:
        self.owner = owner
        self.uri = uri
        self.key: BrokerKey = broker_key(uri)
        self.transport = transport
        self.opened_at = opened_at
        self.role = Role.NEW
        self.connected: Connected | None = None
        """None while only the TCP socket is open (a standby for a connection with a
        client-id, which sends CONNECT when promoted)."""
        self.lost = asyncio.Event()

    @property
    def url(self) -> str:
        return self.transport.remote_url

    # TransportListener, for the TcpTransport

    def on_event(self, event: BrokerEvent) -> None:
        self.owner.link_event(self, event)

    def on_closed(self, error: ConnectionClosed) -> None:
        self.lost.set()
        self.owner.link_closed(self, error)

    def on_transport_interrupted(self) -> None:
        """A TcpTransport never calls it."""

    def on_transport_resumed(self, connected: Connected) -> None:
        """A TcpTransport never calls it."""

    def on_request_failed(self, receipt_id: str, error: ClientError) -> None:
        """A TcpTransport never calls it."""

    def __repr__(self) -> str:
        return f"Link({self.url}, {self.role.value})"
