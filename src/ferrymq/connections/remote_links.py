"""``RemoteSender`` and ``RemoteReceiver`` for real: one link each on an ``AmqpRemoteConnection``.

A link learns what happened from the connection's reader (``on_event``, ``on_closed``) and
turns it into the futures and the queue its element awaits. A send's future completes when the
peer settles it; if the link or the connection ends first it fails with ``ConnectionError``, so
an element never takes a transfer for delivered that the peer did not settle.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Mapping
from typing import Protocol

from ferrymq.amqp.peer import PeerEngine
from ferrymq.amqp.peer_events import Drained, LinkDown, LinkRefused, LinkUp, Settled, Transfer
from ferrymq.connections.api import Incoming, LinkSetupError, SendOutcome

__all__ = ["AmqpRemoteReceiver", "AmqpRemoteSender", "RemoteLink"]

LinkEvent = LinkUp | LinkRefused | LinkDown | Transfer | Drained | Settled


class LinkOwner(Protocol):
    """What a link uses of its ``AmqpRemoteConnection``."""

    url: str
    engine: PeerEngine

    def flush_soon(self) -> None: ...

    def forget(self, link: RemoteLink) -> None: ...


class RemoteLink:
    """What both kinds of link share: the attach, the end."""

    def __init__(self, connection: LinkOwner, name: str) -> None:
        self.connection = connection
        self.name = name
        self.id = 0
        self.offered_capabilities: tuple[str, ...] = ()
        self.remote_properties: Mapping[str, object] = {}
        self.address: str | None = None
        """The peer's terminus address (for a dynamic link, the node it created)."""
        self._attached: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.ended: ConnectionError | None = None

    async def wait_attached(self) -> None:
        await self._attached

    def on_event(self, event: LinkEvent) -> None:
        if isinstance(event, LinkUp):
            self.offered_capabilities = event.offered_capabilities
            self.remote_properties = event.properties
            self.address = event.address
            if not self._attached.done():
                self._attached.set_result(None)
        elif isinstance(event, LinkRefused):
            self._fail_attach(
                LinkSetupError(f"{self.connection.url} refused link {self.name!r}: {event.error}")
            )
            self.on_closed(ConnectionError(f"link {self.name!r} refused: {event.error}"))
        elif isinstance(event, LinkDown):
            why = event.error or "detached by the peer"
            self.on_closed(ConnectionError(f"{self.connection.url}: link {self.name!r} {why}"))

    def _fail_attach(self, error: Exception) -> None:
        if not self._attached.done():
            self._attached.set_exception(error)

    def on_closed(self, error: ConnectionError) -> None:
        """The link or its connection ended: everything waiting on it fails with ``error``."""
        self._fail_attach(error)
        if self.ended is None:
            self.ended = error

    @property
    def is_closed(self) -> bool:
        return self.ended is not None

    async def close(self) -> None:
        if self.ended is None:
            self.on_closed(ConnectionError(f"link {self.name!r} was closed"))
            self.connection.forget(self)


class AmqpRemoteSender(RemoteLink):
    def __init__(self, connection: LinkOwner, name: str) -> None:
        super().__init__(connection, name)
        self._outcomes: dict[int, asyncio.Future[SendOutcome]] = {}
        self.sent = self.accepted = self.refused = 0

    def send(self, encoded: bytes) -> asyncio.Future[SendOutcome]:
        future: asyncio.Future[SendOutcome] = asyncio.get_running_loop().create_future()
        if self.ended is not None:
            future.set_exception(self.ended)
            return future
        key = self.connection.engine.send(self.id, encoded)
        self._outcomes[key] = future
        self.sent += 1
        self.connection.flush_soon()
        return future

    @property
    def in_flight(self) -> int:
        return len(self._outcomes)

    def on_event(self, event: LinkEvent) -> None:
        if isinstance(event, Settled):
            future = self._outcomes.pop(event.key, None)
            accepted = event.outcome == "accepted"
            self.accepted += accepted
            self.refused += not accepted
            if future is not None and not future.done():
                future.set_result(SendOutcome(accepted, event.outcome, event.description))
            return
        super().on_event(event)

    def on_closed(self, error: ConnectionError) -> None:
        super().on_closed(error)
        outcomes, self._outcomes = self._outcomes, {}
        for future in outcomes.values():
            if not future.done():
                future.set_exception(error)
                future.exception()  # the element may have stopped waiting: no warning


class AmqpRemoteReceiver(RemoteLink):
    def __init__(self, connection: LinkOwner, name: str) -> None:
        super().__init__(connection, name)
        self._arrived: collections.deque[Incoming] = collections.deque()
        self._wakeup = asyncio.Event()
        self._drained: asyncio.Future[None] | None = None
        self.received = 0

    async def receive(self) -> Incoming:
        while not self._arrived:
            if self.ended is not None:
                raise self.ended
            self._wakeup.clear()
            await self._wakeup.wait()
        return self._arrived.popleft()

    def settle(self, delivery: int, outcome: str = "accepted") -> None:
        if delivery and self.ended is None:
            self.connection.engine.settle(delivery, outcome)
            self.connection.flush_soon()

    def flow(self, credit: int) -> None:
        if self.ended is None:
            self.connection.engine.flow(self.id, credit)
            self.connection.flush_soon()

    async def drain(self) -> None:
        if self.ended is not None:
            raise self.ended
        if self._drained is None or self._drained.done():
            if self.connection.engine.drain(self.id):
                return  # no credit was left
            self._drained = asyncio.get_running_loop().create_future()
            self.connection.flush_soon()
        await asyncio.shield(self._drained)

    def on_event(self, event: LinkEvent) -> None:
        if isinstance(event, Transfer):
            self.received += 1
            self._arrived.append(Incoming(event.encoded, event.delivery))
            self._wakeup.set()
        elif isinstance(event, Drained):
            if self._drained is not None and not self._drained.done():
                self._drained.set_result(None)
        else:
            super().on_event(event)

    def on_closed(self, error: ConnectionError) -> None:
        super().on_closed(error)
        # The peer takes back what was not settled: handing it on now would duplicate it.
        kept = [incoming for incoming in self._arrived if incoming.delivery == 0]
        self._arrived = collections.deque(kept)
        self._wakeup.set()
        if self._drained is not None and not self._drained.done():
            self._drained.set_exception(error)
            self._drained.exception()
