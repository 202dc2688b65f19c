"""Remote policies against a FerryMQ remote: the remote's demand, served from here.

A remote policy says: when the remote broker has consumers on a matching address or queue, it
gets this broker's messages for them. ActiveMQ Artemis sends the policy over a control link and
the remote opens receivers back over the same connection (``federation_control``). A FerryMQ
remote does not open links toward the broker that connected to it; instead this broker does the
remote's part over the same connection: it reads the remote's consumer advisories (a receiver
on ``topic://ActiveMQ.Advisory.Consumer.>``), runs the remote policies on them with the same
rules as local demand (``FederationDemand``: federation consumers are no demand, priorities,
include/exclude), and for each demand consumes here and sends to the remote's topic or queue,
acknowledging here only once the remote accepted.

Loop freedom is the pull side's: a message whose federation path names the remote, or that
made ``max-hops`` hops, is not pushed (the consumer here has the same selector); what is pushed
carries one more hop and this broker's name on its path. The consumer here is marked as a
federation consumer (``activemq.federation``), so this broker's own federation ignores it, and
it is not durable: ``auto-delete`` has nothing to remove here (the queue lives only while the
remote's demand does).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from proton import Message as AmqpMessage

from ferrymq.amqp import federation_codes as fc
from ferrymq.amqp.client_mapping import address_for
from ferrymq.client import Connection, Message, Subscription
from ferrymq.config.broker_connections import FederationAddressPolicy, FederationConfig
from ferrymq.connections.api import LinkOptions, LinkSetupError, RemoteConnection, RemoteSender
from ferrymq.connections.federation_policy import (
    Demand,
    FederationDemand,
    address_selector,
    format_path,
    is_wildcard,
    parse_consumer_advisory,
)
from ferrymq.connections.messages import amqp_for_local
from ferrymq.stomp import constants as h
from ferrymq.util.aio import wait_event

__all__ = ["RemoteDemand", "is_ferrymq"]

log = logging.getLogger(__name__)

REMOTE_ADVISORIES = "topic://ActiveMQ.Advisory.Consumer.>"
ADVISORY_CREDIT = 100
PREFETCH = 100
"""Messages pushed at once (each waits for the remote's settlement before its ack here)."""
RETRY_S = 2.0


def is_ferrymq(remote: RemoteConnection) -> bool:
    """The remote said it is a FerryMQ broker in its open (``product``)."""
    return str(remote.remote_properties.get("product", "")) == "FerryMQ"


class RemoteDemand:
    """The remote policies of one federation on one connection to a FerryMQ remote."""

    def __init__(
        self,
        config: FederationConfig,
        *,
        federation: str,
        node_id: str,
        broker_name: str,
        remote: str,
    ) -> None:
        # The remote's demand, seen from the remote: its own name, and this broker's.
        self.demand = FederationDemand(
            FederationConfig(
                local_address_policies=config.remote_address_policies,
                local_queue_policies=config.remote_queue_policies,
            ),
            federation=federation,
            node_id=node_id,
            own=remote,
            remote=broker_name,
        )
        self.federation = federation
        self.broker_name = broker_name
        self.pushers: dict[tuple[bool, str], FederationPusher] = {}
        self.sent = 0

    async def run(
        self, remote: RemoteConnection, own: Connection, tasks: asyncio.TaskGroup
    ) -> None:
        link = await remote.attach_receiver(
            LinkOptions(
                name=f"federation.{self.federation}.remote-demand.node.{self.demand.node_id}",
                source=REMOTE_ADVISORIES,
                source_capabilities=("topic",),
            ),
            credit=ADVISORY_CREDIT,
        )
        try:
            while True:
                incoming = await link.receive()
                self._advised(incoming.encoded, remote, own, tasks)
                link.settle(incoming.delivery, "accepted")
                link.flow(1)
        finally:
            self.pushers.clear()
            self.demand.clear()
            with contextlib.suppress(Exception):
                await link.close()

    def _advised(
        self, encoded: bytes, remote: RemoteConnection, own: Connection, tasks: asyncio.TaskGroup
    ) -> None:
        message = AmqpMessage()
        message.decode(encoded)
        body = message.body
        if isinstance(body, str):
            body = body.encode()
        if not isinstance(body, bytes | bytearray | memoryview):
            return
        parsed = parse_consumer_advisory(bytes(body))
        if parsed is None:
            return
        change = self.demand.remove(parsed) if isinstance(parsed, str) else self.demand.add(parsed)
        if change.opened is not None:
            pusher = FederationPusher(self, change.opened, remote, own)
            self.pushers[change.opened.key] = pusher
            tasks.create_task(pusher.run(), name=f"federation {pusher.link_name}")
        if change.closed is not None:
            closing = self.pushers.pop(change.closed.key, None)
            if closing is not None:
                closing.stop()

    def statistics(self) -> list[dict[str, object]]:
        return [p.statistics() for p in self.pushers.values()]


class FederationPusher:
    """One remote demand: a consumer here, a sender link to the remote."""

    def __init__(
        self, owner: RemoteDemand, demand: Demand, remote: RemoteConnection, own: Connection
    ) -> None:
        self.owner = owner
        self.demand = demand
        self.remote = remote
        self.own = own
        self.link_name = owner.demand.link_name(demand)
        kind = "topic" if demand.topic else "queue"
        self.address = f"{kind}://{demand.name}"
        self.destination = f"/{kind}/{demand.name}"
        self.state = "attaching"
        self.sent = 0
        self._stopping = asyncio.Event()

    def stop(self) -> None:
        self._stopping.set()

    def statistics(self) -> dict[str, object]:
        return {
            "link": self.link_name,
            "kind": "remote-address" if self.demand.topic else "remote-queue",
            "name": self.demand.name,
            "policy": self.demand.policy.name,
            "demand": len(self.demand.consumers),
            "state": self.state,
            "sent": self.sent,
        }

    async def _subscribe(self) -> Subscription:
        """The consumer here, marked as a federation consumer with its demand path; for an
        address, with the selector an address receiver has; for a queue, at the receiver's
        priority."""
        policy = self.demand.policy
        mark = {fc.FEDERATION_CONSUMER: format_path(self.owner.demand.demand_path(self.demand))}
        if isinstance(policy, FederationAddressPolicy):
            selector = address_selector(policy.max_hops, self.remote.remote_container_id)
            return await self.own.subscribe(
                self.destination,
                ack=h.ACK_CLIENT_INDIVIDUAL,
                prefetch=PREFETCH,
                id=self.link_name,
                headers=mark,
                selector=selector,
            )
        return await self.own.subscribe(
            self.destination,
            ack=h.ACK_CLIENT_INDIVIDUAL,
            prefetch=PREFETCH,
            id=self.link_name,
            headers=mark,
            priority=self.demand.priority,
        )

    async def run(self) -> None:
        sender = await self._attach()
        if sender is None:
            return
        subscription = await self._subscribe()
        self.state = "sending"
        try:
            # One task per message (at most the prefetch), each acknowledged here when the
            # remote accepted it; all are settled before the link goes.
            async with asyncio.TaskGroup() as pushes:
                while not self._stopping.is_set():
                    message = await self._next(subscription)
                    if message is not None:
                        pushes.create_task(self._push(sender, message))
        finally:
            self.state = "closed"
            with contextlib.suppress(Exception):
                await subscription.unsubscribe(receipt=False)
            with contextlib.suppress(Exception):
                await sender.close()

    async def _attach(self) -> RemoteSender | None:
        """The sender, or None when the demand went first; a refusal is retried."""
        options = self._link_options()
        while not self._stopping.is_set():
            try:
                return await self.remote.attach_sender(options)
            except LinkSetupError as exc:
                self.state = "refused"
                log.warning(
                    "federation %s: the remote refused sender %s: %s (retrying in %.0f s)",
                    self.owner.federation,
                    self.link_name,
                    exc,
                    RETRY_S,
                )
                await wait_event(self._stopping, RETRY_S)
        return None

    def _link_options(self) -> LinkOptions:
        return LinkOptions(
            name=self.link_name,
            # A wildcard demand: the anonymous relay, each message to its own ``to``.
            target=None if is_wildcard(self.demand.name) else self.address,
            properties={
                fc.FEDERATION_NAME: self.owner.federation,
                fc.POLICY_NAME: self.demand.policy.name,
            },
        )

    async def _next(self, subscription: Subscription) -> Message | None:
        received = asyncio.ensure_future(subscription.get())
        stopping = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait([received, stopping], return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            if received.done() and not received.cancelled():
                received.exception()  # marked seen: a cancel must not leave it unretrieved
            elif not received.done():
                received.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await received
        if received.cancelled():
            return None
        return received.result()

    async def _push(self, sender: RemoteSender, message: Message) -> None:
        """To the remote, then acknowledged here: not acknowledged, it comes back here."""
        headers = message.headers
        hops = headers.get(fc.HOPS, "0")
        path = headers.get(fc.FEDERATION_PATH) or "|"
        message.headers[fc.HOPS] = str(int(hops) + 1 if hops.isdigit() else 1)
        message.headers[fc.FEDERATION_PATH] = f"{path}{self.owner.broker_name}|"
        address = self.address
        if is_wildcard(self.demand.name):  # each message goes to its own topic or queue there
            address = address_for(message.destination) if message.destination else address
        outcome = await sender.send(amqp_for_local(message, address))
        if outcome.accepted:
            await message.ack()
            self.sent += 1
            self.owner.sent += 1
            return
        log.warning(
            "federation %s: the remote refused a message for %s (%s %s)",
            self.owner.federation,
            self.address,
            outcome.outcome,
            outcome.description,
        )
        await message.nack()
