"""What a new broker must be told so a connection carries on: ActiveMQ's ConnectionStateTracker.

Pure bookkeeping on the commands a connection writes (``track``) and the receipts that come
back (``on_receipt``/``on_error``); at a failover, ``interrupt`` settles what cannot be carried
over and ``replay`` lists what to write to the new broker, in this order (reference §1.5):

1. every live subscription, same id, destination, ack mode, selector and headers (durable
   name, prefetch), each with a receipt the transport awaits before anything else;
2. every open transaction: BEGIN, and unless it is rollback-only its sends (same producer
   message ids) and its COMMIT if that was in flight;
3. every send outside a transaction that was written and not yet receipted, in the order
   written, same headers and receipt id (with ``trackMessages``, also those the application
   sent without a receipt: the tracker asked for one on its behalf);
4. a durable unsubscribe still in flight.

The broker's duplicate detection (``ferrymq.producer-message-id``) drops a re-sent message it
already stored, also inside a replayed transaction, whose ids the broker records at COMMIT: so a
send or a sends-only COMMIT whose outcome was lost becomes exactly-once.

Transactions (reference §1.6): the broker aborts a connection's transactions when it goes, and
an ACK cannot be carried over (its message was released and comes back redelivered). So a
transaction that had acknowledged something becomes *rollback-only*: its BEGIN is replayed (so
what the application does next in it is accepted) but its COMMIT is turned into an ABORT and
answered with ``TransactionRolledBack`` ("Commit of <tx> failed due to rollback only request;
typically due to failover with pending acks"). If that COMMIT was already in flight, its outcome
is unknown and it is answered at once with "Transaction completion in doubt due to failover.
Forcing rollback of <tx>". An ABORT in flight is answered as done: the broker aborted anyway.

Settled locally at ``interrupt`` (never re-sent): ACKs and NACKs (stale, as in ActiveMQ's
``oneway``), plain UNSUBSCRIBEs (the subscription is simply not restored), DISCONNECT, and a
browse (a snapshot cannot resume; it fails with ``SubscriptionClosedError``).
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Final

from ferrymq.client.commands import (
    Abort,
    Acknowledge,
    Begin,
    Command,
    Commit,
    Disconnect,
    Send,
    Subscribe,
    Unsubscribe,
)
from ferrymq.client.errors import ClientError, SubscriptionClosedError, TransactionRolledBack
from ferrymq.stomp.constants import BROWSER

INTERNAL_RECEIPT_PREFIX: Final = "ferrymq-failover-"
"""Receipts the failover transport asks for itself; never handed to the application."""


def rollback_only_error(transaction: str) -> TransactionRolledBack:
    return TransactionRolledBack(
        f"Commit of {transaction} failed due to rollback only request; "
        "typically due to failover with pending acks",
        transaction,
    )


def in_doubt_error(transaction: str) -> TransactionRolledBack:
    return TransactionRolledBack(
        f"Transaction completion in doubt due to failover. Forcing rollback of {transaction}",
        transaction,
    )


@dataclass(frozen=True, slots=True)
class LocalAnswer:
    """A receipt the transport answers itself: done (``error`` None) or failed."""

    receipt_id: str
    error: ClientError | None = None


@dataclass(frozen=True, slots=True)
class Outgoing:
    """What to do with a command: write ``command`` (if any), and answer ``answers``."""

    command: Command | None
    answers: tuple[LocalAnswer, ...] = ()


@dataclass(frozen=True, slots=True)
class SubscriptionReplay:
    command: Subscribe
    """Carries an internal receipt, to be awaited."""
    original_receipt: str | None
    """The application's receipt if its SUBSCRIBE was still unanswered."""


@dataclass(frozen=True, slots=True)
class ReplayPlan:
    subscriptions: tuple[SubscriptionReplay, ...]
    commands: tuple[Command, ...]


class _Pending(Enum):
    """Receipted commands settled locally or replayed at a failover."""

    ACK = "ack"
    UNSUBSCRIBE = "unsubscribe"
    DURABLE_UNSUBSCRIBE = "durable-unsubscribe"
    DISCONNECT = "disconnect"
    BROWSE = "browse"


@dataclass(slots=True)
class _Transaction:
    begin: Begin
    sends: list[Send] = field(default_factory=list)
    has_acks: bool = False
    rollback_only: bool = False
    ending: Commit | Abort | None = None


@dataclass(slots=True)
class _Subscription:
    command: Subscribe
    pending_receipt: str | None


class StateTracker:
    def __init__(self, *, track_messages: bool = False, max_cache_bytes: int = 131_072) -> None:
        self.track_messages = track_messages
        self.max_cache_bytes = max_cache_bytes
        self._ids: Iterator[int] = itertools.count(1)
        self._subscriptions: dict[str, _Subscription] = {}
        self._subscribe_receipts: dict[str, str] = {}
        self._transactions: dict[str, _Transaction] = {}
        self._endings: dict[str, str] = {}
        """COMMIT/ABORT receipt -> transaction id."""
        self._sends: OrderedDict[str, Send] = OrderedDict()
        """Unreceipted sends outside transactions, by receipt id, in the order written."""
        self._cached: OrderedDict[str, int] = OrderedDict()
        """The ``trackMessages`` part of ``_sends``: receipt id -> size, oldest first."""
        self.cache_bytes = 0
        self._pending: dict[str, tuple[_Pending, Unsubscribe | None]] = {}

    def internal_receipt(self, kind: str) -> str:
        return f"{INTERNAL_RECEIPT_PREFIX}{kind}-{next(self._ids)}"

    # ---- what the application writes ----

    def track(self, command: Command, *, stale: bool = False) -> Outgoing:
        """Record ``command`` before it is written; ``stale`` marks an ack of a message from
        before the last failover (never sent)."""
        match command:
            case Send():
                return Outgoing(self._track_send(command))
            case Acknowledge():
                return self._track_ack(command, stale)
            case Subscribe():
                self._track_subscribe(command)
            case Unsubscribe():
                self._subscriptions.pop(command.id, None)
                kind = (
                    _Pending.DURABLE_UNSUBSCRIBE if command.durable_name else _Pending.UNSUBSCRIBE
                )
                self._expect(command.receipt, kind, command)
            case Begin():
                self._transactions[command.transaction] = _Transaction(command)
            case Commit() | Abort():
                return self._track_end(command)
            case Disconnect():
                self._expect(command.receipt, _Pending.DISCONNECT)
        return Outgoing(command)

    def settle_disconnected(self, command: Command) -> Outgoing | None:
        """A command written while no broker is connected (nor being restored), if it needs
        none: a plain UNSUBSCRIBE (its subscription is then not restored) or an ABORT (the
        broker that had the transaction aborted it when the connection went, and it is not
        replayed) is done at once and its receipt answered here. None: it waits for a broker.

        Settling them here rather than letting them wait matters when the wait is given up (a
        cancelled consumer leaving ``async with``): a command never tracked would leave its
        subscription to be restored, with nobody to take its messages."""
        match command:
            case Unsubscribe(durable_name=None):
                self.forget_subscription(command.id)
            case Abort():
                transaction = self._transactions.pop(command.transaction, None)
                ending = transaction.ending if transaction is not None else None
                if ending is not None and ending.receipt is not None:
                    self._endings.pop(ending.receipt, None)
            case _:
                return None
        answers = (LocalAnswer(command.receipt),) if command.receipt is not None else ()
        return Outgoing(None, answers)

    def _expect(
        self, receipt: str | None, kind: _Pending, command: Unsubscribe | None = None
    ) -> None:
        if receipt is not None:
            self._pending[receipt] = (kind, command)

    def _track_send(self, send: Send) -> Send:
        if send.transaction is not None:
            transaction = self._transactions.get(send.transaction)
            if transaction is not None:
                transaction.sends.append(send)
            return send
        if send.receipt is not None:
            self._sends[send.receipt] = send
            return send
        if not self.track_messages:
            return send
        size = _size(send)
        if size > self.max_cache_bytes:
            return send  # too big for the cache: sent as the application asked
        tracked = replace(send, receipt=self.internal_receipt("track"))
        assert tracked.receipt is not None
        self._sends[tracked.receipt] = tracked
        self._cached[tracked.receipt] = size
        self.cache_bytes += size
        while self.cache_bytes > self.max_cache_bytes:  # LRU, as ActiveMQ's messageCache
            oldest, evicted = self._cached.popitem(last=False)
            self.cache_bytes -= evicted
            del self._sends[oldest]
        return tracked

    def _track_ack(self, ack: Acknowledge, stale: bool) -> Outgoing:
        transaction = self._transactions.get(ack.transaction or "")
        if stale:
            if transaction is not None:
                transaction.rollback_only = True
            answers = (LocalAnswer(ack.receipt),) if ack.receipt is not None else ()
            return Outgoing(None, answers)
        if transaction is not None:
            transaction.has_acks = True
        self._expect(ack.receipt, _Pending.ACK)
        return Outgoing(ack)

    def _track_subscribe(self, subscribe: Subscribe) -> None:
        if subscribe.headers.get(BROWSER) == "true":
            self._expect(subscribe.receipt, _Pending.BROWSE)
            return
        self._subscriptions[subscribe.id] = _Subscription(
            replace(subscribe, receipt=None), subscribe.receipt
        )
        if subscribe.receipt is not None:
            self._subscribe_receipts[subscribe.receipt] = subscribe.id

    def _track_end(self, end: Commit | Abort) -> Outgoing:
        transaction = self._transactions.get(end.transaction)
        if transaction is None:
            return Outgoing(end)
        if isinstance(end, Commit) and transaction.rollback_only:
            del self._transactions[end.transaction]
            abort = Abort(end.transaction, self.internal_receipt("abort"))
            answers: tuple[LocalAnswer, ...] = ()
            if end.receipt is not None:
                answers = (LocalAnswer(end.receipt, rollback_only_error(end.transaction)),)
            return Outgoing(abort, answers)
        transaction.ending = end
        if end.receipt is not None:
            self._endings[end.receipt] = end.transaction
        return Outgoing(end)

    # ---- what the broker answers ----

    def on_receipt(self, receipt_id: str) -> bool:
        """Settle what ``receipt_id`` answers; True when the application should see it."""
        self._settle(receipt_id)
        return not receipt_id.startswith(INTERNAL_RECEIPT_PREFIX)

    def on_error(self, receipt_id: str) -> None:
        """The broker refused the command with this receipt: nothing of it is kept."""
        subscription_id = self._subscribe_receipts.get(receipt_id)
        if subscription_id is not None:
            self.forget_subscription(subscription_id)
            return
        self._settle(receipt_id)

    def _settle(self, receipt_id: str) -> None:
        if self._sends.pop(receipt_id, None) is not None:
            size = self._cached.pop(receipt_id, None)
            if size is not None:
                self.cache_bytes -= size
            return
        subscription_id = self._subscribe_receipts.pop(receipt_id, None)
        if subscription_id is not None:
            subscription = self._subscriptions.get(subscription_id)
            if subscription is not None and subscription.pending_receipt == receipt_id:
                subscription.pending_receipt = None
            return
        transaction_id = self._endings.pop(receipt_id, None)
        if transaction_id is not None:
            self._transactions.pop(transaction_id, None)
            return
        self._pending.pop(receipt_id, None)

    def forget_subscription(self, subscription_id: str) -> None:
        """A replayed subscription the new broker refused."""
        subscription = self._subscriptions.pop(subscription_id, None)
        if subscription is not None and subscription.pending_receipt is not None:
            self._subscribe_receipts.pop(subscription.pending_receipt, None)

    def confirm_subscription(self, subscription_id: str) -> str | None:
        """A replayed subscription is in place; returns the application's receipt it
        answers, if its SUBSCRIBE was still unanswered."""
        subscription = self._subscriptions.get(subscription_id)
        if subscription is None or subscription.pending_receipt is None:
            return None
        receipt, subscription.pending_receipt = subscription.pending_receipt, None
        self._subscribe_receipts.pop(receipt, None)
        return receipt

    # ---- failover ----

    def interrupt(self) -> list[LocalAnswer]:
        """The connection is gone: settle what cannot be carried over (module docstring)."""
        answers: list[LocalAnswer] = []
        for transaction_id, transaction in list(self._transactions.items()):
            if transaction.has_acks:
                transaction.rollback_only = True
                transaction.has_acks = False
            end = transaction.ending
            if end is None:
                continue
            if isinstance(end, Abort) or transaction.rollback_only:
                del self._transactions[transaction_id]
                if end.receipt is not None:
                    self._endings.pop(end.receipt, None)
                    doubt = None if isinstance(end, Abort) else in_doubt_error(transaction_id)
                    answers.append(LocalAnswer(end.receipt, doubt))
        for receipt_id, (kind, _) in list(self._pending.items()):
            if kind is _Pending.DURABLE_UNSUBSCRIBE:
                continue
            del self._pending[receipt_id]
            error: ClientError | None = None
            if kind is _Pending.BROWSE:
                error = SubscriptionClosedError("the browse was interrupted by a failover")
            answers.append(LocalAnswer(receipt_id, error))
        return answers

    def replay(self) -> ReplayPlan:
        """What to write to the new broker, in order (module docstring)."""
        subscriptions = tuple(
            SubscriptionReplay(
                replace(s.command, receipt=self.internal_receipt("subscribe")), s.pending_receipt
            )
            for s in self._subscriptions.values()
        )
        commands: list[Command] = []
        for transaction in self._transactions.values():
            commands.append(transaction.begin)
            if transaction.rollback_only:
                transaction.sends.clear()
                continue
            commands.extend(transaction.sends)
            if transaction.ending is not None:
                commands.append(transaction.ending)
        commands.extend(self._sends.values())
        commands.extend(
            command
            for kind, command in self._pending.values()
            if kind is _Pending.DURABLE_UNSUBSCRIBE and command is not None
        )
        return ReplayPlan(subscriptions, tuple(commands))

    # ---- looking ----

    @property
    def subscription_ids(self) -> list[str]:
        return list(self._subscriptions)

    @property
    def unreceipted_sends(self) -> int:
        return len(self._sends)

    def is_rollback_only(self, transaction: str) -> bool:
        state = self._transactions.get(transaction)
        return state is not None and state.rollback_only


def _size(send: Send) -> int:
    """What a send costs in the ``maxCacheSize`` budget: body, destination and headers."""
    return (
        len(send.body)
        + len(send.destination)
        + sum(len(name) + len(value) for name, value in send.headers.items())
    )
