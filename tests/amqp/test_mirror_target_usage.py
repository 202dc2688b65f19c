"""A mirror target short of memory or store (ActiveMQ's systemUsage): acks find the messages
that are only in the store, nothing stays charged, and a full store holds the mirror back
(its transfers wait unsettled, as a producer's do) instead of refusing them."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from proton import Delivery

from ferrymq.adapters.amqp.mirror_acks import ATTEMPTS, RETRY_DELAY_S
from ferrymq.core import codec
from ferrymq.core.destination import Destination
from ferrymq.core.message import Message, MessageId
from ferrymq.core.removal import find_stored
from ferrymq.store.base import StoredMessage
from ferrymq.testing import BrokerThread, broker_config
from tests.amqp.durability import drain_queue
from tests.amqp.mirror_source import MirrorSource, mirrored_send, post_ack
from tests.amqp.proton_support import region_of, url

Q = Destination.queue("Q")


def _usage(memory: str, store: str = "100 gb") -> str:
    return f"""
<broker xmlns="http://activemq.apache.org/schema/core" brokerName="mirror-target">
  <systemUsage><systemUsage>
    <memoryUsage><memoryUsage limit="{memory}"/></memoryUsage>
    <storeUsage><storeUsage limit="{store}"/></storeUsage>
  </systemUsage></systemUsage>
</broker>
"""


def _usage_now(broker: BrokerThread) -> tuple[int, int]:
    region = region_of(broker)
    return broker.call(lambda: (region.usage.memory_used, region.usage.store_used))


def test_acks_reach_messages_paged_out_to_the_store(tmp_path: Path) -> None:
    """Artemis's AckManager looks in the paging store when the queue's memory does not have the
    message (``mirrorAckManagerPageAttempts``): here the queue's rows in the store are read."""
    xml = _usage("200 kb")
    with BrokerThread(broker_config(tmp_path, xml=xml, amqp=True)) as broker:
        body = "x" * 2000
        with MirrorSource(broker.amqp_port) as source:
            sends = [source.send(mirrored_send(body, f"ID:src-1:{i}")) for i in range(100)]
            source.settled(sends)
            region = region_of(broker)
            assert broker.call(lambda: region.queues[Q].paged_out) > 20
            acks = [source.send(post_ack("Q", f"ID:src-1:{i}")) for i in range(80, 100)]
            assert source.settled(acks, ATTEMPTS * RETRY_DELAY_S + 20) == [Delivery.ACCEPTED] * 20
        drained = drain_queue(url(broker), "queue://Q")
        assert drained.ids == [f"ID:src-1:{i}" for i in range(80)]
        assert _usage_now(broker) == (0, 0), "nothing stays charged"


def test_a_full_store_holds_the_mirror_back(tmp_path: Path) -> None:
    """Producer flow control applies to the mirror: past the store limit its sends wait,
    unsettled (the peer's credit runs out), and go on once consumers free the store."""
    xml = _usage("64 mb", store="60 kb")
    with BrokerThread(broker_config(tmp_path, xml=xml, amqp=True)) as broker:
        body = "y" * 10_000
        with MirrorSource(broker.amqp_port) as source:
            sends = [source.send(mirrored_send(body, f"ID:src-1:{i}")) for i in range(12)]
            assert source.unsettled_after(sends[-1], 0.5), "the full store holds the last back"
            drained = drain_queue(url(broker), "queue://Q", idle_s=1.0)
            outcomes = source.settled(sends)
            assert outcomes == [Delivery.ACCEPTED] * 12
            drained.ids += drain_queue(url(broker), "queue://Q", idle_s=1.0).ids
        assert sorted(drained.ids) == sorted(f"ID:src-1:{i}" for i in range(12))


@settings(max_examples=100, deadline=None)
@given(st.text(min_size=1, max_size=30))
def test_the_store_lookup_finds_any_id_and_only_it(message_id: str) -> None:
    """The paged-store lookup (``core.removal.find_stored``) pre-filters rows by the id's bytes
    as the codec writes them: any id is found, and a row whose body merely contains the id is
    not taken for it."""
    decoy = Message(MessageId(message_id + "-other"), Q, f'"id":"{message_id}"'.encode())
    wanted = Message(MessageId(message_id), Q, b"body")
    rows = [StoredMessage("queue://Q", 1, codec.encode(decoy), False)]
    assert find_stored(rows, message_id) is None
    rows.append(StoredMessage("queue://Q", 2, codec.encode(wanted), False))
    found = find_stored(rows, message_id)
    assert found is not None
    assert found.seq == 2
