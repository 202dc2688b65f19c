"""One broker of a fanout: its URI, its connection while there is one, its reconnect task.

A ``Member`` is its ``TcpTransport``'s listener and passes events to the ``FanoutTransport``
tagged with itself, as a failover ``Link`` does for its owner. It knows its owner only as a
``MemberOwner``: the two calls it makes, so this module does not import the transport.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from ferrymq.client.errors import ClientError, ConnectionClosed
from ferrymq.client.failover.policy import BrokerKey, broker_key
from ferrymq.client.tcp import TcpTransport
from ferrymq.client.transport import BrokerEvent
from ferrymq.stomp.events import Connected
from ferrymq.util.uri import URI


class MemberOwner(Protocol):
    """What a member reports to (the ``FanoutTransport``)."""

    def member_event(self, member: Member, event: BrokerEvent) -> None: ...

    def member_lost(self, member: Member, error: ConnectionClosed | None) -> None: ...


class Member:
    """One announced broker and its connection while there is one (the TcpTransport's
    listener)."""

    def __init__(self, owner: MemberOwner, uri: URI) -> None:
        self.owner = owner
        self.uri = uri
        self.key: BrokerKey = broker_key(uri)
        host = f"[{self.key[0]}]" if ":" in self.key[0] else self.key[0]
        self.url = f"{uri.scheme}://{host}:{self.key[1]}"
        self.transport: TcpTransport | None = None
        self.connected: Connected | None = None
        self.lost = False
        self.changed = asyncio.Event()
        """Set when the connection is lost or there is something to catch up on."""
        self.task: asyncio.Task[None] | None = None

    @property
    def up(self) -> bool:
        return self.connected is not None and not self.lost

    def on_event(self, event: BrokerEvent) -> None:
        self.owner.member_event(self, event)

    def on_closed(self, error: ConnectionClosed) -> None:
        if not self.lost:
            self.owner.member_lost(self, error)

    def on_transport_interrupted(self) -> None:
        """A TcpTransport never calls it."""

    def on_transport_resumed(self, connected: Connected) -> None:
        """A TcpTransport never calls it."""

    def on_request_failed(self, receipt_id: str, error: ClientError) -> None:
        """A TcpTransport never calls it."""
