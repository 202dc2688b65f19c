"""The receiving side of ``ClientEngine``: one receiver link per subscription.

Credit is the prefetch (ActiveMQ's ``activemq.prefetchSize``): a subscription that settles on
arrival tops its credit up as messages come, one that waits for the application's
acknowledgement gives credit back as it settles, so no more than the prefetch is ever
unacknowledged, as with STOMP. A durable topic subscription is made as Qpid JMS makes it
(Qpid JMS documentation, "Durable subscriptions"; the issue's item 4): the connection's
container id is the client id, the link name is the subscription name, the source is durable
(unsettled state) with expiry policy never, and closing (not just detaching) the link removes it.
A browser asks for distribution-mode copy and drains: a drain that comes back short means the
queue was browsed to its end.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, cast

from proton import (
    Delivery,
    Described,
    Endpoint,
    Link,
    Message,
    Receiver,
    Session,
    Terminus,
    symbol,
    ulong,
)

from ferrymq.amqp.client_events import Arrived, BrowseEnded, LinkClosed, LinkOpened

__all__ = ["SubscriptionSpec", "Subscriptions"]

TRANSACTIONAL_STATE = 0x34
_OUTCOMES = {
    "accepted": Delivery.ACCEPTED,
    "rejected": Delivery.REJECTED,
    "released": Delivery.RELEASED,
    "modified": Delivery.MODIFIED,
}
DEFAULT_PREFETCH = 1000


@dataclass(frozen=True, slots=True)
class SubscriptionSpec:
    key: str
    address: str
    prefetch: int = DEFAULT_PREFETCH
    selector: str | None = None
    no_local: bool = False
    settle_first: bool = True
    """Settled on arrival (STOMP ``auto``): no acknowledgement follows."""
    browser: bool = False
    durable_name: str | None = None
    capability: str | None = None
    """``queue`` or ``topic`` (the source capability Qpid JMS sends), None for neither."""


@dataclass(slots=True)
class _Receiving:
    spec: SubscriptionSpec
    link: Receiver
    unsettled: dict[int, Delivery] = field(default_factory=dict)
    """Delivery id -> delivery, in arrival order (for STOMP's cumulative ``client`` ack)."""
    drain_asked: int = 0
    """A browser's credit of its outstanding drain (0: none)."""
    drained: int = 0
    """Messages a browser received since that drain."""
    removing: bool = False


class Subscriptions:
    def __init__(self, session: Session) -> None:
        self._session = session
        self._by_key: dict[str, _Receiving] = {}
        self._by_link: dict[str, str] = {}
        """Link name -> subscription key (proton's wrappers differ per event; names do not)."""
        self._deliveries: dict[int, str] = {}
        """Delivery id -> subscription key."""
        self._ids = itertools.count(1)
        self._names = itertools.count(1)

    def open(self, spec: SubscriptionSpec) -> None:
        name = spec.durable_name or f"receiver-{next(self._names)}-{spec.key}"
        link = self._session.receiver(name)
        source = link.source
        source.address = spec.address
        link.target.address = spec.address
        if spec.capability is not None:
            source.capabilities.put_object(symbol(spec.capability))
        filters: dict[symbol, Described] = {}
        if spec.selector:
            filters[symbol("jms-selector")] = Described(
                symbol("apache.org:selector-filter:string"), spec.selector
            )
        if spec.no_local:
            filters[symbol("no-local")] = Described(symbol("apache.org:no-local-filter:list"), [])
        if filters:
            source.filter.put_dict(filters)
        if spec.durable_name is not None:
            source.durability = Terminus.DELIVERIES
            source.expiry_policy = Terminus.EXPIRE_NEVER
        if spec.browser:
            source.distribution_mode = Terminus.DIST_MODE_COPY
        if spec.settle_first:
            link.snd_settle_mode = Link.SND_SETTLED
        link.open()
        receiving = _Receiving(spec, link)
        self._by_key[spec.key] = receiving
        self._by_link[name] = spec.key
        if spec.browser:
            self._drain(receiving)
        else:
            link.flow(spec.prefetch)

    def close(self, key: str, *, remove: bool, durable_name: str | None) -> bool:
        receiving = self._by_key.get(key)
        if receiving is None:
            if not (remove and durable_name):
                return False
            # Not attached here: attach to it by name, as Qpid JMS's unsubscribe does, to close.
            link = self._session.receiver(durable_name)
            link.source.durability = Terminus.DELIVERIES
            link.source.expiry_policy = Terminus.EXPIRE_NEVER
            link.open()
            receiving = _Receiving(SubscriptionSpec(key, "", durable_name=durable_name), link)
            self._by_key[key] = receiving
            self._by_link[durable_name] = key
        receiving.removing = True
        self._forget_deliveries(receiving)
        if remove or receiving.spec.durable_name is None:
            receiving.link.close()
        else:
            receiving.link.detach()
        return True

    # ---- settling ----

    def settle(self, delivery_id: int, outcome: str, txn_id: bytes | None) -> None:
        key = self._deliveries.pop(delivery_id, None)
        receiving = self._by_key.get(key) if key is not None else None
        if receiving is None:
            return  # its link is gone; the broker has released it already
        delivery = receiving.unsettled.pop(delivery_id)
        _settle(delivery, outcome, txn_id)
        if not receiving.spec.settle_first and not receiving.spec.browser:
            receiving.link.flow(1)

    def settle_up_to(self, key: str, delivery_id: int, txn_id: bytes | None) -> None:
        receiving = self._by_key.get(key)
        if receiving is None:
            return
        for pending in [n for n in receiving.unsettled if n <= delivery_id]:
            self.settle(pending, "accepted", txn_id)

    # ---- events ----

    def on_delivery(self, link: Link, delivery: Delivery) -> Iterator[Arrived]:
        key = self._by_link.get(link.name)
        receiving = self._by_key.get(key) if key is not None else None
        if receiving is None or delivery.partial or not delivery.readable:
            return
        data = link.recv(delivery.pending)
        link.advance()
        message = Message()
        message.decode(data)
        spec = receiving.spec
        delivery_id = 0
        if delivery.settled:
            delivery.settle()
        elif spec.settle_first or spec.browser:
            delivery.update(Delivery.ACCEPTED)
            delivery.settle()
        else:
            delivery_id = next(self._ids)
            receiving.unsettled[delivery_id] = delivery
            self._deliveries[delivery_id] = spec.key
        if spec.browser:
            receiving.drained += 1
        elif spec.settle_first and link.credit < spec.prefetch // 2:
            link.flow(spec.prefetch - link.credit)
        yield Arrived(spec.key, message, delivery_id)

    def on_flow(self, link: Link) -> Iterator[BrowseEnded]:
        key = self._by_link.get(link.name)
        receiving = self._by_key.get(key) if key is not None else None
        if receiving is None or not receiving.spec.browser or not receiving.drain_asked:
            return
        if link.draining() or link.credit > 0:
            return
        if receiving.drained < receiving.drain_asked:
            receiving.drain_asked = 0
            yield BrowseEnded(receiving.spec.key)
        else:
            self._drain(receiving)

    def on_remote_open(self, link: Link) -> Iterator[LinkOpened]:
        key = self._by_link.get(link.name)
        receiving = self._by_key.get(key) if key is not None else None
        if receiving is None or receiving.removing or link.state & Endpoint.REMOTE_CLOSED:
            return  # a refusal: the detach that follows says why
        yield LinkOpened(receiving.spec.key)

    def on_remote_close(self, link: Link, error: str | None) -> Iterator[LinkClosed]:
        key = self._by_link.pop(link.name, None)
        receiving = self._by_key.pop(key, None) if key is not None else None
        if link.state & Endpoint.LOCAL_ACTIVE:
            link.close()
        if receiving is None:
            return
        self._forget_deliveries(receiving)
        yield LinkClosed(receiving.spec.key, error)

    def _drain(self, receiving: _Receiving) -> None:
        receiving.drain_asked = receiving.spec.prefetch
        receiving.drained = 0
        receiving.link.drain(receiving.spec.prefetch)

    def _forget_deliveries(self, receiving: _Receiving) -> None:
        for delivery_id in receiving.unsettled:
            self._deliveries.pop(delivery_id, None)
        receiving.unsettled.clear()


def _settle(delivery: Delivery, outcome: str, txn_id: bytes | None) -> None:
    state = _OUTCOMES[outcome]
    if outcome == "modified":
        delivery.local.failed = True
    if txn_id is not None:
        delivery.local.data = cast(Any, [txn_id, Described(ulong(state), [])])
        delivery.update(TRANSACTIONAL_STATE)
    else:
        delivery.update(state)
    delivery.settle()
