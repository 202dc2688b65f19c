"""A stand-in for Apache Qpid Dispatch Router's message routing of waypoint addresses.

No router ships with FerryMQ; this is written from the router's documented behaviour (Qpid
Dispatch Router book, "Addresses" / "Brokered Messaging", and its ``router_core``'s handling of
the ``qd.waypoint`` terminus capability), small enough to read whole:

- every address has an in-phase (where messages arriving on a link enter it) and an out-phase
  (where links that the router sends on take them from); a message entering at phase ``p`` goes
  to a link attached at phase ``p`` (anycast, round robin over the links with credit);
- an ordinary address is phase 0 both ways; a waypoint address (``waypoint: yes``, here any
  address under one of ``waypoint_prefixes``) is in-phase 0, out-phase 1: clients' messages
  enter at 0, clients' consumers receive from 1;
- a link whose terminus (the target of a link the router receives on, the source of a link it
  sends on) carries the capability ``qd.waypoint`` takes the waypoint's phases the other way:
  in-phase 1, out-phase 0. So a broker's receiver takes phase 0 (what clients sent) and a
  broker's sender delivers into phase 1 (to the clients' consumers);
- settlement is end to end: a client's transfer is settled with the outcome its consumer gave;
- credit: a link the router receives on gets credit only once some link can take its messages
  (an address without a consumer holds its producers back), so what has no consumer yet stays
  in the broker's queue, not in the router. (This stand-in does not take credit back when the
  last consumer leaves: what was already granted may wait in the router.)

It runs a python-qpid-proton ``Container`` on its own thread, listening on 127.0.0.1.
"""

from __future__ import annotations

import itertools
import threading
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any

from proton import Delivery, Endpoint, Link, Message, Terminus
from proton.handlers import MessagingHandler
from proton.reactor import ApplicationEvent, Container, EventInjector

from ferrymq.testing import free_port

WAYPOINT = "qd.waypoint"
ROUTER_CREDIT = 250


def capabilities(terminus: Terminus) -> list[str]:
    """The terminus's capabilities (a symbol or an array of them)."""
    data = terminus.capabilities
    data.rewind()
    if data.next() is None:
        return []
    value: Any = data.get_object()
    if isinstance(value, str):
        return [str(value)]
    elements = getattr(value, "elements", value)
    return [str(v) for v in elements]


_LinkName = tuple[str, str, bool]


@dataclass
class _Pending:
    message: Message
    upstream: Delivery | None


@dataclass
class RouterState:
    """What the tests read (under ``lock``)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    waypoint_links: list[tuple[str, str, int]] = field(default_factory=list)
    """(direction from the broker's view, address, phase) of each waypoint link attached."""
    routed: dict[tuple[str, int], int] = field(default_factory=lambda: defaultdict(int))


class _Router(MessagingHandler):
    def __init__(self, url: str, waypoint_prefixes: tuple[str, ...], state: RouterState) -> None:
        super().__init__(prefetch=0, auto_accept=False, auto_settle=False)
        self.url = url
        self.prefixes = waypoint_prefixes
        self.state = state
        self.acceptor: Any = None
        self.container: Any = None
        self.outgoing: dict[tuple[str, int], list[Link]] = defaultdict(list)
        self.incoming: dict[tuple[str, int], list[Link]] = defaultdict(list)
        self.waiting: dict[tuple[str, int], deque[_Pending]] = defaultdict(deque)
        self.key: dict[_LinkName, tuple[str, int]] = {}
        self.upstream: dict[tuple[str, str, bool, object], Delivery] = {}
        self.rotation = itertools.count()
        self.connections: set[Any] = set()

    def on_start(self, event: Any) -> None:
        self.container = event.container
        self.acceptor = event.container.listen(self.url)

    def on_stop_router(self, event: Any) -> None:
        if self.acceptor is not None:
            self.acceptor.close()
        for connection in list(self.connections):
            connection.close()
        self.container.stop()

    def on_connection_opening(self, event: Any) -> None:
        self.connections = {*self.connections, event.connection}

    def on_link_opening(self, event: Any) -> None:
        link: Link = event.link
        if link.is_sender:
            terminus = link.remote_source
            link.source.copy(terminus)
            link.target.copy(link.remote_target)
        else:
            terminus = link.remote_target
            link.source.copy(link.remote_source)
            link.target.copy(terminus)
        address = terminus.address or ""
        waypoint = WAYPOINT in capabilities(terminus)[:1]
        configured = address.startswith(self.prefixes)
        in_phase, out_phase = (1, 0) if waypoint else ((0, 1) if configured else (0, 0))
        phase = out_phase if link.is_sender else in_phase
        key = (address, phase)
        self.key[_name(link)] = key
        if waypoint:
            with self.state.lock:
                side = "receiver" if link.is_sender else "sender"
                self.state.waypoint_links.append((side, address, phase))
        link.open()
        if link.is_sender:
            self.outgoing[key].append(link)
            for producer in self.incoming[key]:
                if producer.credit == 0:
                    producer.flow(ROUTER_CREDIT)
        else:
            self.incoming[key].append(link)
            if self.outgoing[key]:
                link.flow(ROUTER_CREDIT)

    def on_link_remote_close(self, event: Any) -> None:
        # proton's own endpoint handler (a child of MessagingHandler) closes our end.
        self._forget(event.link)

    def on_disconnected(self, event: Any) -> None:
        for link in _links(event.connection):
            self._forget(link)
        self.connections = self.connections - {event.connection}

    def _forget(self, link: Link) -> None:
        key = self.key.pop(_name(link), None)
        if key is None:
            return
        for links in (self.outgoing[key], self.incoming[key]):
            for known in [k for k in links if _name(k) == _name(link)]:
                links.remove(known)

    def on_message(self, event: Any) -> None:
        link: Link = event.link
        key = self.key.get(_name(link))
        if key is None:
            return
        if self.outgoing[key]:
            link.flow(1)
        self.waiting[key].append(_Pending(event.message, event.delivery))
        self._pump(key)

    def on_sendable(self, event: Any) -> None:
        key = self.key.get(_name(event.link))
        if key is not None:
            self._pump(key)

    def _pump(self, key: tuple[str, int]) -> None:
        waiting = self.waiting[key]
        while waiting:
            ready = [s for s in self.outgoing.get(key, []) if s.credit > 0]
            if not ready:
                return
            link = ready[next(self.rotation) % len(ready)]
            pending = waiting.popleft()
            downstream = link.send(pending.message)
            if pending.upstream is not None:
                self.upstream[(*_name(link), downstream.tag)] = pending.upstream
            with self.state.lock:
                self.state.routed[key] += 1

    # A consumer's outcome (modified is reported as released) goes back to the producer.
    def on_accepted(self, event: Any) -> None:
        self._settled(event.delivery)

    def on_rejected(self, event: Any) -> None:
        self._settled(event.delivery)

    def on_released(self, event: Any) -> None:
        self._settled(event.delivery)

    def _settled(self, downstream: Delivery) -> None:
        key = (*_name(downstream.link), downstream.tag)
        upstream = self.upstream.pop(key, None)
        if upstream is not None:
            upstream.update(downstream.remote_state)
            upstream.settle()
        downstream.settle()


def _name(link: Link) -> _LinkName:
    """A link's identity (AMQP 1.0, 2.6.1: a name is unique per container pair and role;
    proton's Python wrappers are not)."""
    return (link.connection.remote_container or "", link.name, bool(link.is_sender))


def _links(connection: Any) -> list[Link]:
    links = []
    link = connection.link_head(Endpoint.LOCAL_ACTIVE)
    while link is not None:
        links.append(link)
        link = link.next(Endpoint.LOCAL_ACTIVE)
    return links


class RouterStandIn:
    """Start with ``with``; clients and brokers connect to ``url``."""

    def __init__(self, waypoint_prefixes: tuple[str, ...] = ("queues.",)) -> None:
        self.port = free_port()
        self.url = f"amqp://127.0.0.1:{self.port}"
        self.state = RouterState()
        self._handler = _Router(f"127.0.0.1:{self.port}", waypoint_prefixes, self.state)
        self._container = Container(self._handler)
        self._injector = EventInjector()
        self._container.selectable(self._injector)
        self._thread = threading.Thread(target=self._container.run, name="router-standin")

    def __enter__(self) -> RouterStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._injector.trigger(ApplicationEvent("stop_router"))
        self._thread.join(10)

    def waypoint_links(self) -> list[tuple[str, str, int]]:
        with self.state.lock:
            return list(self.state.waypoint_links)
