"""The target side of Artemis's mirror: a peer's events applied to this broker's core.

A protocol adapter decodes each event (``ferrymq.adapters.amqp.mirror_target``) and calls these
inside ``core.mirror.applying_for(peer)`` (the node that sent it), so what they cause is
mirrored onward to this broker's other mirrors but never back to that node.

A mirrored send keeps its message id and its origin (``Message.origin_node``) and goes into its
destination as it is (no scheduling, no authorization: the source did those; its producer's id
joins the duplicate window, so a client that fails over to this broker and sends it again is
recognised). It is deduplicated per origin by message id and destination in the core's
duplicate window (``region.dedup``): a composite or wildcard send puts copies with one message id
into several destinations, each its own mirrored send. The window entry is written in the same
store batch as the message, as a placeholder row added and removed at once (the way
``service.snapshot`` writes the window), so after a crash both are there or neither is, and a
transfer the peer sends again after a reconnect is recognised.
"""

from __future__ import annotations

from ferrymq.core.destination import Destination
from ferrymq.core.errors import BrokerError
from ferrymq.core.message import Message
from ferrymq.core.mirror import rerouting
from ferrymq.core.queue import Queue
from ferrymq.core.region import RegionBroker
from ferrymq.core.selector import SelectorError
from ferrymq.core.topic import TopicSubscription
from ferrymq.store.base import (
    AddDurableSubscription,
    AddMessage,
    DurableSubscriptionRecord,
    RemoveMessage,
)

MIRROR_ADDRESS = "$ACTIVEMQ_ARTEMIS_MIRROR"
DEDUP_CONTAINER = "mirror://dedup"
"""Where the placeholder rows that carry the dedup window entries are written (and removed)."""


def dedup_key(
    origin: str, message_id: str, destination: Destination, route: str | None = None
) -> str:
    """Artemis's duplicate cache ``$ACTIVEMQ_ARTEMIS_MIRROR_<origin>``, keyed by the id and
    where that copy was routed (the copies of one composite send share the id), and for a
    message the peer's operator routed again (moved, retried), that routing's own id."""
    key = f"{MIRROR_ADDRESS}_{origin}:{message_id}:{destination.qualified}"
    return key if route is None else f"{key}:{route}"


def route_mirrored(region: RegionBroker, message: Message, route: str | None = None) -> bool:
    """Put a mirrored message into its destination; False when it was routed before (the
    peer sent it again): nothing is done, and its confirmation waits for the write in flight."""
    origin = message.origin_node
    if origin is None:
        raise ValueError("a mirrored message names its origin node")
    key = dedup_key(origin, message.message_id, message.destination, route)
    dedup = region.dedup
    if dedup.is_duplicate(key):
        return False
    dedup.record(key)
    if message.producer_message_id is not None:  # a client failing over here re-sends it
        dedup.record(message.producer_message_id)
    seq = region.next_seq()
    region.effects.store_ops.extend(
        (AddMessage(DEDUP_CONTAINER, seq, b"", producer_message_id=key),
         RemoveMessage(DEDUP_CONTAINER, seq))
    )  # fmt: skip
    if route is None:
        region.route_internal(message)
    else:
        with rerouting(route):  # the onward mirrors' sends keep the route id
            region.route_internal(message)
    return True


# -- finding what an event names --------------------------------------------------------------


def durable_named(region: RegionBroker, dotted: str) -> TopicSubscription | None:
    """The durable subscription Artemis names ``<clientId>.<subscriptionName>``."""
    for subscription in region.subscriptions.durables():
        record = subscription.record
        if record is not None and f"{record.client_id}.{record.subscription_name}" == dotted:
            return subscription
    return None


def container_named(
    region: RegionBroker, address: Destination | None, queue_name: str
) -> Queue | None:
    """The queue or durable subscription an ack names: a topic address means a durable
    subscription; a queue address or a plain name, the queue of that name, else a durable
    subscription of that name (Artemis's addresses carry no kind)."""
    if address is None or not address.is_topic:
        queue = region.queues.get(Destination.queue(queue_name))
        if queue is not None or address is not None:
            return queue
    return durable_named(region, queue_name)


# -- creating and deleting --------------------------------------------------------------------


def create_durable(
    region: RegionBroker,
    topic: Destination,
    client_id: str,
    name: str,
    selector: str | None = None,
    *,
    no_local: bool = False,
) -> None:
    """A durable subscription made on the peer, without a consumer here (yet)."""
    subscriptions = region.subscriptions
    if subscriptions.durable(client_id, name) is not None:
        return
    record = DurableSubscriptionRecord(
        client_id, name, topic.qualified, selector, no_local, f"durable:{client_id}:{name}"
    )
    try:
        subscriptions.recover_durable(record)
    except SelectorError as exc:
        raise BrokerError(f"durable subscription {name!r}: bad selector: {exc}") from None
    region.effects.store_ops.append(AddDurableSubscription(record))
    region.mirror.subscription_created(record)  # onward, to this broker's own mirrors


def delete_durable(region: RegionBroker, dotted: str) -> None:
    """Remove the durable subscription ``<clientId>.<subscriptionName>`` (and what it kept);
    refused while a consumer of this broker uses it."""
    subscription = durable_named(region, dotted)
    record = subscription.record if subscription is not None else None
    if record is not None:
        region.subscriptions.destroy_durable(record.client_id, record.subscription_name)


def delete_destination(region: RegionBroker, destination: Destination) -> None:
    if region.has_destination(destination):
        region.remove_destination(destination)
