"""The state tracker (reference §1.5-1.6): what is replayed, in which order, and what is
settled locally at a failover."""

from __future__ import annotations

from ferrymq.client.commands import (
    Abort,
    Acknowledge,
    Begin,
    Commit,
    Disconnect,
    Send,
    Subscribe,
    Unsubscribe,
)
from ferrymq.client.errors import SubscriptionClosedError, TransactionRolledBack
from ferrymq.client.failover.tracker import INTERNAL_RECEIPT_PREFIX, LocalAnswer, StateTracker
from ferrymq.stomp.events import MessageEvent

MESSAGE = MessageEvent("/queue/q", "ID:1", "sub-1", "ack-1", {}, b"x")


def send(n: int, *, receipt: str | None = None, tx: str | None = None) -> Send:
    return Send("/queue/q", b"x" * 10, {"ferrymq.producer-message-id": f"p:{n}"}, tx, receipt)


def test_subscriptions_come_first_with_internal_receipts_then_transactions_then_sends() -> None:
    tracker = StateTracker()
    tracker.track(Subscribe("sub-1", "/queue/q", "client-individual", "a > 1", {"x": "1"}, "r-1"))
    tracker.on_receipt("r-1")
    tracker.track(send(1, receipt="r-2"))
    tracker.track(Begin("tx-1"))
    tracker.track(send(2, tx="tx-1"))
    tracker.track(send(3, receipt="r-3"))
    tracker.on_receipt("r-2")
    plan = tracker.replay()
    (sub,) = plan.subscriptions
    assert sub.command.id == "sub-1"
    assert (sub.command.ack, sub.command.selector, dict(sub.command.headers)) == (
        "client-individual",
        "a > 1",
        {"x": "1"},
    )
    assert sub.command.receipt is not None
    assert sub.command.receipt.startswith(INTERNAL_RECEIPT_PREFIX)
    assert sub.original_receipt is None
    assert plan.commands == (Begin("tx-1"), send(2, tx="tx-1"), send(3, receipt="r-3"))


def test_an_unanswered_subscribe_is_replayed_and_its_receipt_answered_after() -> None:
    tracker = StateTracker()
    tracker.track(Subscribe("sub-1", "/queue/q", "auto", None, {}, "r-1"))
    (sub,) = tracker.replay().subscriptions
    assert sub.original_receipt == "r-1"
    assert tracker.confirm_subscription("sub-1") == "r-1"
    assert tracker.confirm_subscription("sub-1") is None


def test_unsubscribed_and_browsing_subscriptions_are_not_restored() -> None:
    tracker = StateTracker()
    tracker.track(Subscribe("sub-1", "/queue/q", "auto", None, {}, None))
    tracker.track(Subscribe("sub-2", "/queue/q", "auto", None, {"browser": "true"}, "r-9"))
    tracker.track(Unsubscribe("sub-1", None, "r-2"))
    answers = tracker.interrupt()
    assert LocalAnswer("r-2") in answers  # the subscription is simply not restored
    assert any(
        a.receipt_id == "r-9" and isinstance(a.error, SubscriptionClosedError) for a in answers
    )
    assert tracker.replay().subscriptions == ()


def test_a_durable_unsubscribe_in_flight_is_replayed() -> None:
    tracker = StateTracker()
    tracker.track(Unsubscribe("sub-1", "durable-1", "r-1"))
    assert tracker.interrupt() == []
    assert tracker.replay().commands == (Unsubscribe("sub-1", "durable-1", "r-1"),)


def test_acks_disconnect_and_aborts_in_flight_are_answered_locally() -> None:
    tracker = StateTracker()
    tracker.track(Acknowledge(MESSAGE, receipt="r-1"))
    tracker.track(Begin("tx-1"))
    tracker.track(Abort("tx-1", "r-2"))
    tracker.track(Disconnect("r-3"))
    assert sorted(tracker.interrupt(), key=lambda a: a.receipt_id) == [
        LocalAnswer("r-1"),
        LocalAnswer("r-2"),
        LocalAnswer("r-3"),
    ]
    assert tracker.replay().commands == ()


def test_stale_acks_are_not_sent_and_doom_their_transaction() -> None:
    tracker = StateTracker()
    tracker.track(Begin("tx-1"))
    outgoing = tracker.track(Acknowledge(MESSAGE, transaction="tx-1", receipt="r-1"), stale=True)
    assert outgoing.command is None
    assert outgoing.answers == (LocalAnswer("r-1"),)
    assert tracker.is_rollback_only("tx-1")


def test_a_sends_only_transaction_replays_whole_with_its_commit_in_flight() -> None:
    tracker = StateTracker()
    tracker.track(Begin("tx-1"))
    tracker.track(send(1, tx="tx-1"))
    tracker.track(send(2, tx="tx-1"))
    tracker.track(Commit("tx-1", "r-5"))
    assert tracker.interrupt() == []
    assert tracker.replay().commands == (
        Begin("tx-1"),
        send(1, tx="tx-1"),
        send(2, tx="tx-1"),
        Commit("tx-1", "r-5"),
    )
    tracker.on_receipt("r-5")
    assert tracker.replay().commands == ()


def test_a_transaction_with_acks_becomes_rollback_only() -> None:
    tracker = StateTracker()
    tracker.track(Begin("tx-1"))
    tracker.track(send(1, tx="tx-1"))
    tracker.track(Acknowledge(MESSAGE, transaction="tx-1"))
    assert tracker.interrupt() == []
    assert tracker.replay().commands == (Begin("tx-1"),)  # so later frames in it are accepted
    outgoing = tracker.track(Commit("tx-1", "r-7"))
    assert isinstance(outgoing.command, Abort)
    assert outgoing.command.receipt is not None
    assert outgoing.command.receipt.startswith(INTERNAL_RECEIPT_PREFIX)
    (answer,) = outgoing.answers
    assert answer.receipt_id == "r-7"
    assert isinstance(answer.error, TransactionRolledBack)
    assert str(answer.error) == (
        "Commit of tx-1 failed due to rollback only request; "
        "typically due to failover with pending acks"
    )
    assert not tracker.on_receipt(outgoing.command.receipt)  # never shown to the application


def test_a_commit_in_doubt_with_acks_is_forced_to_roll_back() -> None:
    tracker = StateTracker()
    tracker.track(Begin("tx-1"))
    tracker.track(Acknowledge(MESSAGE, transaction="tx-1"))
    tracker.track(Commit("tx-1", "r-1"))
    (answer,) = tracker.interrupt()
    assert isinstance(answer.error, TransactionRolledBack)
    assert str(answer.error) == (
        "Transaction completion in doubt due to failover. Forcing rollback of tx-1"
    )
    assert tracker.replay().commands == ()


def test_track_messages_asks_for_receipts_and_keeps_the_cache_bounded() -> None:
    tracker = StateTracker(track_messages=True, max_cache_bytes=200)
    written = [tracker.track(send(n)).command for n in range(10)]
    receipts = [c.receipt for c in written if isinstance(c, Send)]
    assert all(r is not None and r.startswith(INTERNAL_RECEIPT_PREFIX) for r in receipts)
    assert tracker.cache_bytes <= 200
    replayed = tracker.replay().commands
    assert 0 < len(replayed) < 10
    assert replayed == tuple(written[-len(replayed) :])  # the newest, in order
    for command in replayed:
        assert isinstance(command, Send)
        assert command.receipt is not None
        assert not tracker.on_receipt(command.receipt)
    assert tracker.replay().commands == ()
    assert tracker.cache_bytes == 0


def test_without_track_messages_sends_without_receipt_are_not_kept() -> None:
    tracker = StateTracker()
    assert tracker.track(send(1)).command == send(1)
    assert tracker.replay().commands == ()


def test_a_refused_send_is_forgotten() -> None:
    tracker = StateTracker()
    tracker.track(send(1, receipt="r-1"))
    tracker.on_error("r-1")
    assert tracker.replay().commands == ()


def test_a_refused_subscribe_is_not_restored() -> None:
    tracker = StateTracker()
    tracker.track(Subscribe("sub-1", "/queue/q", "auto", "bad ===", {}, "r-1"))
    tracker.on_error("r-1")
    assert tracker.replay().subscriptions == ()
    assert tracker.subscription_ids == []


def test_without_a_broker_an_unsubscribe_or_an_abort_is_done_at_once() -> None:
    """Written while no broker is connected: nothing is left to restore for them, and their
    receipts are answered here; a durable unsubscribe must still reach a broker."""
    tracker = StateTracker()
    tracker.track(Subscribe("sub-1", "/queue/q", "auto", None, {}, None))
    tracker.track(Subscribe("sub-2", "/queue/q", "auto", None, {}, None))
    tracker.track(Begin("tx-1"))
    tracker.track(send(1, tx="tx-1"))
    tracker.interrupt()
    settled = tracker.settle_disconnected(Unsubscribe("sub-1", receipt="r-1"))
    assert settled is not None
    assert (settled.command, settled.answers) == (None, (LocalAnswer("r-1"),))
    aborted = tracker.settle_disconnected(Abort("tx-1"))
    assert aborted is not None
    assert aborted.answers == ()
    assert tracker.settle_disconnected(Unsubscribe("sub-2", "durable", "r-2")) is None
    assert tracker.settle_disconnected(send(2, receipt="r-3")) is None
    plan = tracker.replay()
    assert [s.command.id for s in plan.subscriptions] == ["sub-2"]
    assert plan.commands == ()
