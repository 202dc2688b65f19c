"""An AMQP 1.0 endpoint whose answers a test scripts: the other end of a broker connection.

It runs on the test's event loop, listening on 127.0.0.1 port 0: python-qpid-proton's engine in
server mode, with SASL (ANONYMOUS and PLAIN) done by ``ferrymq.amqp.sasl`` as the broker does,
and link capabilities read and written by ``ferrymq.amqp.attach_frames`` (proton does neither).
It records what a test asserts on (sockets accepted, the open's properties, logins, attaches,
messages) and answers attaches as told: accept (offering capabilities, link properties), or
refuse (null terminus and a detach with an error, as Artemis and AMQP 1.0 part 2.6.3 do).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import proton
from proton import Endpoint, Event

from ferrymq.amqp.attach_frames import AttachCapabilities, RemoteAttach
from ferrymq.amqp.sasl import (
    OUTCOME_AUTH,
    OUTCOME_OK,
    Header,
    SaslInit,
    SaslServer,
    plain_credentials,
)


@dataclass
class Attach:
    name: str
    role_sender: bool
    """The peer's link is a sender (the broker connection attached a receiver)."""
    address: str | None
    desired: tuple[str, ...]
    properties: dict[str, object]
    dynamic: bool
    filters: dict[str, object]


@dataclass
class Answer:
    """How to answer one attach."""

    refuse: str | None = None
    """An error description: refuse the link with it."""
    offered: tuple[str, ...] = ()
    properties: dict[str, object] = field(default_factory=dict)
    address: str | None = None
    """For a dynamic node: the address the peer made."""


@dataclass
class PeerConnection:
    container_id: str = ""
    properties: dict[str, object] = field(default_factory=dict)
    login: tuple[str, str] | None = None
    mechanism: str | None = None
    hostname: str | None = None


class ScriptedPeer:
    def __init__(
        self,
        *,
        answer: Callable[[Attach], Answer] | None = None,
        users: dict[str, str] | None = None,
        credit: int = 100,
    ) -> None:
        self.answer = answer or (lambda attach: Answer())
        self.users = users
        """With users: PLAIN only, checked; without: ANONYMOUS (and PLAIN accepted)."""
        self.credit = credit
        self.accepted = 0
        """Sockets accepted."""
        self.connections: list[PeerConnection] = []
        self.attaches: list[Attach] = []
        self.received: list[bytes] = []
        self.to_send: list[bytes] = []
        """Messages handed to every sender link the peer has (a broker connection's receiver)."""
        self.close_on_open: str | None = None
        """Close every connection right after its open with this error."""
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: list[asyncio.StreamWriter] = []
        self.port = 0

    async def start(self) -> ScriptedPeer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    @property
    def url(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        await self.drop_all()

    async def drop_all(self) -> None:
        """Cut every connection (a runtime failure as the broker connection sees it)."""
        for writer in self._writers:
            writer.transport.abort()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.append(writer)
        try:
            await _Session(self, reader, writer).run()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self._tasks.discard(task)
            writer.transport.abort()

    async def __aenter__(self) -> ScriptedPeer:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()


class _Session:
    def __init__(
        self, peer: ScriptedPeer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.peer = peer
        self.reader = reader
        self.writer = writer
        self.record = PeerConnection()
        peer.connections.append(self.record)
        self.caps = AttachCapabilities()
        self.connection = proton.Connection()
        self.collector = proton.Collector()
        self.connection.collect(self.collector)
        self.transport = proton.Transport(proton.Transport.SERVER)
        self.transport.bind(self.connection)
        self.senders: list[proton.Sender] = []

    async def run(self) -> None:
        if not await self._sasl():
            return
        while True:
            data = await self.reader.read(65536)
            if not data:
                return
            self.caps.scan(data)
            self.transport.push(data)
            self._events()
            self._flush()
            if self.transport.pending() < 0:
                return

    async def _sasl(self) -> bool:
        mechanisms = ["PLAIN"] if self.peer.users is not None else ["ANONYMOUS", "PLAIN"]
        sasl = SaslServer(mechanisms)
        self.writer.write(sasl.mechanisms_frame())
        while True:
            data = await self.reader.read(65536)
            if not data:
                return False
            sasl.feed(data)
            event = sasl.next_event()
            while event is Header.SASL:
                event = sasl.next_event()
            if isinstance(event, SaslInit):
                break
        ok = self._login(event)
        self.writer.write(SaslServer.outcome_frame(OUTCOME_OK if ok else OUTCOME_AUTH))
        if not ok:
            await self.writer.drain()
            return False
        rest = sasl.rest()
        if rest:
            self.caps.scan(rest)
            self.transport.push(rest)
            self._events()
            self._flush()
        return True

    def _login(self, init: SaslInit) -> bool:
        self.record.mechanism = init.mechanism
        if init.mechanism == "PLAIN":
            self.record.login = plain_credentials(init.response)
        users = self.peer.users
        if users is None:
            return True
        return (
            self.record.login is not None
            and users.get(self.record.login[0]) == (self.record.login[1])
        )

    def _flush(self) -> None:
        pending = self.transport.pending()
        if pending > 0:
            data = self.transport.peek(pending) or b""
            self.transport.pop(len(data))
            self.writer.write(self.caps.rewrite(bytes(data)))

    def _events(self) -> None:
        while (event := self.collector.peek()) is not None:
            self._on(event)
            self.collector.pop()

    def _on(self, event: Event) -> None:
        kind = event.type
        link = cast(Any, event.link)
        if kind == Event.CONNECTION_REMOTE_OPEN:
            self._on_open()
        elif kind == Event.SESSION_REMOTE_OPEN:
            cast(Any, event.session).open()
        elif kind == Event.LINK_REMOTE_OPEN:
            self._on_attach(link)
        elif kind == Event.LINK_FLOW and link.is_sender:
            self._offer()
        elif kind == Event.DELIVERY:
            self._on_delivery(cast(proton.Delivery, event.delivery))
        elif kind in (Event.LINK_REMOTE_CLOSE, Event.LINK_REMOTE_DETACH):
            if link.state & Endpoint.LOCAL_ACTIVE:
                link.close()
        elif kind == Event.CONNECTION_REMOTE_CLOSE:
            self.connection.close()

    def _on_open(self) -> None:
        connection = self.connection
        self.record.container_id = str(connection.remote_container or "")
        self.record.hostname = connection.remote_hostname or None
        self.record.properties = _plain(dict(connection.remote_properties or {}))
        connection.container = "scripted-peer"
        connection.open()
        if self.peer.close_on_open is not None:
            connection.condition = proton.Condition(
                "amqp:connection:forced", self.peer.close_on_open
            )
            connection.close()

    def _on_attach(self, link: proton.Link) -> None:
        remote = link.remote_source if link.is_sender else link.remote_target
        raw = self.caps.incoming.get(link.name, RemoteAttach())
        filters = link.remote_source.filter.get_object() if link.is_sender else None
        attach = Attach(
            name=link.name,
            role_sender=link.is_sender,
            address=remote.address,
            desired=raw.desired,
            properties=_plain(dict(link.remote_properties or {})),
            dynamic=remote.dynamic,
            filters=_plain(dict(filters or {})),
        )
        self.peer.attaches.append(attach)
        answer = self.peer.answer(attach)
        if answer.refuse is not None:
            (link.source if link.is_sender else link.target).type = proton.Terminus.UNSPECIFIED
            link.open()
            link.condition = proton.Condition("amqp:not-allowed", answer.refuse)
            link.close()
            return
        if link.is_sender:
            link.target.copy(link.remote_target)
        else:
            link.source.copy(link.remote_source)
        local = link.source if link.is_sender else link.target
        local.address = cast(Any, answer.address or remote.address)
        if answer.properties:
            link.properties = {proton.symbol(k): cast(Any, v) for k, v in answer.properties.items()}
        self.caps.announce(link.name, answer.offered, ())
        link.open()
        if link.is_sender:
            self.senders.append(cast(proton.Sender, link))
        else:
            link.flow(self.peer.credit)

    def _offer(self) -> None:
        for sender in self.senders:
            while self.peer.to_send and sender.credit > 0:
                delivery = sender.delivery(str(len(self.peer.received) + sender.unsettled + 1))
                sender.send(self.peer.to_send.pop(0))
                sender.advance()
                del delivery
            if sender.drain_mode:
                sender.drained()

    def _on_delivery(self, delivery: proton.Delivery) -> None:
        link = delivery.link
        if link.is_sender:
            if delivery.updated:
                delivery.settle()
            return
        if delivery.partial or not delivery.readable:
            return
        self.peer.received.append(bytes(link.recv(delivery.pending) or b""))
        link.advance()
        delivery.update(proton.Delivery.ACCEPTED)
        delivery.settle()
        link.flow(1)


def _plain(value: dict[object, object]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, item in value.items():
        if isinstance(item, dict):
            item = _plain(item)
        elif isinstance(item, proton.Array):
            item = [str(x) for x in item.elements]
        out[str(key)] = str(item) if isinstance(item, str) else item
    return out


async def stop_quietly(peer: ScriptedPeer) -> None:
    with contextlib.suppress(OSError):
        await peer.stop()
