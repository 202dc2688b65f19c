"""Durability under SIGKILL and SIGSTOP of a real ``ferrymq broker`` process (issue 2).

stomp.py producers send numbered persistent messages with receipts while a stomp.py consumer
acks what it records; the broker is killed with SIGKILL mid-stream and restarted on the same
data directory and port; the clients reconnect (re-sending what was never receipted, which is the
client's job) and carry on.  Then everything is counted by ``seq`` (ledger.py): DESIGN.md
"Durability contract" says nothing receipted is lost, a second delivery is flagged
``redelivered:true``, and a receipted ack removes the message for good.  Run with ``-s`` to see
the counts.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from ferrymq.testing import BrokerProcess

from .consumer import Consumer
from .ledger import Tally, tally
from .peers import Peer
from .producer import Producer
from .restarts import kill_and_restart

pytestmark = pytest.mark.slow

TOTAL = 5000
KILL_AFTER = 2000
"""Receipted messages before the SIGKILL: the kill lands mid-stream, under load."""
SCENARIO_S = 30.0
"""Bound on each scenario; they take a few seconds when the broker is right."""
HEART_BEATS = (500, 500)


def drain(producer: Producer, consumer: Consumer, name: str, deadline: float) -> None:
    """A sentinel sent after everything: once it is consumed, everything before it was too."""
    producer.send_sentinel(name, deadline)
    consumer.wait_sentinel(name, deadline)
    consumer.wait_acks_confirmed(deadline)


def count(producer: Producer, consumer: Consumer, scenario: str) -> Tally:
    with producer.cond, consumer.cond:
        result = tally(
            set(producer.sent),
            producer.send_frames,
            set(producer.receipted),
            list(consumer.deliveries),
            dict(consumer.ack_confirmed),
        )
    print(f"\n[{scenario}] {result.counts()}; {producer.summary()}")
    return result


def assert_contract(result: Tally, logs: list[str], *peers: Peer) -> None:
    problems = result.problems()
    problems += [
        f"{peer.name} got ERROR {headers} {body!r}"
        for peer in peers
        for headers, body in peer.errors
    ]
    tail = "".join(logs[-30:])
    assert not problems, "\n".join([result.counts(), *problems, "broker log:", tail])


def assert_nothing_left(
    broker: BrokerProcess,
    producer: Producer,
    consumer: Consumer,
    same_subscription: Callable[[], Consumer],
    deadline: float,
) -> None:
    """Everything was acked with a receipt, so after one more SIGKILL the destination is empty."""
    consumer.close()
    producer.close()
    kill_and_restart(broker)
    late = same_subscription()
    late.open(deadline)
    producer.open(deadline)
    producer.send_sentinel("after-restart", deadline)
    late.wait_sentinel("after-restart", deadline)
    leftovers = [d for d in late.deliveries if d.sentinel != "after-restart"]
    late.close()
    producer.close()
    assert not leftovers, (
        f"{len(leftovers)} messages whose ack was receipted came back after a restart: "
        f"{leftovers[:8]}\nbroker log:\n" + "".join(broker.output[-30:])
    )


def test_queue_keeps_every_receipted_message_across_kill9(killable_broker: BrokerProcess) -> None:
    deadline = time.monotonic() + SCENARIO_S
    destination = "/queue/ferry.kill9"
    producer = Producer(killable_broker.port, destination)
    consumer = Consumer(killable_broker.port, destination, prefetch=200)
    consumer.open(deadline)
    with ThreadPoolExecutor(1) as pool:
        sending = pool.submit(producer.run, TOTAL, deadline)
        producer.wait_receipted(KILL_AFTER, deadline)
        logs = kill_and_restart(killable_broker)
        receipted_at_kill = producer.receipted_count()
        delivered_at_kill = consumer.delivered_count()
        consumer.reconnect(deadline)
        sending.result(timeout=max(0.0, deadline - time.monotonic()))
    drain(producer, consumer, "drained", deadline)
    print(f"\nkilled at receipted={receipted_at_kill} delivered={delivered_at_kill}")

    assert receipted_at_kill < TOTAL, "the kill came after the producer finished"
    assert producer.connections >= 2
    assert consumer.connections >= 2
    assert_contract(
        count(producer, consumer, "queue"), logs + killable_broker.output, producer, consumer
    )
    assert_nothing_left(
        killable_broker,
        producer,
        consumer,
        lambda: Consumer(killable_broker.port, destination, name="late"),
        deadline,
    )


def test_offline_durable_subscription_keeps_every_receipted_message_across_kill9(
    killable_broker: BrokerProcess,
) -> None:
    deadline = time.monotonic() + SCENARIO_S
    destination = "/topic/ferry.kill9"

    def durable(name: str = "durable") -> Consumer:
        return Consumer(
            killable_broker.port,
            destination,
            name=name,
            client_id="kill9-audit",
            subscription_name="audit",
        )

    producer = Producer(killable_broker.port, destination)
    consumer = durable()
    consumer.open(deadline)  # the durable subscription exists before the first message
    with ThreadPoolExecutor(1) as pool:
        sending = pool.submit(producer.run, TOTAL, deadline)
        producer.wait_receipted(KILL_AFTER // 2, deadline)
        consumer.close()  # offline: the subscription keeps what is published meanwhile
        offline_from = consumer.delivered_count()
        producer.wait_receipted(KILL_AFTER, deadline)
        logs = kill_and_restart(killable_broker)
        receipted_at_kill = producer.receipted_count()
        sending.result(timeout=max(0.0, deadline - time.monotonic()))
    consumer.open(deadline)  # same client-id and subscription name
    drain(producer, consumer, "drained", deadline)
    print(f"\noffline after {offline_from} deliveries; killed at receipted={receipted_at_kill}")

    assert receipted_at_kill < TOTAL, "the kill came after the producer finished"
    assert producer.connections >= 2
    assert_contract(
        count(producer, consumer, "durable topic"),
        logs + killable_broker.output,
        producer,
        consumer,
    )
    assert_nothing_left(killable_broker, producer, consumer, lambda: durable("late"), deadline)


def test_unacked_messages_come_back_flagged_after_kill9(killable_broker: BrokerProcess) -> None:
    """A consumer holds a full prefetch unacked (client ack) when the broker dies."""
    deadline = time.monotonic() + SCENARIO_S
    destination = "/queue/ferry.kill9.held"
    prefetch = 100
    acked_before_kill = 40
    producer = Producer(killable_broker.port, destination)
    producer.run(3 * prefetch, deadline)
    consumer = Consumer(
        killable_broker.port, destination, ack_mode="client", prefetch=prefetch, acking=False
    )
    consumer.open(deadline)
    consumer.wait_delivered(prefetch, deadline)
    with consumer.cond:
        first = list(consumer.deliveries[:prefetch])
    consumer.ack_through(first[acked_before_kill - 1].ordinal)  # cumulative: the first 40
    consumer.wait_acks_confirmed(deadline)
    with ThreadPoolExecutor(1) as pool:
        sending = pool.submit(producer.run, 2000, deadline)  # under load when it dies
        producer.wait_receipted(1000, deadline)
        logs = kill_and_restart(killable_broker)
        with consumer.cond:
            before_kill = list(consumer.deliveries)
        consumer.reconnect(deadline)
        consumer.start_acking()
        sending.result(timeout=max(0.0, deadline - time.monotonic()))
    drain(producer, consumer, "drained", deadline)

    acked = {d.seq for d in first[:acked_before_kill]}
    held = [d for d in before_kill if d.seq not in acked]
    with consumer.cond:
        after_kill = consumer.deliveries[len(before_kill) :]
    again = {d.seq: d for d in reversed(after_kill)}  # first copy after the restart
    print(f"\nheld unacked at kill: {len(held)}; acked before kill: {len(acked)}")
    assert len(held) >= prefetch - acked_before_kill
    lost = [d for d in held if d.seq not in again]
    assert not lost, f"{len(lost)} held messages never came back, e.g. {lost[:5]}"
    unflagged = [again[d.seq] for d in held if not again[d.seq].redelivered]
    assert not unflagged, (
        f"{len(unflagged)} of {len(held)} held messages came back without redelivered:true, "
        f"e.g. {unflagged[:5]}"
    )
    assert not acked & set(again), "a message acked (and receipted) before the kill came back"
    assert_contract(
        count(producer, consumer, "held unacked"), logs + killable_broker.output, producer, consumer
    )


def test_paused_broker_is_noticed_by_heart_beats_and_loses_nothing(
    killable_broker: BrokerProcess,
) -> None:
    """SIGSTOP for longer than the heart-beat window, then SIGCONT (DESIGN.md "Testing")."""
    deadline = time.monotonic() + SCENARIO_S
    destination = "/queue/ferry.paused"
    port = killable_broker.port
    producer = Producer(port, destination, heartbeats=HEART_BEATS)
    consumer = Consumer(port, destination, prefetch=200, heartbeats=HEART_BEATS)
    consumer.open(deadline)
    with ThreadPoolExecutor(1) as pool:
        sending = pool.submit(producer.run, 3000, deadline)
        producer.wait_receipted(1000, deadline)
        # Running, the broker's heart-beats and traffic keep both clients satisfied.
        assert (producer.heartbeat_timeouts, consumer.heartbeat_timeouts) == (0, 0)
        killable_broker.pause()
        paused_at = time.monotonic()
        try:
            noticed_by = paused_at + 10 * HEART_BEATS[1] / 1000
            consumer.wait_for(lambda: consumer.heartbeat_timeouts > 0, noticed_by, "timeout")
            producer.wait_for(lambda: producer.heartbeat_timeouts > 0, noticed_by, "timeout")
            noticed_after = time.monotonic() - paused_at
        finally:
            killable_broker.resume()
        consumer.reconnect(deadline)
        sending.result(timeout=max(0.0, deadline - time.monotonic()))
    drain(producer, consumer, "drained", deadline)
    print(f"\nclients noticed the paused broker after {noticed_after:.2f} s")

    assert_contract(count(producer, consumer, "paused"), killable_broker.output, producer, consumer)
