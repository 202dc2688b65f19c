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

import logging
from dataclasses import dataclass

import proton

from ferrymq.adapters.amqp import addressing
from ferrymq.adapters.amqp.base import AmqpSide, capabilities_of, data_object, remote_data
from ferrymq.adapters.amqp.errors import AmqpError
from ferrymq.adapters.amqp.federation import configure, federation_link, keep_or_expire
from ferrymq.adapters.amqp.mapping import amqp_from_message, message_tail
from ferrymq.amqp import codes
from ferrymq.amqp.transfer import send_transfer
from ferrymq.core.consumer import AckMode, Consumer
from ferrymq.core.destination import Destination
from ferrymq.core.effects import Delivery
from ferrymq.core.errors import BrokerError
from ferrymq.core.message import Message
from ferrymq.core.region import AckRef, Settlement
from ferrymq.core.selector import SelectorError, parse_selector

log = logging.getLogger(__name__)

CACHED_TAIL_LIMIT = 64 * 1024
"""A message shared by several subscriptions keeps its rendered sections up to this body size
(above it the copy would cost more memory than rendering again costs time)."""


@dataclass(slots=True)
class SenderLink:
    link: proton.Link
    consumer: Consumer
    presettled: bool
    browse_done: bool = False
    unrendered: int = 0
    """Deliveries the core made before the last grant that proton has not sent yet."""
    rendered: int = 0
    """Deliveries sent through proton since the last grant (they used its credit)."""
    dynamic: Destination | None = None
    """The temporary destination made for this link's dynamic source (deleted with it)."""


class Senders:
    """The sender links of one connection, by subscription id."""

    def __init__(self, converter: AmqpSide) -> None:
        self.converter = converter
        self.region = converter.region
        self.connection_id = converter.connection_id
        self.by_subscription: dict[str, SenderLink] = {}

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
        dynamic = destination if source.dynamic else None
        try:
            state = self._subscribe(link, source, destination, options)
        except BrokerError:
            self.converter.dynamic.delete(dynamic)  # a node for a link that was refused
            raise
        state.dynamic = dynamic
        link.source.copy(source)
        link.source.address = address
        _echo_filters(link.source, data_object(source.filter))
        link.target.copy(link.remote_target)
        link.snd_settle_mode = link.remote_snd_settle_mode
        if state.consumer.browser:
            self._browse(state)
            return
        self.by_subscription[state.consumer.subscription_id] = state
        link.open()
        self.converter.flush()
        self.region.start_consumer(state.consumer)
        if link.credit > 0:
            self.credit(link)

    def _subscribe(
        self,
        link: proton.Link,
        source: proton.Terminus,
        destination: Destination,
        options: addressing.ConsumerOptions,
    ) -> SenderLink:
        """The link's consumer, subscribed (a browser is served by the service instead)."""
        consumer = self._consumer(link, source, destination, options)
        if not consumer.browser:
            outcome = self.region.subscribe(consumer, start=False)
            if outcome.refused is not None:
                raise outcome.refused
        presettled = link.remote_snd_settle_mode == proton.Link.SND_SETTLED
        return SenderLink(link, consumer, presettled)

    def _source_destination(
        self, link: proton.Link, source: proton.Terminus
    ) -> tuple[Destination, str, addressing.ConsumerOptions]:
        capabilities = capabilities_of(data_object(source.capabilities))
        no_options = addressing.ConsumerOptions()
        if source.dynamic:
            return (*self.converter.dynamic.create(capabilities), no_options)
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
        federation = federation_link(link)
        if federation is not None:  # another broker's federation receiver
            configure(consumer, federation, link.name, self.converter.client_id)
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
        self._grant(state, max(link.credit, 0))
        if link.drain_mode:
            self._drain(state)

    def _grant(self, state: SenderLink, credit: int) -> None:
        """Open the core's window to the link's credit, less what the core already delivered
        that proton has not sent yet (it will use proton's credit when it is rendered): within
        one read, a client's flows would otherwise each open the window again."""
        consumer = state.consumer
        unrendered = state.unrendered + consumer.outstanding - state.rendered
        state.unrendered, state.rendered = max(unrendered, 0), 0
        window = max(credit - state.unrendered, 0)
        outcome = self.region.control_consumer(self.connection_id, consumer.subscription_id, window)
        if outcome.refused is not None:
            raise outcome.refused

    def _drain(self, state: SenderLink) -> None:
        """AMQP's drain: send what the queue has now, then use the rest of the credit up, so
        the core must not dispatch into it afterwards."""
        self.converter.service.process()  # the core dispatches now, into proton's credit
        if state.consumer.has_capacity:
            state.link.drained()
            self._grant(state, 0)
            self.converter.flush()
            self.converter.service.process()

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
        outcome = self.region.settle(
            self.connection_id, AckRef(ack_id=tag), transaction, settlement
        )
        delivery.settle()
        if outcome.refused is not None and transaction is not None:
            raise outcome.refused
        self.converter.flush(needs_commit=outcome.needs_commit)

    # -- detach -------------------------------------------------------------------------------

    def detach(self, link: proton.Link, *, closed: bool) -> None:
        state = self.by_subscription.get(self.subscription_id(link))
        if state is not None and state.link == link:
            del self.by_subscription[state.consumer.subscription_id]
            consumer = state.consumer
            if not consumer.browser:
                self.region.unsubscribe(self.connection_id, consumer.subscription_id)
                if closed and consumer.durable_name is not None:
                    self.region.destroy_durable(self.connection_id, consumer.durable_name)
                elif not closed:
                    self.keep(state)
            self.converter.dynamic.delete(state.dynamic)
        if closed:
            link.close()
        else:
            link.detach()
        self.converter.flush()

    def keep(self, state: SenderLink) -> None:
        """The link went without closing (or with its connection): a federation address
        receiver's subscription starts its ``auto-delete`` wait."""
        converter = self.converter
        keep_or_expire(converter.service, state.consumer, state.link, converter.client_id)

    def forget(self, link: proton.Link) -> None:
        """A link the broker refused: its name may belong to another, live link."""
        state = self.by_subscription.get(self.subscription_id(link))
        if state is not None and state.link == link:
            del self.by_subscription[state.consumer.subscription_id]

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

    def _encode(self, message: Message, redeliveries: int) -> bytes:
        tail = message.amqp_tail
        if tail is None:
            tail = message_tail(message)
            if message.holders > 1 and len(message.body) <= CACHED_TAIL_LIMIT:
                message.amqp_tail = tail  # a topic message: rendered again for each subscriber
        return amqp_from_message(
            message, delivery_count=redeliveries, now_ms=self.region.now_ms, tail=tail
        )

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
        try:
            payload = self._encode(message, redeliveries)
        except (BrokerError, ValueError, TypeError, OverflowError) as exc:
            # A header another protocol's producer set that AMQP cannot carry must not cost
            # the delivery (or, raised here, the broker's whole dispatch pass).
            log.warning("message %s: sent without its headers: %s", message.message_id, exc)
            payload = _bare(message, redeliveries)
        if ack_id is not None:
            state.rendered += 1
        tag = ack_id if ack_id is not None else f"browse:{message.message_id}"
        send_transfer(link, tag, payload, settle=presettle or state.presettled)
        return self.converter.engine.output()


def _bare(message: Message, redeliveries: int) -> bytes:
    """The message with only its id, header fields and body."""
    bare = proton.Message(
        id=message.message_id,
        body=message.body,
        durable=message.persistent,
        priority=message.priority,
        delivery_count=redeliveries,
    )
    return bytes(bare.encode())


def _tag(tag: object) -> str:
    if isinstance(tag, bytes | memoryview):
        return bytes(tag).decode("utf-8", "replace")
    return str(tag)


def _echo_filters(local: proton.Terminus, filters: object) -> None:
    """Answer with the filters the broker applies, and only those (as ActiveMQ does): a client
    that asked for another learns that it is not applied."""
    local.filter.clear()
    if not isinstance(filters, dict):
        return
    kept = {key: value for key, value in filters.items() if _filter_kind(key, value) is not None}
    if kept:
        local.filter.put_dict(kept)


def _filter_kind(key: object, value: object) -> str | None:
    """``selector``, ``no-local`` or None (a filter the broker does not apply)."""
    descriptor = value.descriptor if isinstance(value, proton.Described) else None
    if str(key) == codes.SELECTOR_FILTER or descriptor in _SELECTOR_DESCRIPTORS:
        return "selector"
    if str(key) == codes.NO_LOCAL_FILTER or descriptor in _NO_LOCAL_DESCRIPTORS:
        return "no-local"
    return None


_SELECTOR_DESCRIPTORS = (codes.SELECTOR_FILTER_CODE, proton.symbol(codes.SELECTOR_FILTER))
_NO_LOCAL_DESCRIPTORS = (codes.NO_LOCAL_FILTER_CODE, proton.symbol(codes.NO_LOCAL_FILTER))


def _filters(filters: object) -> tuple[str | None, bool]:
    """The selector and no-local of a source's filter set (keys or descriptors may name them)."""
    if not isinstance(filters, dict):
        return None, False
    selector: str | None = None
    no_local = False
    for key, value in filters.items():
        kind = _filter_kind(key, value)
        if kind == "selector":
            selector = str(value.value if isinstance(value, proton.Described) else value)
        elif kind == "no-local":
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
