"""The target of Artemis's mirror: a peer's mirror link, and each of its transfers applied.

A peer broker with ``<mirror>`` attaches a sender whose target address starts with
``$ACTIVEMQ_ARTEMIS_MIRROR`` and which desires the capability ``amq.mirror``. The broker answers
offering ``amq.mirror`` (never Artemis's core-message tunneling: every message travels as AMQP)
and its node id in the link property ``x-opt-amq-bkr-id``; a link that does not desire the
capability is refused, as Artemis refuses it. The address is only the link's name: no queue is
made for it here. The user needs WRITE on it when security is on.

Each transfer is a mirrored send (the message, with delivery annotations naming its origin id,
origin node and destination) or a control event (message annotations: create or delete a queue
or address, or an ack). It is applied inside ``core.mirror.applying_for(peer)``, the node at
the other end of the link (Artemis's "controller in use"), so what it causes is not mirrored
back to that node (nor is a send mirrored to its origin: ``Message.origin_node``); it is
accepted only once what it changed is durable (the group commit). An ack whose message is not
here yet is retried (``mirror_acks``), its transfer unsettled meanwhile, so a crash before it
is applied makes the peer send it again.

Link-level capabilities are read and written on the attach frames themselves
(``amqp.attach_frames``): proton's engine neither reads nor sends them.
"""

from __future__ import annotations

import enum
import json
import logging
from dataclasses import dataclass

import proton

from ferrymq.adapters.amqp import addressing
from ferrymq.adapters.amqp import body as sections
from ferrymq.adapters.amqp.attach_scan import AttachScanner
from ferrymq.adapters.amqp.base import AmqpSide
from ferrymq.adapters.amqp.codec import decode
from ferrymq.adapters.amqp.errors import AmqpError
from ferrymq.adapters.amqp.mapping import message_from_amqp, relay_destination
from ferrymq.adapters.amqp.mirror_acks import MirrorAcks, PostAck
from ferrymq.adapters.amqp.properties import property_text
from ferrymq.adapters.amqp.work import Transfer
from ferrymq.amqp import codes
from ferrymq.amqp.attach_frames import AttachCapabilities, RemoteAttach
from ferrymq.core import mirror_apply
from ferrymq.core.destination import Destination
from ferrymq.core.errors import BrokerError
from ferrymq.core.message import MessageId
from ferrymq.core.mirror import acked_at, applying_for
from ferrymq.core.mirror_statistics import statistics_for
from ferrymq.core.region import RegionBroker
from ferrymq.core.removal import AckReason

log = logging.getLogger(__name__)

MIRROR_ADDRESS = mirror_apply.MIRROR_ADDRESS
MIRROR_CAPABILITY = "amq.mirror"
BROKER_ID = "x-opt-amq-bkr-id"
MESSAGE_ID = "x-opt-amq-mr-id"
ROUTED_TO = "x-opt-amq-mr-dst"
ROUTE = "x-opt-ferrymq-mr-route"
ACKED_AT = "x-opt-ferrymq-mr-acked-at"
"""A FerryMQ peer's id for a message its operator routed again (part of the dedup key)."""
EVENT_TYPE = "x-opt-amq-mr-ev-type"
EVENT_ADDRESS = "x-opt-amq-mr-adr"
EVENT_QUEUE = "x-opt-amq-mr-qu"
ACK_REASON = "x-opt-amq-mr-ack-reason"
SOURCE_ONLY = "ferrymq.mirror."
"""Properties a FerryMQ source keeps on the events of its mirror queue (never a message's)."""


def is_mirror_link(link: proton.Link) -> bool:
    """A peer's mirror: a link the client sends on, to an address Artemis reserves for it."""
    address = link.remote_target.address
    return address is not None and address.startswith(MIRROR_ADDRESS)


class Verdict(enum.Enum):
    """What becomes of a transfer once applied."""

    ACCEPT = "accepted once the group commit made it durable"
    WAIT = "left unsettled: an ack waits for its message (``mirror_acks`` settles it)"
    HOLD = "held back by producer flow control: applied again when memory is freed"


@dataclass(slots=True)
class MirrorLink:
    link: proton.Link
    peer: str
    """The peer's node id (its link property ``x-opt-amq-bkr-id``): the origin of a send that
    names none."""
    closed: bool = False


class MirrorTarget:
    """The mirror links of one AMQP connection."""

    def __init__(self, converter: AmqpSide) -> None:
        self.converter = converter
        self.region = converter.region
        self.capabilities = AttachCapabilities()
        """Every attach frame's link capabilities, found by ``scanner`` (the converter feeds
        it what the client sends)."""
        self.scanner = AttachScanner(self.capabilities)
        self.statistics = statistics_for(self.region)
        self.acks = MirrorAcks(converter, self.statistics)
        self._opening: tuple[str, RemoteAttach] = ("", RemoteAttach())

    def opening(self, link: proton.Link) -> None:
        """A link's attach is being handled: take what its frame said (and forget it, so the
        record of every link ever attached does not pile up)."""
        name = link.name
        self._opening = (name, self.capabilities.incoming.pop(name, RemoteAttach()))

    # -- the link -----------------------------------------------------------------------------

    def attach(self, link: proton.Link) -> MirrorLink:
        converter = self.converter
        name, remote = self._opening
        if name != link.name:
            remote = RemoteAttach()
        address = link.remote_target.address or MIRROR_ADDRESS
        if MIRROR_CAPABILITY not in remote.desired:
            raise AmqpError(
                codes.PRECONDITION_FAILED,
                f"a link to {address} is a mirror's and must desire the capability "
                f"{MIRROR_CAPABILITY}",
            )
        queue = Destination.queue(address)
        refusal = self.region.authorize_producer(converter.connection_id, queue).refused
        if refusal is not None:
            raise refusal
        peer = _text((link.remote_properties or {}).get(proton.symbol(BROKER_ID)))
        state = MirrorLink(link, peer or converter.engine.connection.remote_container or "")
        link.target.copy(link.remote_target)
        link.source.copy(link.remote_source)
        link.rcv_settle_mode = proton.Link.RCV_FIRST
        link.max_message_size = converter.max_message_size
        link.properties = {proton.symbol(BROKER_ID): self.region.node_id}
        self.capabilities.announce(link.name, (MIRROR_CAPABILITY,), ())
        link.open()
        link.flow(converter.options.producer_credit)
        converter.flush()
        log.info("mirror link %s from node %s attached", link.name, state.peer)
        return state

    # -- transfers ----------------------------------------------------------------------------

    def transfer(self, state: MirrorLink, work: Transfer) -> Verdict:
        """Apply one transfer, and say what becomes of it."""
        payload = work.payload
        parts = sections.split(payload)
        annotations = _section_map(payload, parts.head.get(sections.MESSAGE_ANNOTATIONS))
        kind = _text(annotations.get(EVENT_TYPE))
        if kind is None:
            return self._send(state, payload, parts)
        value = decode(parts.body, parts.value_at)[0] if parts.body else None
        with applying_for(state.peer):
            if kind == "postAck":
                return self._post_ack(state, work, annotations, value)
            self._control(kind, annotations, value)
        return Verdict.ACCEPT

    def _send(self, state: MirrorLink, payload: bytes, parts: sections.Sections) -> Verdict:
        region = self.region
        delivery = _section_map(payload, parts.head.get(sections.DELIVERY_ANNOTATIONS))
        origin = _text(delivery.get(BROKER_ID)) or state.peer
        if origin == region.node_id:  # first sent here, come back round a ring: had already
            self.statistics.duplicates += 1
            return Verdict.ACCEPT
        routed_to = _text(delivery.get(ROUTED_TO))
        destination = (
            addressing.destination_for(routed_to) if routed_to else relay_destination(payload)
        )
        message = message_from_amqp(
            payload,
            message_id=region.new_message_id(),
            destination=destination,
            now_ms=region.now_ms,
        )
        origin_id = _text(delivery.get(MESSAGE_ID))
        if origin_id:
            message.message_id = MessageId(origin_id)
        message.origin_node = origin
        for name in [n for n in message.properties if n.startswith(SOURCE_ONLY)]:
            del message.properties[name]
        if region.producer_blocked(message) is not None:
            return Verdict.HOLD
        with applying_for(state.peer):
            route = _text(delivery.get(ROUTE))
            routed = mirror_apply.route_mirrored(region, message, route)
        stats = self.statistics
        if routed:
            stats.sends += 1
        else:
            stats.duplicates += 1
        return Verdict.ACCEPT

    def _post_ack(
        self,
        state: MirrorLink,
        work: Transfer,
        annotations: dict[object, object],
        value: object,
    ) -> Verdict:
        message_id = _text(value)
        queue_name = _text(annotations.get(EVENT_QUEUE))
        if message_id is None or queue_name is None:
            raise AmqpError(codes.INVALID_FIELD, "a postAck names its queue and message id")
        address = _address(annotations.get(EVENT_ADDRESS))
        reason = AckReason.of(annotations.get(ACK_REASON))
        ack = PostAck(state, work, address, queue_name, message_id, reason)
        self.statistics.acks += 1
        # Where its consumer acked: passed on along a chain, never back there (a ring). Only
        # the first try knows it; a retried ack may go on to that node, which gives it up.
        with acked_at(_text(annotations.get(ACKED_AT)) or state.peer):
            return Verdict.ACCEPT if self.acks.apply(ack) else Verdict.WAIT

    def _control(self, kind: str, annotations: dict[object, object], value: object) -> None:
        region = self.region
        self.statistics.events += 1
        address = _address(annotations.get(EVENT_ADDRESS))
        queue_name = _text(annotations.get(EVENT_QUEUE))
        if kind in ("createQueue", "addAddress"):
            _create(region, kind, address, queue_name, _document(value))
        elif kind == "deleteQueue":
            name = queue_name or _text(value) or ""
            durable = address.is_topic if address is not None else False
            if durable or mirror_apply.durable_named(region, name) is not None:
                mirror_apply.delete_durable(region, name)
            else:
                mirror_apply.delete_destination(region, Destination.queue(name))
        elif kind == "deleteAddress":
            if address is not None:
                mirror_apply.delete_destination(region, address)
        else:
            log.info("mirror: unknown event %r ignored", kind)

    def forget(self, state: MirrorLink) -> None:
        """The link is gone: its acks waiting for their message stop (left unsettled, the peer
        sends them again)."""
        state.closed = True


def _create(
    region: RegionBroker,
    kind: str,
    address: Destination | None,
    queue_name: str | None,
    document: dict[str, object],
) -> None:
    routing = str(document.get("routing-type", "")).upper()
    name = queue_name or _text(document.get("name")) or (address.name if address else None)
    topic = address.is_topic if address is not None else routing == "MULTICAST"
    address_name = address.name if address is not None else _text(document.get("address"))
    if not address_name and not name:
        raise AmqpError(codes.INVALID_FIELD, f"a {kind} event names no address")
    if not topic:
        region.queue(Destination.queue(name or address_name or ""))
        return
    topic_destination = Destination.topic(address_name or name or "")
    region.topic(topic_destination)
    if kind == "addAddress" or not name or name == topic_destination.name:
        return
    client_id = _text(document.get("client-id"))
    subscription = _text(document.get("subscription-name"))
    if client_id is None or subscription is None:
        client_id, _, subscription = name.partition(".")
    if client_id and subscription:
        mirror_apply.create_durable(
            region,
            topic_destination,
            client_id,
            subscription,
            _text(document.get("filter-string")),
            no_local=bool(document.get("no-local", False)),
        )


def _section_map(payload: bytes, at: int | None) -> dict[object, object]:
    if at is None:
        return {}
    value = decode(payload, at)[0]
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str | None:
    """An annotation as text (a FerryMQ peer sends strings, Artemis some ids as longs)."""
    try:
        return property_text(value, "a mirror annotation")
    except BrokerError:
        return None


def _address(value: object) -> Destination | None:
    """``queue://X``, ``topic://X``; a plain Artemis address has no kind (None)."""
    text = _text(value)
    if not text or "://" not in text:
        return None
    return addressing.destination_for(text)


def _document(value: object) -> dict[str, object]:
    """A create event's JSON body (Artemis's ``QueueConfiguration``/``AddressInfo``)."""
    text = value.decode() if isinstance(value, bytes) else _text(value)
    if not text:
        return {}
    try:
        document = json.loads(text)
    except ValueError:
        return {}
    return document if isinstance(document, dict) else {}
