"""Acknowledgements and local transactions: what settles a delivery, and when.

An ACK or NACK names a delivery (by ack id in STOMP 1.2, by message id before); ``client`` acks
are cumulative. Outside a transaction it settles at once; inside one it frees the consumer's
prefetch slot now (ActiveMQ's delivered ack) and settles at COMMIT, while ABORT hands the
deliveries back to "delivered, awaiting ack". ``core.transaction`` holds the records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ferrymq.core.connection import ConnectionState
from ferrymq.core.consumer import AckMode, Consumer, ConsumerContainer
from ferrymq.core.context import CoreContext, Dispatch
from ferrymq.core.destination import Destination
from ferrymq.core.effects import Delivery, TraceKind
from ferrymq.core.entry import Entry
from ferrymq.core.errors import BrokerError
from ferrymq.core.message import Message
from ferrymq.core.transaction import Settlement, TransactedAck, Transaction


@dataclass(frozen=True, slots=True)
class AckRef:
    """Which delivery an ACK/NACK names, in whichever form its STOMP version allows."""

    ack_id: str | None = None
    message_id: str | None = None
    subscription_id: str | None = None


class Ledger:
    def __init__(
        self,
        context: CoreContext,
        dispatch: Dispatch,
        connections: Mapping[str, ConnectionState],
        *,
        route: Callable[[Message, Sequence[Destination]], object],
        dispatch_later: Callable[[Iterable[ConsumerContainer]], None],
    ) -> None:
        """``route`` publishes a committed send; ``dispatch_later`` marks containers that gained
        room, to be dispatched once at the end of the batch."""
        self._context = context
        self._dispatch = dispatch
        self._connections = connections
        self._route = route
        self._dispatch_later = dispatch_later

    # -- acknowledging ------------------------------------------------------------------------

    def settle(
        self,
        state: ConnectionState,
        ref: AckRef,
        transaction: str | None,
        settlement: Settlement,
    ) -> None:
        verb = "ACK" if settlement is _ACCEPT else "NACK"
        consumer, ack_id = _resolve(state, ref, verb)
        cumulative = consumer.ack_mode is AckMode.CLIENT
        if transaction is not None:
            tx = self.transaction(state, transaction)
            covered = (
                consumer.entries_through(ack_id)
                if cumulative
                else [(ack_id, e) for e in [consumer.entry(ack_id)] if e is not None]
            )
            for _, entry in covered:
                entry.acked_in_transaction = transaction
                consumer.release_credit(entry)
            tx.acks.append(TransactedAck(consumer, [key for key, _ in covered], settlement))
        else:
            taken = (
                consumer.take_through(ack_id) if cumulative else [(ack_id, consumer.take(ack_id))]
            )
            self._apply(state, consumer, taken, settlement)
        self._dispatch_later(consumer.containers)

    def _apply(
        self,
        state: ConnectionState,
        consumer: Consumer,
        taken: list[tuple[str, Entry]],
        settlement: Settlement,
    ) -> None:
        owners = state.ack_owners
        context = self._context
        for key, entry in taken:
            owners.pop(key, None)
            container = entry.container
            if settlement is _ACCEPT:
                if context.tracing:
                    context.trace_entry(TraceKind.ACKED, entry, consumer)
                container.acknowledge(entry)
            else:
                self._refuse(entry, settlement)

    def _refuse(self, entry: Entry, settlement: Settlement) -> None:
        """A delivery the consumer did not accept: back to its queue, or to the DLQ."""
        container = entry.container
        policy = container.policy
        in_dlq = policy.dead_letter.is_dead_letter_destination(container.destination)
        redelivers = settlement is Settlement.REDELIVER or (
            settlement is Settlement.NACK and policy.redelivery.nack_redelivers
        )
        if settlement is Settlement.RELEASE:
            container.release(entry, counted=False)
        elif redelivers or in_dlq:
            container.release(entry)
        else:
            container.remove_in_flight(entry)
            cause = "Poison ack (STOMP NACK)" if settlement is Settlement.NACK else "Rejected"
            self._dispatch.dead_letter(entry, cause)

    def acknowledge_written(self, deliveries: Iterable[Delivery]) -> None:
        """Auto-ack: the service wrote these MESSAGE frames, so they count as consumed."""
        connections = self._connections
        context = self._context
        for delivery in deliveries:
            consumer = delivery.consumer
            if consumer.entry(delivery.ack_id) is None:
                continue  # unsubscribed meanwhile: already released
            if consumer.connection_id not in connections:
                continue
            entry = consumer.take(delivery.ack_id)
            if context.tracing:
                context.trace_entry(TraceKind.ACKED, entry, consumer)
            entry.container.acknowledge(entry)
            self._dispatch_later(consumer.containers)

    # -- transactions -------------------------------------------------------------------------

    def transaction(self, state: ConnectionState, transaction_id: str) -> Transaction:
        try:
            return state.transactions[transaction_id]
        except KeyError:
            raise BrokerError(f"Invalid transaction id: {transaction_id}") from None

    def begin(self, state: ConnectionState, transaction_id: str) -> None:
        if transaction_id in state.transactions:
            raise BrokerError(f"The transaction was already started: {transaction_id}")
        state.transactions[transaction_id] = Transaction(transaction_id)

    def commit(self, state: ConnectionState, transaction_id: str) -> None:
        tx = self.transaction(state, transaction_id)
        if tx.refused is not None:
            self.abort(state, transaction_id)
            raise BrokerError(
                f"Transaction {transaction_id} was rolled back: a send in it was refused "
                f"({tx.refused})",
                fatal=False,
            )
        del state.transactions[transaction_id]
        for message, targets in tx.sends:
            self._route(message, targets)
        for acked in tx.acks:
            consumer = acked.consumer
            taken: list[tuple[str, Entry]] = []
            for ack_id in acked.ack_ids:
                if consumer.entry(ack_id) is not None:
                    taken.append((ack_id, consumer.take(ack_id)))
            self._apply(state, consumer, taken, acked.settlement)
            self._dispatch_later(consumer.containers)

    def abort(self, state: ConnectionState, transaction_id: str) -> None:
        tx = self.transaction(state, transaction_id)
        del state.transactions[transaction_id]
        for acked in tx.acks:
            for ack_id in acked.ack_ids:
                entry = acked.consumer.entry(ack_id)
                if entry is not None and entry.acked_in_transaction == transaction_id:
                    entry.acked_in_transaction = None
                    acked.consumer.restore_credit(entry)


_ACCEPT = Settlement.ACCEPT


def forget_consumer(state: ConnectionState, consumer: Consumer) -> None:
    """The consumer is gone: its transacted acks and ack ids go with it."""
    for transaction in state.transactions.values():
        transaction.acks = [a for a in transaction.acks if a.consumer is not consumer]
    for ack_id in list(state.ack_owners):
        if state.ack_owners[ack_id] is consumer:
            del state.ack_owners[ack_id]


def _resolve(state: ConnectionState, ref: AckRef, verb: str) -> tuple[Consumer, str]:
    if ref.ack_id is not None:
        consumer = state.ack_owners.get(ref.ack_id)
        if consumer is not None and consumer.entry(ref.ack_id) is not None:
            return consumer, ref.ack_id
        raise BrokerError(f"Unexpected {verb} received for message-id [{ref.ack_id}]")
    if ref.message_id is None:
        raise BrokerError(f"{verb} received without a message-id to acknowledge")
    candidates: Iterable[Consumer]
    if ref.subscription_id is not None:
        consumer_or_none = state.consumers.get(ref.subscription_id)
        candidates = [consumer_or_none] if consumer_or_none is not None else []
    else:
        candidates = state.consumers.values()
    for consumer in candidates:
        ack_id = consumer.ack_id_for_message(ref.message_id)
        if ack_id is not None:
            return consumer, ack_id
    raise BrokerError(f"Unexpected {verb} received for message-id [{ref.message_id}]")
