"""Links on which the broker sends: a client's consumers, queue browsers, durable subscribers.

A sender link is a core ``Consumer`` whose window is the link's credit (``credit_mode``): the
client's flow grants it, every transfer uses it up, an acknowledgement gives nothing back. The
link's source says what it consumes, as ActiveMQ 5 reads it (``addressing``): an address or a
dynamic node (a temporary queue or topic), a selector (``apache.org:selector-filter:string``),
no-local (``apache.org:no-local-filter:list``), distribution-mode copy (a queue browser), and for
a topic a durable terminus that never expires (a durable subscription named by the link, for the
client id that is the connection's container-id). The client's outcome for each delivery
settles it on the core's rules (``OUTCOMES``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import proton

from ferrymq.adapters.amqp import addressing
from ferrymq.adapters.amqp.base import AmqpSide, capabilities_of, data_object, remote_data
from ferrymq.adapters.amqp.errors import AmqpError
from ferrymq.adapters.amqp.mapping import amqp_from_message, message_tail
from ferrymq.amqp import codes
from ferrymq.core.consumer import AckMode, Consumer
from ferrymq.core.destination import Destination, DestinationType
from ferrymq.core.effects import Delivery
from ferrymq.core.message import Message
from ferrymq.core.region import AckRef, Settlement
from ferrymq.core.selector import SelectorError, parse_selector

CACHED_TAIL_LIMIT = 64 * 1024
"""A message shared by several subscriptions keeps its rendered sections up to this body size
(above it the copy would cost more memory than rendering again costs time)."""


@dataclass(slots=True)
class SenderLink:
    link: proton.Link
    consumer: Consumer
    presettled: bool
    browse_done: bool = False
    draining: bool = False
    tags: dict[str, proton.Delivery] = field(default_factory=dict)


class Senders:
    """The sender links of one connection, by subscription id."""

    def __init__(self, converter: AmqpSide) -> None:
        self.converter = converter
        self.region = converter.region
        self.connection_id = converter.connection_id
        self.by_subscription: dict[str, SenderLink] = {}
        self._dynamic = 0

    @staticmethod
    def subscription_id(link: proton.Link) -> str:
        return f"amqp:{link.name}"

    # -- attach -------------------------------------------------------------------------------

    def attach(self, link: proton.Link) -> None:
        source = link.remote_source
        if link.remote_rcv_settle_mode == proton.Link.RCV_SECOND:
            raise AmqpError(
                codes.NOT_IMPLEMENTED,
                "exactly-once delivery (rcv-settle-mode second) is not supported; "
                "use at-least-once (first) or at-most-once (pre-settled)",
            )
        destination, address, options = self._source_destination(link, source)
        consumer = self._consumer(link, source, destination, options)
        link.source.copy(source)
        link.source.address = address
        link.target.copy(link.remote_target)
        link.snd_settle_mode = link.remote_snd_settle_mode
        presettled = link.remote_snd_settle_mode == proton.Link.SND_SETTLED
        state = SenderLink(link, consumer, presettled)
        if consumer.browser:
            self._browse(state)
            return
        outcome = self.region.subscribe(consumer, start=False)
        if outcome.refused is not None:
            raise outcome.refused
        self.by_subscription[consumer.subscription_id] = state
        link.open()
        self.converter.flush()
        self.region.start_consumer(consumer)
        if link.credit > 0:
            self.credit(link)

    def _source_destination(
        self, link: proton.Link, source: proton.Terminus
    ) -> tuple[Destination, str, addressing.ConsumerOptions]:
        capabilities = capabilities_of(data_object(source.capabilities))
        no_options = addressing.ConsumerOptions()
        if source.dynamic:
            return (*self._dynamic_node(capabilities), no_options)
        address = source.address
        if not address:
            durable = self._existing_durable(link)
            if durable is None:
                raise AmqpError(
                    codes.NOT_FOUND,
                    f"no durable subscription {link.name!r} for client id "
                    f"{self.converter.client_id!r}, and the link names no source address",
                )
            return durable, addressing.address_for(durable), no_options
        name, options = addressing.consumer_address(address)
        return addressing.destination_for(name, capabilities), address, options

    def _dynamic_node(self, capabilities: set[str]) -> tuple[Destination, str]:
        self._dynamic += 1
        kind = (
            DestinationType.TEMP_TOPIC
            if codes.TEMPORARY_TOPIC in capabilities or codes.TOPIC in capabilities
            else DestinationType.TEMP_QUEUE
        )
        name, _ = self.converter.names.physical(kind, f"dynamic-{self._dynamic}")
        destination = Destination(kind, name)
        self.region.create_temporary(self.connection_id, destination)
        return destination, addressing.address_for(destination)

    def _existing_durable(self, link: proton.Link) -> Destination | None:
        client_id = self.converter.client_id
        if client_id is None:
            return None
        subscription = self.region.subscriptions.durable(client_id, link.name)
        return None if subscription is None else subscription.destination

    def _consumer(
        self,
        link: proton.Link,
        source: proton.Terminus,
        destination: Destination,
        options: addressing.ConsumerOptions,
    ) -> Consumer:
        filters = data_object(source.filter)
        selector_text, no_local = _filters(filters)
        selector = None
        if selector_text:
            try:
                selector = parse_selector(selector_text)
            except SelectorError as exc:
                raise AmqpError(codes.INVALID_FIELD, f"bad selector: {exc}") from None
        browser = (
            source.distribution_mode == proton.Terminus.DIST_MODE_COPY and not destination.is_topic
        )
        durable = (
            destination.is_topic
            and source.durability != proton.Terminus.NONDURABLE
            and source.expiry_policy == proton.Terminus.EXPIRE_NEVER
        )
        if durable and self.converter.client_id is None:
            raise AmqpError(codes.INVALID_FIELD, "a durable subscription needs a container-id")
        presettled = link.remote_snd_settle_mode == proton.Link.SND_SETTLED
        consumer = Consumer(
            self.connection_id,
            self.subscription_id(link),
            destination,
            ack_mode=AckMode.AUTO if presettled else AckMode.CLIENT_INDIVIDUAL,
            prefetch=0,
            selector=selector,
            priority=options.priority,
            exclusive=options.exclusive,
            no_local=no_local,
            browser=browser,
            durable_name=link.name if durable else None,
            acks_by_message_id=False,
        )
        consumer.credit_mode = True
        return consumer

    def _browse(self, state: SenderLink) -> None:
        consumer = state.consumer
        refusal = self.region.authorize_browse(consumer).refused
        if refusal is not None:
            raise refusal
        self.by_subscription[consumer.subscription_id] = state
        state.link.open()
        self.converter.flush()
        self.converter.service.browse(self.converter.connection, consumer)

    # -- credit and outcomes ------------------------------------------------------------------

    def credit(self, link: proton.Link) -> None:
        state = self.by_subscription.get(self.subscription_id(link))
        if state is None:
            return
        if state.consumer.browser:
            if link.drain_mode and state.browse_done:
                link.drained()
                self.converter.flush()
            return
        outcome = self.region.control_consumer(
            self.connection_id, state.consumer.subscription_id, max(link.credit, 0)
        )
        if outcome.refused is not None:
            raise outcome.refused
        state.draining = link.drain_mode

    def finish_drains(self) -> None:
        """After the core dispatched what it could: a draining link that got less than its
        credit has nothing more, so its credit is used up (AMQP's drain)."""
        for state in self.by_subscription.values():
            if state.draining and state.consumer.has_capacity:
                state.draining = False
                state.link.drained()
                self.converter.flush()

    def settled(self, delivery: proton.Delivery) -> None:
        link = delivery.link
        state = self.by_subscription.get(self.subscription_id(link))
        tag = _tag(delivery.tag)
        if state is None or state.presettled:
            delivery.settle()
            return
        settlement, transaction = _settlement(delivery)
        if settlement is None:
            return  # a non-terminal state (received): wait for the outcome
        state.tags.pop(tag, None)
        outcome = self.region.settle(
            self.connection_id, AckRef(ack_id=tag), transaction, settlement
        )
        delivery.settle()
        if outcome.refused is not None and transaction is not None:
            raise outcome.refused
        self.converter.flush(needs_commit=outcome.needs_commit)

    # -- detach -------------------------------------------------------------------------------

    def detach(self, link: proton.Link, *, closed: bool) -> None:
        state = self.by_subscription.pop(self.subscription_id(link), None)
        if state is not None and not state.consumer.browser:
            consumer = state.consumer
            self.region.unsubscribe(self.connection_id, consumer.subscription_id)
            if closed and consumer.durable_name is not None:
                self.region.destroy_durable(self.connection_id, consumer.durable_name)
        elif state is None and closed and self.converter.client_id is not None:
            # Qpid JMS unsubscribes by attaching to the subscription and closing the link.
            self.region.destroy_durable(self.connection_id, link.name)
        if closed:
            link.close()
        else:
            link.detach()
        self.converter.flush()

    def forget(self, link: proton.Link) -> None:
        self.by_subscription.pop(self.subscription_id(link), None)

    # -- frames out ---------------------------------------------------------------------------

    def render(self, delivery: Delivery) -> bytes:
        state = self.by_subscription.get(delivery.consumer.subscription_id)
        if state is None:
            return b""
        entry = delivery.entry
        return self._send(state, entry.message, entry.redelivery_count, delivery.ack_id)

    def render_browsed(self, consumer: Consumer, message: Message) -> bytes:
        state = self.by_subscription.get(consumer.subscription_id)
        if state is None:
            return b""
        return self._send(state, message, message.redelivery_count, None, presettle=True)

    def browse_ended(self, consumer: Consumer) -> bytes:
        state = self.by_subscription.get(consumer.subscription_id)
        if state is None:
            return b""
        state.browse_done = True
        link = state.link
        if link.drain_mode:
            link.drained()
        return self.converter.engine.output()

    def _send(
        self,
        state: SenderLink,
        message: Message,
        redeliveries: int,
        ack_id: str | None,
        *,
        presettle: bool = False,
    ) -> bytes:
        link = state.link
        tail = message.amqp_tail
        if tail is None:
            tail = message_tail(message)
            if message.holders > 1 and len(message.body) <= CACHED_TAIL_LIMIT:
                message.amqp_tail = tail  # a topic message: rendered again for each subscriber
        payload = amqp_from_message(
            message, delivery_count=redeliveries, now_ms=self.region.now_ms, tail=tail
        )
        tag = ack_id if ack_id is not None else f"browse:{message.message_id}"
        delivery = link.delivery(tag)
        link.send(payload)
        link.advance()
        if presettle or state.presettled:
            delivery.settle()
        return self.converter.engine.output()


def _tag(tag: object) -> str:
    if isinstance(tag, bytes | memoryview):
        return bytes(tag).decode("utf-8", "replace")
    return str(tag)


def _filters(filters: object) -> tuple[str | None, bool]:
    """The selector and no-local of a source's filter set (keys or descriptors may name them)."""
    if not isinstance(filters, dict):
        return None, False
    selector: str | None = None
    no_local = False
    for key, value in filters.items():
        descriptor = value.descriptor if isinstance(value, proton.Described) else None
        inner = value.value if isinstance(value, proton.Described) else value
        if str(key) == codes.SELECTOR_FILTER or descriptor in (
            codes.SELECTOR_FILTER_CODE,
            proton.symbol(codes.SELECTOR_FILTER),
        ):
            selector = str(inner)
        elif str(key) == codes.NO_LOCAL_FILTER or descriptor in (
            codes.NO_LOCAL_FILTER_CODE,
            proton.symbol(codes.NO_LOCAL_FILTER),
        ):
            no_local = True
    return selector, no_local


_OUTCOMES = {
    codes.ACCEPTED: Settlement.ACCEPT,
    codes.RELEASED: Settlement.RELEASE,
    codes.REJECTED: Settlement.DEAD_LETTER,
}


def _settlement(delivery: proton.Delivery) -> tuple[Settlement | None, str | None]:
    """The client's outcome (ActiveMQ's reading: released = back without counting, modified
    with delivery-failed = a counted redelivery, undeliverable-here or rejected = dead letter),
    and the transaction it belongs to."""
    state = int(delivery.remote_state)
    transaction: str | None = None
    failed = delivery.remote.failed
    undeliverable = delivery.remote.undeliverable
    if state == codes.TRANSACTIONAL_STATE:
        data = remote_data(delivery)
        transaction = _tag(data[0]) if data else None
        state, failed, undeliverable = _inner_outcome(data[1] if len(data) > 1 else None)
    if state == codes.MODIFIED:
        if undeliverable:
            return Settlement.DEAD_LETTER, transaction
        return (Settlement.REDELIVER if failed else Settlement.RELEASE), transaction
    settlement = _OUTCOMES.get(state)
    if settlement is None and delivery.settled:
        settlement = Settlement.ACCEPT  # settled with no outcome: taken as consumed
    return settlement, transaction


def _inner_outcome(outcome: object) -> tuple[int, bool, bool]:
    """A transactional state's outcome: its code, and a modified's two flags (none: accepted)."""
    if not isinstance(outcome, proton.Described):
        return codes.ACCEPTED, False, False
    code = codes.descriptor_code(outcome.descriptor)
    if code is None:
        return codes.ACCEPTED, False, False
    fields = outcome.value if isinstance(outcome.value, list) else []
    failed = bool(fields[0]) if fields else False
    undeliverable = bool(fields[1]) if len(fields) > 1 else False
    return code, failed, undeliverable
