"""``<federation>``: receivers on the remote broker for as long as this broker has consumers.

The element reads its own broker's consumer advisories as a client (``vm://``, the way a network
bridge learns demand) and ``FederationDemand`` says which receiver each consumer needs. A
receiver takes messages from the remote and sends each into the same topic or queue here,
settling it on the remote only once this broker receipted it (so a crash or a lost connection
between the two at worst makes the remote send it again: nothing is lost). A message gets one
more hop (``_AMQ_Fed_Hops``) and the remote's name on its federation path on the way.

When the last consumer goes, the receiver stops taking, drains its credit (the remote sends what
it had under way or gives the credit back), hands on what arrived, and only then detaches: no
message is both put into this broker and released on the remote (ActiveMQ Artemis's
ARTEMIS-5215). An address receiver's link is closed, not detached, so the remote removes its
subscription; a lost connection keeps it (its ``auto-delete`` says for how long).

Remote policies go to the remote over a control link as Artemis sends them (docs/
broker-connections.md, "Federation", says what a FerryMQ remote does with them).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from proton import Message as AmqpMessage

from ferrymq.amqp import federation_codes as fc
from ferrymq.amqp.client_mapping import destination_for
from ferrymq.client import BrokerErrorFrame, Connection, connect
from ferrymq.config.broker_connections import AmqpConnectionConfig, FederationConfig
from ferrymq.connections.api import (
    ConnectionElement,
    Incoming,
    LinkSetupError,
    LocalSide,
    RemoteConnection,
    RemoteReceiver,
)
from ferrymq.connections.federation_control import send_remote_policies
from ferrymq.connections.federation_policy import (
    Demand,
    FederationDemand,
    is_wildcard,
    parse_consumer_advisory,
)
from ferrymq.connections.federation_remote import RemoteDemand, is_ferrymq
from ferrymq.connections.messages import local_for_amqp
from ferrymq.util.aio import leaf_exceptions, wait_event

__all__ = ["FederationElement", "federation_elements"]

log = logging.getLogger(__name__)

CONSUMER_ADVISORIES = "/topic/ActiveMQ.Advisory.Consumer.>"
DEFAULT_CREDIT = 1000
"""Artemis's ``amqpCredits`` default; a ``<property key="amqpCredits">`` changes it."""
RETRY_S = 2.0
"""How long a refused receiver waits before it is attached again (while its demand lasts)."""
DRAIN_TIMEOUT_S = 10.0


def federation_elements(
    connection: AmqpConnectionConfig, local: LocalSide
) -> list[ConnectionElement]:
    """The ``<federation>`` children of a connection (``connections.service``'s factory). The
    federation is named after the connection, as Artemis names it; a second ``<federation>``
    in one connection gets its position added."""
    configs = [e for e in connection.elements if isinstance(e, FederationConfig)]
    return [
        FederationElement(
            config, name=connection.name if n == 0 else f"{connection.name}.{n}", local=local
        )
        for n, config in enumerate(configs)
    ]


class FederationElement:
    """One ``<federation>`` of a broker connection (``ConnectionElement``)."""

    def __init__(self, config: FederationConfig, *, name: str, local: LocalSide) -> None:
        self.config = config
        self.name = name
        self.local = local
        policies = (*config.local_address_policies, *config.remote_address_policies)
        for policy in policies:
            if policy.enable_divert_bindings:
                log.info(
                    "federation %s, policy %s: enable-divert-bindings has no effect (FerryMQ "
                    "has no diverts: demand is the consumers of the address itself)",
                    name,
                    policy.name,
                )
        self.credit = _credit(config.properties)
        self.demand = self._demand("")
        self.receivers: dict[tuple[bool, str], FederationReceiver] = {}
        self.remote_demand: RemoteDemand | None = None
        self.received = 0

    def _demand(self, remote: str) -> FederationDemand:
        local = self.local
        return FederationDemand(
            self.config,
            federation=self.name,
            node_id=local.node_id,
            own=local.broker_name,
            remote=remote,
            address_of=local.address_of,
        )

    async def run(self, remote: RemoteConnection) -> None:
        self.demand = self._demand(remote.remote_container_id)
        config = self.config
        remote_policies = config.remote_address_policies or config.remote_queue_policies
        pushing = remote_policies and is_ferrymq(remote)
        control = None
        if remote_policies and not pushing:
            control = await send_remote_policies(remote, config, federation=self.name)
        own = await connect(self.local.vm_url, login=self.local.user, passcode=self.local.password)
        try:
            async with asyncio.TaskGroup() as tasks:
                if pushing:
                    self.remote_demand = RemoteDemand(
                        config,
                        federation=self.name,
                        node_id=self.local.node_id,
                        broker_name=self.local.broker_name,
                        remote=remote.remote_container_id,
                    )
                    tasks.create_task(self.remote_demand.run(remote, own, tasks))
                await self._follow_demand(own, remote, tasks)
        except BaseExceptionGroup as group:
            errors = leaf_exceptions(group)
            setup = [e for e in errors if isinstance(e, LinkSetupError)]
            raise (setup or errors)[0] from None  # the runtime tells a failed attempt by class
        finally:
            self.receivers.clear()
            self.demand.clear()
            with contextlib.suppress(Exception):
                await own.close()
            if control is not None:
                with contextlib.suppress(Exception):
                    await control.close()

    async def _follow_demand(
        self, own: Connection, remote: RemoteConnection, tasks: asyncio.TaskGroup
    ) -> None:
        advisories = await own.subscribe(CONSUMER_ADVISORIES, id="federation-demand")
        async for message in advisories:
            parsed = parse_consumer_advisory(message.body)
            if parsed is None:
                continue
            change = (
                self.demand.remove(parsed) if isinstance(parsed, str) else self.demand.add(parsed)
            )
            if change.opened is not None:
                receiver = FederationReceiver(self, change.opened, remote, own)
                self.receivers[change.opened.key] = receiver
                tasks.create_task(receiver.run(), name=f"federation {receiver.link_name}")
            if change.closed is not None:
                closing = self.receivers.pop(change.closed.key, None)
                if closing is not None:
                    closing.stop()
        raise ConnectionError("the connection to this broker ended")

    def statistics(self) -> dict[str, object]:
        pushed = self.remote_demand
        links = [r.statistics() for r in self.receivers.values()]
        links += pushed.statistics() if pushed is not None else []
        return {
            "type": "federation",
            "received": self.received,
            "sent": pushed.sent if pushed is not None else 0,
            "links": len(links),
            "demand": sum(int(str(link["demand"])) for link in links),
            "federation_links": links,
        }


class FederationReceiver:
    """One receiver link on the remote and the local sends it makes."""

    def __init__(
        self,
        element: FederationElement,
        demand: Demand,
        remote: RemoteConnection,
        own: Connection,
    ) -> None:
        self.element = element
        self.demand = demand
        self.remote = remote
        self.own = own
        self.link_name = element.demand.link_name(demand)
        self.destination = ("/topic/" if demand.topic else "/queue/") + demand.name
        self.wildcard = is_wildcard(demand.name)
        self.state = "attaching"
        self.received = 0
        self._stopping = asyncio.Event()
        self._unflowed = 0

    def stop(self) -> None:
        self._stopping.set()

    def statistics(self) -> dict[str, object]:
        return {
            "link": self.link_name,
            "kind": "address" if self.demand.topic else "queue",
            "name": self.demand.name,
            "policy": self.demand.policy.name,
            "demand": len(self.demand.consumers),
            "state": self.state,
            "received": self.received,
        }

    async def run(self) -> None:
        link = await self._attach()
        if link is None:
            return
        self.state = "receiving"
        # Each transfer is sent here on its own task, so one group commit serves many; they
        # are at most the link credit, and the group waits for every one before the detach.
        async with asyncio.TaskGroup() as deliveries:
            while not self._stopping.is_set():
                incoming = await self._next(link)
                if incoming is not None:
                    deliveries.create_task(self._deliver(link, incoming))
            self.state = "draining"
            await self._drain(link, deliveries)
        # Closed (not detached) only now, when the demand went: the remote removes an address
        # receiver's subscription. A connection that ends leaves it to auto-delete, and what
        # arrived unsettled goes back to the remote with the connection.
        await link.close()
        self.state = "closed"

    async def _attach(self) -> RemoteReceiver | None:
        """The link, or None when the demand went away first; a refusal is retried, since
        the remote may create the queue or grant the right later."""
        element = self.element
        options = element.demand.receiver_options(self.demand)
        while not self._stopping.is_set():
            try:
                return await self.remote.attach_receiver(options, credit=element.credit)
            except LinkSetupError as exc:
                self.state = "refused"
                log.warning(
                    "federation %s: the remote refused receiver %s: %s (retrying in %.0f s)",
                    element.name,
                    self.link_name,
                    exc,
                    RETRY_S,
                )
                await wait_event(self._stopping, RETRY_S)
        return None

    async def _next(self, link: RemoteReceiver) -> Incoming | None:
        """The next transfer, or None once the demand went away."""
        receiving = asyncio.ensure_future(link.receive())
        stopping = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait([receiving, stopping], return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            if receiving.done() and not receiving.cancelled():
                receiving.exception()  # marked seen: a cancel must not leave it unretrieved
            elif not receiving.done():
                receiving.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await receiving
        if receiving.cancelled():
            return None
        return receiving.result()

    async def _drain(self, link: RemoteReceiver, deliveries: asyncio.TaskGroup) -> None:
        """Use up the credit (the remote sends what it has under way, or gives it back), then
        hand on what came: once ``drain`` returns every such transfer has arrived."""
        try:
            await asyncio.wait_for(link.drain(), DRAIN_TIMEOUT_S)
        except TimeoutError:
            log.warning("federation %s: %s did not drain", self.element.name, self.link_name)
        while True:
            arrived = asyncio.ensure_future(link.receive())
            await asyncio.sleep(0)  # one step: a transfer already here is returned at once
            if not arrived.done():
                arrived.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await arrived
                return
            deliveries.create_task(self._deliver(link, arrived.result()))

    def _destination(self, encoded: bytes) -> str:
        """The topic or queue here: the demand's, or for a wildcard demand the message's own
        (its ``to``, which the remote set to where it was sent)."""
        if not self.wildcard:
            return self.destination
        message = AmqpMessage()
        message.decode(encoded)
        found = destination_for(message.address, 1 if self.demand.topic else 0)
        kind = "/topic/" if self.demand.topic else "/queue/"
        return found if found.startswith(kind) and not is_wildcard(found) else self.destination

    async def _deliver(self, link: RemoteReceiver, incoming: Incoming) -> None:
        """Into the local topic or queue, receipted, then settled on the remote."""
        body, headers = local_for_amqp(incoming.encoded, int(time.time() * 1000))
        headers[fc.HOPS] = str(_hops(headers.get(fc.HOPS)) + 1)
        path = headers.get(fc.FEDERATION_PATH) or "|"
        headers[fc.FEDERATION_PATH] = f"{path}{self.remote.remote_container_id}|"
        headers.pop("message-id", None)
        outcome = "accepted"
        try:
            destination = self._destination(incoming.encoded)
            await self.own.send(destination, body, headers=headers, receipt=True)
        except BrokerErrorFrame as exc:
            if self.own.closed:
                raise
            # This broker refuses this message (and only it): the remote dead-letters it.
            log.warning("federation %s: %s refused: %s", self.element.name, self.destination, exc)
            outcome = "rejected"
        link.settle(incoming.delivery, outcome)
        self.received += outcome == "accepted"
        self.element.received += outcome == "accepted"
        self._unflowed += 1
        if not self._stopping.is_set() and self._unflowed >= max(self.element.credit // 2, 1):
            link.flow(self._unflowed)
            self._unflowed = 0


def _hops(text: str | None) -> int:
    return int(text) if text is not None and text.strip().isdigit() else 0


def _credit(properties: tuple[tuple[str, str], ...]) -> int:
    for key, value in properties:
        if key == "amqpCredits" and value.strip().isdigit() and int(value) > 0:
            return int(value)
    return DEFAULT_CREDIT
