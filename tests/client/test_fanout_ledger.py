"""The fanout's decisions without sockets (reference §3.6): where each command goes, when its
receipt is due, and what a lost member leaves behind."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ferrymq.client import SubscriptionClosedError, TransactionRolledBack
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
from ferrymq.client.failover.tracker import LocalAnswer
from ferrymq.client.fanout import FanoutLedger, fans_out
from ferrymq.client.fanout.ledger import for_member
from ferrymq.stomp.constants import BROWSER, FERRYMQ_PRODUCER_MESSAGE_ID
from ferrymq.stomp.events import MessageEvent

A, B, C = ("a", 1), ("b", 2), ("c", 3)
PID = FERRYMQ_PRODUCER_MESSAGE_ID


def send(destination: str, receipt: str | None = "r1", tx: str | None = None) -> Send:
    return Send(destination, b"x", {PID: "p:1"}, tx, receipt)


def ack(receipt: str | None = None, tx: str | None = None) -> Acknowledge:
    event = MessageEvent("/queue/q", "m1", "s1", "m1", {}, b"")
    return Acknowledge(event, transaction=tx, receipt=receipt)


def subscribe(receipt: str | None = "rs", browse: bool = False) -> Subscribe:
    headers = {BROWSER: "true"} if browse else {}
    return Subscribe("s1", "/queue/q", "auto", None, headers, receipt)


@pytest.mark.parametrize(
    ("command", "queues", "expected"),
    [
        (send("/topic/t"), False, True),
        (send("/temp-topic/t"), False, True),
        (send("/queue/q"), False, False),
        (send("/queue/q"), True, True),
        (send("q"), False, False),  # an unprefixed name is a queue
        (send("/topic/t,/queue/q"), False, True),
        (send("/queue/q,/topic/t"), False, False),
        (subscribe(), True, False),
        (Unsubscribe("s1"), True, False),
        (ack(), True, False),
        (Begin("t"), False, True),
        (Commit("t"), False, True),
        (Abort("t"), False, True),
        (Disconnect(), False, True),
    ],
)
def test_which_commands_fan_out(command: Command, queues: bool, expected: bool) -> None:
    assert fans_out(command, queues) is expected


def test_a_topic_send_goes_to_all_and_is_receipted_after_min_ack_count() -> None:
    ledger = FanoutLedger(min_ack_count=2, fan_out_queues=False)
    plan = ledger.plan(send("/topic/t"), [A, B, C], A)
    assert plan.targets == (A, B, C)
    assert plan.fan
    assert plan.answers == ()
    assert ledger.confirmed(B, "r1") == ()
    assert ledger.confirmed(C, "r1") == (LocalAnswer("r1"),)
    assert ledger.confirmed(A, "r1") == ()  # answered once only


def test_a_queue_send_goes_to_the_primary_only_unless_fan_out_queues() -> None:
    ledger = FanoutLedger(min_ack_count=2, fan_out_queues=False)
    plan = ledger.plan(send("/queue/q"), [A, B], B)
    assert plan.targets == (B,)
    assert ledger.confirmed(B, "r1") == (
        LocalAnswer(
            "r1",
        ),
    )
    fanned = FanoutLedger(min_ack_count=2, fan_out_queues=True)
    assert fanned.plan(send("/queue/q"), [A, B], B).targets == (A, B)


def test_each_broker_copy_of_a_fanned_send_has_its_own_producer_message_id() -> None:
    topic = send("/topic/t")
    copies = [for_member(topic, key, True) for key in (A, B)]
    assert [c.headers[PID] for c in copies if isinstance(c, Send)] == ["p:1@a:1", "p:1@b:2"]
    assert for_member(topic, A, True) == copies[0]  # the same broker: the same id again
    assert for_member(send("/queue/q"), A, False).headers[PID] == "p:1"  # type: ignore[union-attr]


def test_consumer_commands_go_to_the_primary_only() -> None:
    ledger = FanoutLedger(min_ack_count=2, fan_out_queues=True)
    assert ledger.plan(subscribe(), [A, B], B).targets == (B,)
    assert ledger.plan(ack("ra"), [A, B], B).targets == (B,)
    assert ledger.plan(Unsubscribe("s1", receipt="ru"), [A, B], B).targets == (B,)
    assert ledger.subscriptions == {}


def test_an_error_fails_a_request_once() -> None:
    ledger = FanoutLedger(min_ack_count=2, fan_out_queues=False)
    ledger.plan(send("/topic/t"), [A, B], A)
    assert ledger.refused("r1")
    assert not ledger.refused("r1")
    assert ledger.confirmed(B, "r1") == ()


def test_an_unconfirmed_send_of_a_lost_member_goes_to_the_next_that_can_take_it() -> None:
    ledger = FanoutLedger(min_ack_count=2, fan_out_queues=False)
    ledger.plan(send("/topic/t"), [A, B], A)
    assert ledger.confirmed(A, "r1") == ()
    assert ledger.lost(B) == []  # still due
    assert ledger.resend_to(A, primary=True) == []  # A has it already
    (again,) = ledger.resend_to(C, primary=False)
    assert isinstance(again, Send)
    assert again.headers[PID] == "p:1@c:3"
    assert ledger.resend_to(B, primary=False) == []  # in flight at C: enough copies out
    assert ledger.confirmed(C, "r1") == (LocalAnswer("r1"),)


def test_a_queue_send_lost_with_the_primary_goes_to_the_next_primary() -> None:
    ledger = FanoutLedger(min_ack_count=2, fan_out_queues=False)
    ledger.plan(send("/queue/q"), [A, B], A)
    ledger.lost(A)
    assert ledger.resend_to(C, primary=False) == []
    (again,) = ledger.resend_to(B, primary=True)
    assert again == send("/queue/q")  # the same id: a network of brokers drops a copy


def test_subscriptions_are_written_to_a_new_primary_with_a_pending_receipt() -> None:
    ledger = FanoutLedger(min_ack_count=1, fan_out_queues=False)
    ledger.plan(subscribe("rs"), [A], A)
    assert ledger.lost(A) == []  # SUBSCRIBE is still due: it goes to the next primary
    assert ledger.subscriptions_for(B) == [subscribe("rs")]
    assert ledger.confirmed(B, "rs") == (LocalAnswer("rs"),)
    assert ledger.subscriptions_for(C) == [subscribe(None)]
    ledger.plan(Unsubscribe("s1"), [C], C)
    assert ledger.subscriptions_for(A) == []


def test_what_a_lost_primary_settles() -> None:
    ledger = FanoutLedger(min_ack_count=1, fan_out_queues=False)
    ledger.plan(ack("ra"), [A], A)
    ledger.plan(subscribe("rb", browse=True), [A], A)
    ledger.plan(Unsubscribe("s9", receipt="ru"), [A], A)
    answers = {answer.receipt_id: answer.error for answer in ledger.lost(A)}
    assert answers.keys() == {"ra", "rb", "ru"}
    assert answers["ra"] is None  # the broker released the message: it comes back
    assert answers["ru"] is None  # the subscription went with the connection
    assert isinstance(answers["rb"], SubscriptionClosedError)
    assert ledger.subscriptions == {}


def test_a_transaction_that_lost_a_member_is_rolled_back_at_commit() -> None:
    ledger = FanoutLedger(min_ack_count=2, fan_out_queues=False)
    assert ledger.plan(Begin("t"), [A, B], A).targets == (A, B)
    assert ledger.plan(send("/topic/t", None, "t"), [A, B, C], A).targets == (A, B)
    ledger.lost(B)
    plan = ledger.plan(Commit("t", "rc"), [A, C], A)
    assert plan.command == Abort("t")
    assert plan.targets == (A,)
    (answer,) = plan.answers
    assert answer.receipt_id == "rc"
    assert isinstance(answer.error, TransactionRolledBack)


def test_a_commit_in_flight_on_a_lost_member_is_in_doubt() -> None:
    ledger = FanoutLedger(min_ack_count=2, fan_out_queues=False)
    ledger.plan(Begin("t"), [A, B], A)
    plan = ledger.plan(Commit("t", "rc"), [A, B], A)
    assert plan.command == Commit("t", "rc")
    assert ledger.confirmed(A, "rc") == ()  # every member that took BEGIN must commit
    (answer,) = ledger.lost(B)
    assert isinstance(answer.error, TransactionRolledBack)
    assert "in doubt" in str(answer.error)


def test_disconnect_is_answered_by_the_members_left() -> None:
    ledger = FanoutLedger(min_ack_count=2, fan_out_queues=False)
    ledger.plan(Disconnect("rd"), [A, B], A)
    assert ledger.confirmed(A, "rd") == ()
    assert ledger.lost(B) == [LocalAnswer("rd")]
    assert ledger.plan(Disconnect("re"), [], None).answers == (LocalAnswer("re"),)


events = st.lists(
    st.tuples(st.sampled_from(["confirm", "lose", "resend"]), st.sampled_from([A, B, C])),
    max_size=30,
)


@given(events)
def test_a_fanned_send_is_answered_once_when_confirmed_and_never_over_sent(
    steps: list[tuple[str, tuple[str, int]]],
) -> None:
    """Whatever members confirm, drop and come back, in any order: the receipt is answered at
    most once, only after min_ack_count members confirmed; a re-send never puts out more copies
    than are still needed, and offering it to every member gets enough copies out again."""
    ledger = FanoutLedger(min_ack_count=2, fan_out_queues=False)
    ledger.plan(send("/topic/t"), [A, B, C], A)
    confirmed: set[tuple[str, int]] = set()
    answered = 0
    for action, key in steps:
        request = ledger.requests.get("r1")
        if action == "confirm":
            if request is not None and key in request.inflight:  # a broker confirms what it got
                confirmed.add(key)
                answered += len(ledger.confirmed(key, "r1"))
        elif action == "lose":
            answered += len(ledger.lost(key))
        elif request is not None:
            before = len(request.confirmed) + len(request.inflight)
            ledger.resend_to(key, primary=False)
            assert len(request.confirmed) + len(request.inflight) <= max(before, 2)
    assert answered <= 1
    assert answered == 0 or len(confirmed) >= 2
    request = ledger.requests.get("r1")
    if request is not None:
        for key in (A, B, C):
            ledger.resend_to(key, primary=False)
        assert len(request.confirmed) + len(request.inflight) >= 2
