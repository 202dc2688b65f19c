"""Where each command goes and when its receipt is due: the fanout's decisions, as pure code.

Members are named by their ``BrokerKey``; the transport says which are connected and which is
the primary, and performs what the ledger returns (commands to write, receipts to answer).
The rules (seed 001 §8.3, reference §3.6, and the package docstring):

* ``fans_out``: a SEND to a topic (or to a queue with ``fanOutQueues``) and every command but
  SUBSCRIBE, UNSUBSCRIBE, ACK and NACK go to every connected member; those four and queue SENDs
  go to the primary. A transaction's commands go only to the members that took its BEGIN.
* A receipt is due once ``minAckCount`` members confirmed a SEND outside a transaction (the
  ``RequestCounter`` of ActiveMQ), once every target confirmed anything else; an ERROR fails it.
* When a member is lost, a SEND outside a transaction that it had not confirmed (and a durable
  UNSUBSCRIBE) stays due and is written to the next member that can confirm it (``resend_to``);
  a SUBSCRIBE goes to the next primary with the others (``subscriptions_for``); a browse fails;
  a COMMIT in flight is in doubt; anything else counts as done by that member (its broker
  dropped the transaction, released the messages or the subscription with the connection).
  Every transaction it took becomes rollback-only: its COMMIT is turned into an ABORT and
  answered with ``TransactionRolledBack``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ferrymq.client.commands import (
    Abort,
    Acknowledge,
    Begin,
    Command,
    Commit,
    Send,
    Subscribe,
    Unsubscribe,
)
from ferrymq.client.errors import ClientError, SubscriptionClosedError
from ferrymq.client.failover.policy import BrokerKey
from ferrymq.client.failover.tracker import LocalAnswer, in_doubt_error, rollback_only_error
from ferrymq.stomp.constants import BROWSER, FERRYMQ_PRODUCER_MESSAGE_ID

TOPIC_PREFIXES = ("/topic/", "/temp-topic/", "/remote-temp-topic/")


def fans_out(command: Command, fan_out_queues: bool) -> bool:
    """Whether ``command`` goes to every member (ActiveMQ's ``isFanoutCommand``). A composite
    destination counts as what its first destination is."""
    match command:
        case Send(destination=destination):
            first = destination.split(",", 1)[0].strip()
            return fan_out_queues or first.startswith(TOPIC_PREFIXES)
        case Subscribe() | Unsubscribe() | Acknowledge():
            return False
        case _:
            return True


def for_member(command: Command, key: BrokerKey, fan: bool) -> Command:
    """A fanned-out SEND carries a producer message id of its own per broker, so the copies
    are distinct messages (as in ActiveMQ) while a copy written again to the same broker is
    still a duplicate there."""
    if not fan or not isinstance(command, Send):
        return command
    own = command.headers.get(FERRYMQ_PRODUCER_MESSAGE_ID)
    if own is None:
        return command
    tagged = f"{own}@{key[0]}:{key[1]}"
    return replace(command, headers={**command.headers, FERRYMQ_PRODUCER_MESSAGE_ID: tagged})


def _is_browse(command: Command) -> bool:
    return isinstance(command, Subscribe) and command.headers.get(BROWSER) == "true"


@dataclass(slots=True, eq=False)
class Request:
    """A command with a receipt, until enough members confirmed it."""

    command: Command
    fan: bool
    needed: int
    confirmed: set[BrokerKey] = field(default_factory=set)
    inflight: set[BrokerKey] = field(default_factory=set)

    @property
    def resendable(self) -> bool:
        """Written to another connection when a member is lost before confirming it (the
        broker's duplicate detection drops a SEND it already has)."""
        command = self.command
        if isinstance(command, Send):
            return command.transaction is None
        return isinstance(command, Unsubscribe) and command.durable_name is not None

    @property
    def missing(self) -> int:
        return self.needed - len(self.confirmed) - len(self.inflight)


@dataclass(slots=True)
class _Transaction:
    holders: set[BrokerKey]
    """The members that took its BEGIN and were not lost since."""
    rollback_only: bool = False


@dataclass(frozen=True, slots=True)
class Plan:
    """What to do with one command: write ``command`` to ``targets`` (each with
    ``for_member``), then answer ``answers``."""

    command: Command
    targets: tuple[BrokerKey, ...]
    fan: bool
    answers: tuple[LocalAnswer, ...] = ()


class FanoutLedger:
    def __init__(self, *, min_ack_count: int, fan_out_queues: bool) -> None:
        self.min_ack_count = min_ack_count
        self.fan_out_queues = fan_out_queues
        self.requests: dict[str, Request] = {}
        """By receipt id, in the order written."""
        self.subscriptions: dict[str, Subscribe] = {}
        """Live subscriptions (not browses), by id, with the receipt they were written with."""
        self._transactions: dict[str, _Transaction] = {}

    # ---- what the application writes ----

    def plan(self, command: Command, up: Sequence[BrokerKey], primary: BrokerKey | None) -> Plan:
        """Route ``command`` among the connected members ``up`` and record what it changes."""
        answers: tuple[LocalAnswer, ...] = ()
        if isinstance(command, Commit):
            state = self._transactions.get(command.transaction)
            if state is not None and state.rollback_only:
                # A member's broker aborted its part with the connection: abort the rest too.
                answers = (
                    (LocalAnswer(command.receipt, rollback_only_error(command.transaction)),)
                    if command.receipt is not None
                    else ()
                )
                command = Abort(command.transaction)
        fan = fans_out(command, self.fan_out_queues)
        targets = self._route(command, list(up), primary, fan)
        receipt = command.receipt
        if receipt is not None:
            if fan and isinstance(command, Send) and command.transaction is None:
                needed = min(self.min_ack_count, len(targets))
            else:
                needed = len(targets) if fan else min(1, len(targets))
            request = Request(command, fan, needed, inflight=set(targets))
            self.requests[receipt] = request
            answers = (*answers, *self._settle(receipt, request))
        return Plan(command, tuple(targets), fan, answers)

    def _route(
        self, command: Command, up: list[BrokerKey], primary: BrokerKey | None, fan: bool
    ) -> list[BrokerKey]:
        match command:
            case Begin():
                self._transactions[command.transaction] = _Transaction(set(up))
                return up
            case Commit() | Abort():
                state = self._transactions.pop(command.transaction, None)
                return up if state is None else [key for key in up if key in state.holders]
            case Subscribe() if not _is_browse(command):
                self.subscriptions[command.id] = command
            case Unsubscribe():
                self.subscriptions.pop(command.id, None)
        transaction = command.transaction if isinstance(command, Send | Acknowledge) else None
        state = self._transactions.get(transaction) if transaction is not None else None
        if state is not None:
            up = [key for key in up if key in state.holders]
        if fan:
            return up
        return [primary] if primary is not None and primary in up else []

    def forget(self, receipt_id: str) -> None:
        """The command was not written after all (its write raised)."""
        self.requests.pop(receipt_id, None)

    # ---- what the members answer ----

    def confirmed(self, key: BrokerKey, receipt_id: str) -> tuple[LocalAnswer, ...]:
        request = self.requests.get(receipt_id)
        if request is None:
            return ()
        request.inflight.discard(key)
        request.confirmed.add(key)
        return self._settle(receipt_id, request)

    def refused(self, receipt_id: str) -> bool:
        """A member answered ERROR: True if that fails a request still due (the ERROR goes to
        the application), False if it was answered already."""
        request = self.requests.pop(receipt_id, None)
        if request is None:
            return False
        if isinstance(request.command, Subscribe):
            self.subscriptions.pop(request.command.id, None)
        return True

    def _settle(self, receipt_id: str, request: Request) -> tuple[LocalAnswer, ...]:
        if len(request.confirmed) < request.needed:
            return ()
        del self.requests[receipt_id]
        return (LocalAnswer(receipt_id),)

    # ---- members coming and going ----

    def lost(self, key: BrokerKey) -> list[LocalAnswer]:
        """Member ``key`` lost its connection (or was removed): settle what it took along."""
        for state in self._transactions.values():
            if key in state.holders:
                state.holders.discard(key)
                state.rollback_only = True
        answers: list[LocalAnswer] = []
        for receipt_id, request in list(self.requests.items()):
            if key not in request.inflight:
                continue
            request.inflight.discard(key)
            command = request.command
            if request.resendable or (isinstance(command, Subscribe) and not _is_browse(command)):
                continue  # still due: written again (resend_to, subscriptions_for)
            error: ClientError | None = None
            if isinstance(command, Subscribe):
                error = SubscriptionClosedError("the browse was interrupted: its broker was lost")
            elif isinstance(command, Commit):
                error = in_doubt_error(command.transaction)
            if error is not None:
                del self.requests[receipt_id]
                answers.append(LocalAnswer(receipt_id, error))
                continue
            request.needed = min(request.needed, len(request.confirmed) + len(request.inflight))
            answers.extend(self._settle(receipt_id, request))
        return answers

    def subscriptions_for(self, key: BrokerKey) -> list[Subscribe]:
        """The subscriptions to write to a new primary, each with its receipt if that is
        still due (it is then in flight there)."""
        replay: list[Subscribe] = []
        for subscribe in self.subscriptions.values():
            receipt = subscribe.receipt
            request = self.requests.get(receipt) if receipt is not None else None
            if request is not None:
                request.inflight.add(key)
            replay.append(subscribe if request is not None else replace(subscribe, receipt=None))
        return replay

    def resend_to(self, key: BrokerKey, *, primary: bool) -> list[Command]:
        """The requests still short of confirmations that member ``key`` (the primary or
        not) can take, in the order written, now in flight there."""
        commands: list[Command] = []
        for request in self.requests.values():
            if (
                request.resendable
                and request.missing > 0
                and key not in request.confirmed
                and key not in request.inflight
                and (request.fan or primary)
            ):
                request.inflight.add(key)
                commands.append(for_member(request.command, key, request.fan))
        return commands

    def clear(self) -> None:
        self.requests.clear()
