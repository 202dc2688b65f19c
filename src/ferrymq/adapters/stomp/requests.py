"""An application client's STOMP frames as core commands (ActiveMQ's StompProtocolConverter).

Each frame becomes one command on the region broker; its RECEIPT is queued at once, waiting for
the store write the command needed (``Outcome.needs_commit``), so receipts keep frame order and
a receipt is never sent for something the store does not yet hold.  How headers become a message
or a consumer is ``dialect``'s and ``subscribe``'s business.
"""

from __future__ import annotations

from collections.abc import Sequence

from ferrymq.adapters.stomp import dialect
from ferrymq.adapters.stomp.base import StompLink
from ferrymq.adapters.stomp.subscribe import consumer_from_subscribe
from ferrymq.core.consumer import Consumer
from ferrymq.core.destination import Destination
from ferrymq.core.errors import BrokerError
from ferrymq.core.message import MessageId
from ferrymq.core.outcome import ACCEPTED, Outcome
from ferrymq.core.region import AckRef
from ferrymq.stomp import constants as h
from ferrymq.stomp.events import (
    Abort,
    Ack,
    Begin,
    Commit,
    Connect,
    Disconnect,
    Nack,
    Send,
    Subscribe,
    Unsubscribe,
)


class ClientRequests:
    """SEND, SUBSCRIBE, ACK/NACK, UNSUBSCRIBE and transactions of a CONNECTed client."""

    def __init__(self, link: StompLink) -> None:
        self.link = link
        self.connection = link.connection
        self.region = link.connection.region
        self.connection_id = link.connection.connection_id
        self._browsers: set[str] = set()

    def handle(self, event: object) -> bool:
        match event:
            case Send():
                return self._on_send(event)
            case Ack() | Nack():
                self._on_ack(event)
            case Subscribe():
                self._on_subscribe(event)
            case Unsubscribe():
                self._on_unsubscribe(event)
            case Begin():
                outcome = self.region.begin(self.connection_id, event.transaction)
                self._confirm(outcome, event.receipt)
            case Commit():
                outcome = self.region.commit(self.connection_id, event.transaction)
                self._confirm(outcome, event.receipt)
            case Abort():
                outcome = self.region.abort(self.connection_id, event.transaction)
                self._confirm(outcome, event.receipt)
            case Connect():
                self.link.on_connect(event)
            case Disconnect():
                self.link.on_disconnect(event)
            case _:
                pass  # heart-beat: its arrival already counted as activity
        return False

    def ended(self) -> None:
        pass

    def _confirm(self, outcome: Outcome, receipt: str | None) -> None:
        """A refused command fails with its ERROR (the connection reports it, with this
        frame's receipt id); an accepted one gets its RECEIPT, after its store write."""
        if outcome.refused is not None:
            raise outcome.refused
        self.link.receipt(receipt, needs_commit=outcome.needs_commit)

    # -- hooks a network bridge's connection changes ------------------------------------------

    forwards = False
    """A network bridge's connection: forwarded messages keep their ids, and the bridge may
    name another broker's temporary destinations (checked as a flag on the per-message path)."""

    def forwarded_id(self, event: Send) -> str | None:
        """The message id to keep (a message forwarded by a bridge keeps its own)."""
        return None

    def mirror_temporaries(self, destinations: Sequence[Destination]) -> None:
        """A bridge may name another broker's temporary destinations."""

    def make_demand(self, consumer: Consumer, headers: dict[str, str]) -> None:
        """A bridge's demand subscription (``network.BridgeRequests``)."""

    def gate_advisories(self, consumer: Consumer) -> None:
        """A bridge's advisory subscription hears only of demand it may serve."""

    # -- the frames ---------------------------------------------------------------------------

    def _destinations(self, text: str, *, single: bool = False) -> tuple[Destination, ...]:
        destinations, created = dialect.parse_destinations(text, self.link.names)
        if single and len(destinations) != 1:
            raise BrokerError("SUBSCRIBE to a composite destination is not supported yet")
        for destination in created:
            self.region.create_temporary(self.connection_id, destination)
        if self.forwards:
            self.mirror_temporaries(destinations)
        return destinations

    def _on_send(self, event: Send) -> bool:
        region = self.region
        names = self.link.names
        destinations, created = dialect.parse_destinations(event.destination, names)
        for destination in created:
            region.create_temporary(self.connection_id, destination)
        message_id = None
        if self.forwards:
            self.mirror_temporaries(destinations)
            message_id = self.forwarded_id(event)
        message = dialect.message_from_send(
            MessageId(message_id) if message_id is not None else region.new_message_id(),
            event.headers,
            event.body,
            destinations,
            region.now_ms,
            names,
        )
        blocked = region.producer_blocked(message)
        if blocked is not None:
            if self.link.service.send_fail_if_no_space:
                raise BrokerError(
                    f"Usage Manager {blocked.capitalize()} is Full. Stopping producer "
                    f"({self.connection_id}) to prevent flooding {event.destination}.",
                    fatal=False,
                )
            return True
        outcome = region.send(self.connection_id, message, destinations, event.transaction)
        if outcome.refused is not None:
            raise outcome.refused
        if event.receipt is not None:
            self.link.receipt(event.receipt, needs_commit=outcome.needs_commit)
        return False

    def _on_ack(self, event: Ack | Nack) -> None:
        if self.link.version == h.V1_2:
            ref = AckRef(ack_id=event.id)
        else:
            ref = AckRef(message_id=event.message_id, subscription_id=event.subscription)
        if isinstance(event, Nack):
            outcome = self.region.nack(self.connection_id, ref, event.transaction)
        else:
            outcome = self.region.acknowledge(self.connection_id, ref, event.transaction)
        if outcome.refused is not None:  # ``_confirm``, spelled out: an ACK per message
            raise outcome.refused
        if event.receipt is not None:
            self.link.receipt(event.receipt, needs_commit=outcome.needs_commit)

    def _on_subscribe(self, event: Subscribe) -> None:
        destinations = self._destinations(event.destination, single=True)
        consumer = consumer_from_subscribe(
            event, destinations[0], self.connection_id, self.link.version
        )
        if event.headers.get(h.FERRYMQ_NETWORK_SUBSCRIPTION) == "true":
            self.make_demand(consumer, event.headers)
        elif self.forwards and consumer.destination.is_advisory:
            self.gate_advisories(consumer)
        self.link.renderer.subscribed(consumer.subscription_id, has_id=event.id is not None)
        if consumer.browser:
            self._browse(event, consumer)
            return
        outcome = self.region.subscribe(consumer, start=False)
        self._confirm(outcome, event.receipt)
        self.region.start_consumer(consumer)

    def _browse(self, event: Subscribe, consumer: Consumer) -> None:
        # A browser is not a consumer of the queue, but its id is taken until UNSUBSCRIBE, as in
        # ActiveMQ (testQueueBrowerSubscription subscribes again with the same id).
        subscription_id = consumer.subscription_id
        state = self.region.connections.get(self.connection_id)
        if subscription_id in self._browsers or (
            state is not None and subscription_id in state.consumers
        ):
            raise BrokerError(f"subscription id {subscription_id!r} is already in use")
        refusal = self.region.authorize_browse(consumer).refused
        if refusal is not None:
            raise refusal
        self._browsers.add(subscription_id)
        self.link.receipt(event.receipt)
        self.link.service.browse(self.connection, consumer)

    def _on_unsubscribe(self, event: Unsubscribe) -> None:
        region = self.region
        if event.id is not None and event.id in self._browsers:
            self._browsers.discard(event.id)
            self.link.receipt(event.receipt)
            return
        state = region.connections.get(self.connection_id)
        outcome = ACCEPTED
        if event.subscription_name is not None:
            outcome = region.destroy_durable(self.connection_id, event.subscription_name)
        elif event.id is not None:
            outcome = region.unsubscribe(self.connection_id, event.id)
        elif state is not None and event.destination is not None:
            target = f"/subscription-to/{event.destination}"
            if target not in state.consumers:
                destinations, _ = dialect.parse_destinations(event.destination, self.link.names)
                target = next(
                    (sid for sid, c in state.consumers.items() if c.destination in destinations),
                    target,
                )
            outcome = region.unsubscribe(self.connection_id, target)
        self._confirm(outcome, event.receipt)
