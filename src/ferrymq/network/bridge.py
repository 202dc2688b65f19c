"""One direction of a network bridge: ActiveMQ's ``DemandForwardingBridge`` (reference §4).

It reads the consumer advisories of the broker messages go to (the *target*), keeps a
``DemandTable`` of them, opens a demand subscription on the broker messages come from (the
*source*) for each demand, and forwards what those subscriptions receive. Both brokers are
reached through the client library, so a bridge touches neither broker's memory: the local
broker over ``vm://``, the remote one over the connector's URI. A duplex connector runs two of
these over the same two connections, one each way (seed 001 Figure 2.3).

A forwarded message keeps its message id, priority, expiry, timestamp and properties, gains the
source broker's id at the end of ``JMSActiveMQBrokerPath``, and is acknowledged on the source
only after the target receipted it (persistently, for a persistent message): a bridge that dies
mid-flight leaves the message on the source, which gives it to the next bridge, and the
target's duplicate detection drops the copy it may already hold (the ``ferrymq.producer-
message-id`` of a forwarded message is the producer's own, so even a producer's failover re-send
that reached two brokers is stored once).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

from ferrymq.client import Connection, Message, Subscription
from ferrymq.config.network import NetworkConnectorConfig
from ferrymq.network.advisories import (
    CONSUMER_ADVISORIES,
    AdvisoryError,
    RemoteConsumer,
    RemovedConsumer,
    RemovedSubscription,
    parse_consumer_advisory,
    stomp_name,
)
from ferrymq.network.demand import Demand, DemandTable
from ferrymq.network.routes import RouteRegistry
from ferrymq.stomp import constants as h

log = logging.getLogger(__name__)


class BridgeFailedError(Exception):
    """The bridge cannot go on (a connection or subscription ended); the connector rebuilds it."""


@dataclass(eq=False, slots=True)
class _Forward:
    message: Message
    done: bool = False


@dataclass(eq=False)
class _OpenDemand:
    demand: Demand
    subscription: Subscription
    pump: asyncio.Task[None] | None = None
    acker: asyncio.Task[None] | None = None
    in_flight: set[asyncio.Task[None]] = field(default_factory=set)
    order: deque[_Forward] = field(default_factory=deque)
    """Forwards in delivery order; the acker acknowledges the finished front of it."""
    settled: asyncio.Event = field(default_factory=asyncio.Event)
    closing: bool = False


class DemandForwardingBridge:
    """Messages from ``source`` to ``target``, for the consumers the target advertises."""

    def __init__(
        self,
        config: NetworkConnectorConfig,
        *,
        source: Connection,
        target: Connection,
        source_broker_id: str,
        target_broker_id: str,
        routes: RouteRegistry | None = None,
        direction: str = "outbound",
        durable_prefix: str | None = None,
    ) -> None:
        self.config = config
        self.source = source
        self.target = target
        self.source_broker_id = source_broker_id
        self.target_broker_id = target_broker_id
        self.direction = direction
        self.table = DemandTable(
            config,
            local_broker_id=source_broker_id,
            remote_broker_id=target_broker_id,
            durable_prefix=durable_prefix,
        )
        self._routes = routes if config.suppress_duplicate_queue_subscriptions else None
        self._actions: asyncio.Queue[tuple[bool, Demand, bool]] = asyncio.Queue()
        self._open: dict[str, _OpenDemand] = {}
        self._ids = itertools.count(1)
        self._group: asyncio.TaskGroup | None = None
        self.forwarded = 0
        self.advisories = 0

    @property
    def demand_subscriptions(self) -> list[Demand]:
        return [o.demand for o in self._open.values()]

    async def run(self) -> None:
        """Forward until cancelled; raises ``BridgeFailedError`` (or the connection's error) when a
        connection is lost."""
        try:
            async with asyncio.TaskGroup() as group:
                self._group = group
                for demand in [*self.table.static_demands(), *self.table.durable_demands()]:
                    self._request(demand, open_=True)
                group.create_task(self._apply_actions())
                if not self.config.static_bridge:
                    prefetch = self.config.advisory_prefetch_size or self.config.prefetch_size
                    advisories = await self.target.subscribe(
                        CONSUMER_ADVISORIES, prefetch=prefetch, id=f"advisories-{self.direction}"
                    )
                    group.create_task(self._read_advisories(advisories))
        finally:
            self._group = None
            if self._routes is not None:
                self._routes.forget_owner(self)

    # -- demand -----------------------------------------------------------------------------

    async def _read_advisories(self, subscription: Subscription) -> None:
        async for message in subscription:
            self.advisories += 1
            try:
                event = parse_consumer_advisory(message.body)
            except AdvisoryError as exc:
                log.warning("%s: ignoring a consumer advisory: %s", self._label, exc)
                continue
            if isinstance(event, RemoteConsumer):
                change = self.table.add(event)
                if change.opened is not None:
                    self._request(change.opened, open_=True)
            elif isinstance(event, RemovedConsumer):
                change = self.table.remove(event.consumer_id)
                if change.closed is not None:
                    self._request(change.closed, open_=False, destroy=change.destroy)
            elif isinstance(event, RemovedSubscription):
                change = self.table.remove_subscription(event.client_id, event.subscription_name)
                if change.closed is not None:
                    self._request(change.closed, open_=False, destroy=change.destroy)
        raise BridgeFailedError(f"{self._label}: the consumer advisories ended")

    def _request(self, demand: Demand, *, open_: bool, destroy: bool = False) -> None:
        routes = self._routes
        if routes is not None and demand.destination.is_queue and not demand.static:
            if open_:
                if not routes.claim(self, demand):
                    return  # suppressed: another route serves these consumers
            else:
                routes.release(self, demand)
        self._actions.put_nowait((open_, demand, destroy))

    def open_route(self, demand: Demand) -> None:
        """The route registry reopens a route that was suppressed."""
        if demand.key in self.table.demands:
            self._actions.put_nowait((True, demand, False))

    def close_route(self, demand: Demand) -> None:
        """The route registry closes a route that a better one replaces."""
        self._actions.put_nowait((False, demand, False))

    async def _apply_actions(self) -> None:
        while True:
            open_, demand, destroy = await self._actions.get()
            if open_:
                if demand.key not in self._open:
                    await self._subscribe(demand)
            else:
                opened = self._open.get(demand.key)
                if opened is not None and opened.demand is demand:
                    await self._unsubscribe(opened, destroy=destroy)

    async def _subscribe(self, demand: Demand) -> None:
        config = self.config
        headers = {
            h.FERRYMQ_NETWORK_SUBSCRIPTION: "true",
            h.FERRYMQ_CONSUMER_PATH: ",".join(demand.broker_path),
            h.FERRYMQ_FORWARD_TO: self.target_broker_id,
            h.FERRYMQ_MESSAGE_TTL: str(config.message_ttl),
        }
        if demand.original_ids:
            headers[h.FERRYMQ_NETWORK_CONSUMER_IDS] = ",".join(demand.original_ids)
        if not demand.static:
            excluded, included = self.table.filter.patterns()
            if excluded:
                headers[h.FERRYMQ_NETWORK_EXCLUDED] = excluded
            if included:
                headers[h.FERRYMQ_NETWORK_INCLUDED] = included
        demand.subscription_id = f"demand-{self.direction}-{next(self._ids)}"
        subscription = await self.source.subscribe(
            stomp_name(demand.destination),
            selector=demand.selector,
            # Cumulative: one ACK covers every forward finished in order (a group commit on
            # the target receipts many at once).
            ack=h.ACK_CLIENT,
            prefetch=config.prefetch_size,
            priority=demand.priority,
            id=demand.subscription_id,
            durable_name=demand.durable_name,
            headers=headers,
        )
        assert self._group is not None
        opened = _OpenDemand(demand, subscription)
        opened.pump = self._group.create_task(self._pump(opened))
        opened.acker = self._group.create_task(self._acknowledge(opened))
        self._open[demand.key] = opened

    async def _unsubscribe(self, opened: _OpenDemand, *, destroy: bool = False) -> None:
        """Stop taking messages, let the forwards under way finish (their acks name this
        subscription), then remove it; what it still held goes back to the source's queue."""
        del self._open[opened.demand.key]
        if opened.pump is not None:
            opened.pump.cancel()
            # wait(), not a suppressed await: that swallowed the cancellation of this task too
            # when the bridge stopped meanwhile, and the bridge's stop then hung.
            await asyncio.wait({opened.pump})
        if opened.in_flight:
            await asyncio.wait(opened.in_flight)
        opened.closing = True
        opened.settled.set()
        if opened.acker is not None:
            await asyncio.wait({opened.acker})
        await opened.subscription.unsubscribe(durable=destroy)

    # -- forwarding ---------------------------------------------------------------------------

    async def _pump(self, opened: _OpenDemand) -> None:
        group = self._group
        assert group is not None
        async for message in opened.subscription:
            forward = _Forward(message)
            opened.order.append(forward)
            task = group.create_task(self._forward(opened, forward))
            opened.in_flight.add(task)
            task.add_done_callback(opened.in_flight.discard)
        if opened.demand.key in self._open:
            raise BridgeFailedError(f"{self._label}: demand subscription {opened.demand.key} ended")

    async def _forward(self, opened: _OpenDemand, forward: _Forward) -> None:
        message = forward.message
        headers = forwarded_headers(message.headers, self.source_broker_id, opened.demand)
        sync = self.config.always_sync_send or headers.get(h.PERSISTENT) == "true"
        await self.target.send(message.destination, message.body, headers=headers, receipt=sync)
        forward.done = True
        opened.settled.set()
        opened.demand.forwarded += 1
        self.forwarded += 1

    async def _acknowledge(self, opened: _OpenDemand) -> None:
        """The only writer of this subscription's ACKs, so they go out in order: each covers
        the forwards finished so far without a gap (a forward still waiting for its receipt
        holds back the ACK of every later one)."""
        order = opened.order
        while True:
            await opened.settled.wait()
            opened.settled.clear()
            last = None
            while order and order[0].done:
                last = order.popleft().message
            if last is not None:
                await last.ack()
            if opened.closing:
                return

    @property
    def _label(self) -> str:
        return f"bridge {self.config.name} {self.source_broker_id}->{self.target_broker_id}"


def forwarded_headers(
    headers: Mapping[str, str], source_broker_id: str, demand: Demand
) -> dict[str, str]:
    """The SEND headers that carry a delivered message on to the next broker."""
    out = {k: v for k, v in headers.items() if k not in h.DELIVERY_HEADERS}
    path = headers.get(h.BROKER_PATH)
    out[h.BROKER_PATH] = f"{path},{source_broker_id}" if path else source_broker_id
    key = headers.get(h.FERRYMQ_PRODUCER_MESSAGE_ID) or (
        f"{source_broker_id}:{headers.get(h.MESSAGE_ID, '')}"
    )
    if demand.destination.is_topic and not demand.key.startswith("conduit:"):
        # Without conduit subscriptions every consumer's route carries its own copy of a
        # topic message (seed 001 Figure 2.5): the copies must not count as duplicates.
        key = f"{key}#{demand.key}"
    out[h.FERRYMQ_PRODUCER_MESSAGE_ID] = key
    return out
