"""A mirror target killed (SIGKILL) and started again, as a separate process: what it accepted
from the scripted mirror source is there, what the source sends again is not stored twice,
and acks find the messages that, after the restart, are only in the store."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from proton import Delivery

from ferrymq.adapters.amqp.mirror_acks import ATTEMPTS, RETRY_DELAY_S
from ferrymq.testing import BrokerProcess, free_port
from tests.amqp.durability import drain_queue
from tests.amqp.mirror_source import MirrorSource, mirrored_send, post_ack

pytestmark = pytest.mark.slow

COUNT = 60


@pytest.fixture
def target(tmp_path: Path) -> Iterator[BrokerProcess]:
    port = free_port()
    process = BrokerProcess(
        tmp_path / "data", name="target", extra_args=["--listen", f"amqp://127.0.0.1:{port}"]
    )
    process.amqp_port = port  # type: ignore[attr-defined]
    process.start()
    try:
        yield process
    finally:
        process.kill()


def amqp_port(process: BrokerProcess) -> int:
    return int(process.amqp_port)  # type: ignore[attr-defined]


def sends(count: int) -> list[object]:
    return [mirrored_send(f"m{i}", f"ID:src-1:{i}") for i in range(count)]


def test_a_killed_target_keeps_what_it_accepted_and_dedups_after_restart(
    target: BrokerProcess,
) -> None:
    """Reference scenarios 3 and 9 (target down while sending; restart without duplicates,
    AMQPReplicaTest.testReplicaDeferredStart, testRouteSurviving): every send the target
    accepted survives a SIGKILL; the source, which resends after a reconnect what it is unsure
    of, finds the copies already stored (the dedup record was in the same commit); acks for
    messages that are now only in the store (paged out) remove them."""
    with MirrorSource(amqp_port(target)) as source:
        deliveries = [source.send(m) for m in sends(COUNT)]  # type: ignore[arg-type]
        assert source.settled(deliveries) == [Delivery.ACCEPTED] * COUNT
        source.drop()
    target.kill()
    target.start()
    with MirrorSource(amqp_port(target)) as source:
        again = [source.send(m) for m in sends(COUNT)]  # type: ignore[arg-type]
        assert source.settled(again) == [Delivery.ACCEPTED] * COUNT
        acks = [source.send(post_ack("Q", f"ID:src-1:{i}")) for i in range(0, COUNT, 2)]
        outcomes = source.settled(acks, ATTEMPTS * RETRY_DELAY_S + 20)
        assert outcomes == [Delivery.ACCEPTED] * len(acks)
    drained = drain_queue(f"amqp://127.0.0.1:{amqp_port(target)}", "queue://Q")
    counts = Counter(drained.ids)
    assert sorted(counts) == sorted(f"ID:src-1:{i}" for i in range(1, COUNT, 2))
    assert [i for i, n in counts.items() if n > 1] == [], "a resent send was stored twice"


def test_an_ack_unsettled_at_the_crash_is_applied_when_sent_again(target: BrokerProcess) -> None:
    """An ack waiting for its message is not settled, so a target killed meanwhile loses
    nothing: the source sends it again after the reconnect and it is applied then."""
    with MirrorSource(amqp_port(target)) as source:
        source.settled([source.send(mirrored_send("stays", "ID:src-1:0"))])
        waiting = source.send(post_ack("Q", "ID:src-1:1"))  # its send comes later
        assert source.unsettled_after(waiting, RETRY_DELAY_S * 2)
        source.drop()
    target.kill()
    target.start()
    with MirrorSource(amqp_port(target)) as source:
        source.settled([source.send(mirrored_send("acked", "ID:src-1:1"))])
        assert source.settled([source.send(post_ack("Q", "ID:src-1:1"))]) == [Delivery.ACCEPTED]
    drained = drain_queue(f"amqp://127.0.0.1:{amqp_port(target)}", "queue://Q")
    assert drained.ids == ["ID:src-1:0"]
