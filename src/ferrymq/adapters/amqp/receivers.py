"""Links on which the broker receives: a client's producers and its transaction coordinator.

A producer's link names its target address, or none: then it is an anonymous relay and each
message's ``to`` names its destination. Credit is granted ``producerCredit`` at a time and
topped up as messages arrive; flow control holds a message back (the connection stops reading)
and so the client runs out of credit. An unsettled message is accepted only once the store holds
it (the group commit of its batch), so a client that saw ``accepted`` can forget it; one the
broker refuses is ``rejected`` with the reason, and the link goes on.

The coordinator (AMQP 1.0, part 4) declares and discharges the connection's local transactions;
a transfer or an outcome that carries a transactional state joins the transaction it names,
as STOMP's ``transaction`` header does.

A link to ``$ACTIVEMQ_ARTEMIS_MIRROR_*`` is another broker's mirror (``mirror_target``): its
transfers are events the broker applies, not messages it routes.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import proton

from ferrymq.adapters.amqp import addressing
from ferrymq.adapters.amqp.base import (
    AmqpSide,
    capabilities_of,
    data_object,
    remote_data,
    set_local_state,
)
from ferrymq.adapters.amqp.errors import AmqpError, condition_for
from ferrymq.adapters.amqp.mapping import message_from_amqp, relay_destination
from ferrymq.adapters.amqp.mirror_target import (
    MirrorLink,
    MirrorTarget,
    Verdict,
    is_mirror_link,
)
from ferrymq.adapters.amqp.properties import USER_ID
from ferrymq.adapters.amqp.work import Transfer
from ferrymq.amqp import codes
from ferrymq.amqp.engine import IncomingDelivery
from ferrymq.core.destination import Destination
from ferrymq.core.errors import BrokerError
from ferrymq.core.message import Message

PARTIAL_BUDGET = 2
"""Bytes of unfinished transfers one connection may have buffered, in maximum message sizes."""


@dataclass(slots=True)
class ReceiverLink:
    link: proton.Link
    destination: Destination | None
    """None: an anonymous relay (each message's ``to`` decides)."""
    coordinator: bool = False
    dynamic: Destination | None = None
    """The temporary destination made for this link's dynamic target (deleted with it)."""
    mirror: MirrorLink | None = None
    """A peer broker's mirror (``mirror_target``): its transfers are events to apply."""


class Receivers:
    def __init__(self, converter: AmqpSide) -> None:
        self.converter = converter
        self.region = converter.region
        self.connection_id = converter.connection_id
        self.links: dict[str, ReceiverLink] = {}
        self._transactions = 0
        self._partial: dict[tuple[str, bytes], bytearray] = {}
        self._dropping: set[tuple[str, bytes]] = set()
        self._over_credit: set[IncomingDelivery] = set()
        """Transfers the client sent without credit: their link closes when their turn comes."""
        self._flush_due = False
        self._durable: list[IncomingDelivery] = []
        """Stored messages whose ``accepted`` waits for ``accept_durable``."""
        self.mirrors = MirrorTarget(converter)

    def attach(self, link: proton.Link) -> None:
        target = link.remote_target
        if is_mirror_link(link):
            self.links[link.name] = ReceiverLink(link, None, mirror=self.mirrors.attach(link))
            return
        if target.type == proton.Terminus.COORDINATOR:
            state = ReceiverLink(link, None, coordinator=True)
        elif target.dynamic:
            capabilities = capabilities_of(data_object(target.capabilities))
            destination, address = self.converter.dynamic.create(capabilities)
            state = ReceiverLink(link, destination, dynamic=destination)
        else:
            state = ReceiverLink(link, self._target(target))
        link.target.copy(target)
        if state.dynamic is not None:
            link.target.address = address
        link.source.copy(link.remote_source)
        link.rcv_settle_mode = proton.Link.RCV_FIRST
        link.max_message_size = self.converter.max_message_size
        self.links[link.name] = state
        link.open()
        link.flow(self.converter.options.producer_credit)
        self.converter.flush()
        if link.remote_rcv_settle_mode == proton.Link.RCV_SECOND:
            self.forget(link)
            raise AmqpError(
                codes.NOT_IMPLEMENTED,
                "exactly-once delivery (rcv-settle-mode second) is not supported; "
                "use at-least-once (first) or at-most-once (pre-settled)",
            )

    def _target(self, target: proton.Terminus) -> Destination | None:
        address = target.address
        if not address:
            return None
        capabilities = data_object(target.capabilities)
        destination = addressing.destination_for(address, capabilities_of(capabilities))
        refusal = self.region.authorize_producer(self.connection_id, destination).refused
        if refusal is not None:
            raise refusal
        return destination

    def detach(self, link: proton.Link, *, closed: bool) -> None:
        self.forget(link)
        if closed:
            link.close()
        else:
            link.detach()
        self.converter.flush()

    def forget(self, link: proton.Link) -> None:
        """The link is gone (or refused): its state, its dynamic node and what arrived of its
        unfinished transfers. Another live link may have its name: that one is kept."""
        state = self.links.get(link.name)
        if state is None or state.link != link:
            return
        del self.links[link.name]
        self.converter.dynamic.delete(state.dynamic)
        if state.mirror is not None:
            self.mirrors.forget(state.mirror)
        for key in [key for key in self._partial if key[0] == link.name]:
            del self._partial[key]

    # -- transfers ----------------------------------------------------------------------------

    def read(self, link: proton.Link, delivery: IncomingDelivery) -> Transfer | None:
        """Take what arrived of a delivery; the whole transfer once its last frame is in (a
        large message arrives in many frames, and proton's buffer is not kept waiting). The
        rest of a message refused for its size, or of one on a link closed meanwhile, is read
        and dropped."""
        name = link.name  # once: proton decodes it from C on every access
        key = (name, delivery.tag)
        if delivery.aborted:
            self._partial.pop(key, None)
            self._dropping.discard(key)
            delivery.settle()
            return None
        pending = delivery.pending
        chunk = link.recv(pending) if pending > 0 else b""
        limit = self.converter.max_message_size
        if name not in self.links or key in self._dropping:
            if not delivery.partial:
                self._dropping.discard(key)
                link.advance()
                delivery.settle()
            return None
        buffered = self._partial.pop(key, None) if not delivery.partial else None
        if delivery.partial:
            buffer = self._partial.setdefault(key, bytearray())
            buffer.extend(chunk or b"")
            if len(buffer) > limit:
                del self._partial[key]
                self._dropping.add(key)
                self._too_large(link, delivery)
            elif sum(map(len, self._partial.values())) > PARTIAL_BUDGET * limit:
                del self._partial[key]
                self._dropping.add(key)
                self._over_budget(link, delivery)
            return None
        if len(chunk or b"") + (len(buffered) if buffered is not None else 0) > limit:
            link.advance()
            self._too_large(link, delivery)
            return None
        link.advance()
        if link.credit < 0:  # seen now: later top-ups would hide it
            self._over_credit.add(delivery)
        payload = bytes(buffered) + (chunk or b"") if buffered is not None else (chunk or b"")
        return Transfer(link, delivery, payload)

    def _too_large(self, link: proton.Link, delivery: IncomingDelivery) -> None:
        """A message over the listener's limit (``wireFormat.maxFrameSize``): the link ends
        with AMQP's condition for it, and what arrived of the message is dropped."""
        limit = self.converter.max_message_size
        message = (
            f"a message over {limit} bytes was refused (the listener's wireFormat.maxFrameSize)"
        )
        self._end_link(link, delivery, codes.MESSAGE_SIZE_EXCEEDED, message)

    def _over_budget(self, link: proton.Link, delivery: IncomingDelivery) -> None:
        """Unfinished transfers of this connection hold more than its budget: the link whose
        transfer passed it ends, the others go on."""
        budget = PARTIAL_BUDGET * self.converter.max_message_size
        message = f"the connection's unfinished transfers hold more than {budget} bytes"
        self._end_link(link, delivery, codes.RESOURCE_LIMIT, message)

    def _end_link(
        self, link: proton.Link, delivery: IncomingDelivery, condition: str, message: str
    ) -> None:
        self.accept_durable()  # what was taken before is answered before the close
        self.forget(link)
        if not delivery.partial:
            delivery.settle()
        link.condition = proton.Condition(condition, message)
        link.close()
        self.converter.flush()

    def transfer(self, work: Transfer) -> bool:
        state = self.links.get(work.link.name)
        if state is None:
            self._over_credit.discard(work.delivery)
            work.delivery.settle()
            return False
        if self._over_credit:
            self._refuse_over_credit(work.delivery)
        try:
            if state.coordinator:
                self._coordinate(work)
                return False
            if state.mirror is not None:
                verdict = self.mirrors.transfer(state.mirror, work)
                if verdict is Verdict.ACCEPT:
                    self._accept(work.delivery, None, needs_commit=True)
                return verdict is Verdict.HOLD
            return self._publish(state, work)
        except BrokerError as exc:
            self._reject(work, exc)
            return False
        finally:
            self._top_up(work.link)

    def _refuse_over_credit(self, delivery: IncomingDelivery) -> None:
        """AMQP 1.0 part 2.6.7: a sender with no credit must not send; the link closes
        (the converter closes it with this error), the message is not taken."""
        if delivery not in self._over_credit:
            return
        self._over_credit.discard(delivery)
        delivery.settle()
        self.accept_durable()  # the messages sent within credit are answered before the close
        raise AmqpError(
            codes.TRANSFER_LIMIT_EXCEEDED,
            f"transfer {delivery.tag!r} on link {delivery.link.name!r} was sent without link "
            "credit; send only while the broker has granted credit",
        )

    def _publish(self, state: ReceiverLink, work: Transfer) -> bool:
        region = self.region
        delivery = work.delivery
        destination = state.destination or self._relay_destination(work.payload)
        message = message_from_amqp(
            work.payload,
            message_id=region.new_message_id(),
            destination=destination,
            now_ms=region.now_ms,
        )
        self._vouch_for_user(message)
        blocked = region.producer_blocked(message)
        if blocked is not None:
            if self.converter.service.send_fail_if_no_space:
                raise AmqpError(
                    codes.RESOURCE_LIMIT,
                    f"Usage Manager {blocked.capitalize()} is Full; the message was not accepted",
                )
            return True
        transaction = _transaction_of(delivery)
        outcome = region.send(self.connection_id, message, (destination,), transaction)
        if outcome.refused is not None:
            raise outcome.refused
        self._accept(delivery, transaction, needs_commit=outcome.needs_commit)
        return False

    def _relay_destination(self, payload: bytes) -> Destination:
        destination = relay_destination(payload)
        refusal = self.region.authorize_producer(self.connection_id, destination).refused
        if refusal is not None:
            raise refusal
        return destination

    def _vouch_for_user(self, message: Message) -> None:
        """``user-id`` (JMSXUserID) is kept only when it is the user the connection logged in
        as: anyone could claim any name, and STOMP strips the header the same way."""
        claimed = message.properties.get(USER_ID)
        subject = self.converter.subject
        if claimed is not None and (subject is None or subject.user != claimed):
            del message.properties[USER_ID]

    def _accept(
        self, delivery: IncomingDelivery, transaction: str | None, *, needs_commit: bool
    ) -> None:
        if delivery.settled:  # pre-settled: at most once, nothing to say
            delivery.settle()
            self._flush_soon()
            return
        if needs_commit and transaction is None:
            if not self._durable:
                asyncio.get_running_loop().call_soon(self.accept_durable)
            self._durable.append(delivery)
            return
        if transaction is not None:
            accepted = proton.Described(proton.ulong(codes.ACCEPTED), [])
            set_local_state(
                delivery.full(), codes.TRANSACTIONAL_STATE, [transaction.encode(), accepted]
            )
        else:
            delivery.update(proton.Delivery.ACCEPTED)
        delivery.settle()
        if needs_commit:
            self.converter.flush(needs_commit=True)
        else:
            self._flush_soon()

    def accept_durable(self) -> None:
        """Accept the stored messages held so far, together: their dispositions leave as one
        range that waits for the group commit, not a frame and a commit wait per message. The
        converter calls this before any other request (a detach must not overtake them) and at
        the end of each read; the loop turn calls it for work resumed outside a read."""
        held, self._durable = self._durable, []
        if not held:
            return
        accepted = proton.Delivery.ACCEPTED
        for delivery in held:
            delivery.update(accepted)
            delivery.settle()
        self.converter.flush(needs_commit=True)

    def _flush_soon(self) -> None:
        """A disposition that waits for no commit leaves with the others of this read (the
        converter flushes at the end of each), one frame for many, not one write per message;
        the next loop turn writes it for work resumed outside a read (flow control)."""
        if not self._flush_due:
            self._flush_due = True
            asyncio.get_running_loop().call_soon(self._flush_now)

    def _flush_now(self) -> None:
        self._flush_due = False
        self.converter.flush()

    def _reject(self, work: Transfer, error: BrokerError) -> None:
        self.reject(work, error)
        self.converter.flush()

    def reject(self, work: Transfer, error: BrokerError) -> None:
        """Settle a transfer ``rejected``, with the condition and the reason (unless the client
        sent it pre-settled: then there is nobody to tell)."""
        delivery = work.delivery
        if not delivery.settled:
            full = delivery.full()
            full.local.condition = condition_for(error)
            full.update(proton.Delivery.REJECTED)
        delivery.settle()
        self.converter.log_refusal(error)

    def _top_up(self, link: proton.Link) -> None:
        credit = self.converter.options.producer_credit
        if link.credit < credit // 2 and link.state & proton.Endpoint.LOCAL_ACTIVE:
            link.flow(credit - link.credit)
            self.converter.flush()

    # -- the transaction coordinator ----------------------------------------------------------

    def _coordinate(self, work: Transfer) -> None:
        amqp = proton.Message()
        try:
            amqp.decode(work.payload)
        except proton.MessageException as exc:
            raise AmqpError(codes.INVALID_FIELD, f"malformed coordinator message: {exc}") from None
        body = amqp.body
        if not isinstance(body, proton.Described):
            raise AmqpError(
                codes.INVALID_FIELD, "a coordinator message must be declare or discharge"
            )
        descriptor = body.descriptor
        code = codes.descriptor_code(descriptor)
        fields: list[object] = list(body.value) if isinstance(body.value, list) else []
        if code == codes.DECLARE:
            self._declare(work.delivery)
        elif code == codes.DISCHARGE:
            self._discharge(work.delivery, fields)
        else:
            raise AmqpError(codes.NOT_IMPLEMENTED, f"unknown coordinator request {descriptor!r}")

    def _declare(self, delivery: IncomingDelivery) -> None:
        self._transactions += 1
        transaction = f"{self.connection_id}:amqp-tx:{self._transactions}"
        outcome = self.region.begin(self.connection_id, transaction)
        if outcome.refused is not None:
            raise outcome.refused
        set_local_state(delivery.full(), codes.DECLARED, [transaction.encode()])
        delivery.settle()
        self.converter.flush()

    def _discharge(self, delivery: IncomingDelivery, fields: list[object]) -> None:
        raw = fields[0] if fields else None
        transaction = (
            bytes(raw).decode("utf-8", "replace")
            if isinstance(raw, bytes | memoryview)
            else str(raw)
        )
        fail = bool(fields[1]) if len(fields) > 1 else False
        region = self.region
        if transaction not in region.connections[self.connection_id].transactions:
            raise AmqpError(codes.TRANSACTION_UNKNOWN_ID, f"unknown transaction id {transaction!r}")
        if fail:
            outcome = region.abort(self.connection_id, transaction)
        else:
            outcome = region.commit(self.connection_id, transaction)
        if outcome.refused is not None:
            raise AmqpError(codes.TRANSACTION_ROLLBACK, outcome.refused.message)
        delivery.update(proton.Delivery.ACCEPTED)
        delivery.settle()
        self.converter.flush(needs_commit=outcome.needs_commit)


def _transaction_of(delivery: IncomingDelivery) -> str | None:
    if int(delivery.remote_state) != codes.TRANSACTIONAL_STATE:
        return None
    data = remote_data(delivery.full())
    return _text(data[0]) if data else None


def _text(raw: object) -> str:
    """A transaction id as the broker keeps it (proton gives binary as memoryview)."""
    if isinstance(raw, bytes | memoryview):
        return bytes(raw).decode("utf-8", "replace")
    return str(raw)
