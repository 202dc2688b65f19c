"""AMQP 1.0 under faults: SIGKILL under load, redeliveries flagged, failover in a master/slave
group. Separate broker processes; every message counted by id."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from proton import Message
from proton.utils import BlockingConnection

from ferrymq.testing import BrokerProcess, free_port, wait_for_master, wait_until_blocking
from tests.amqp.durability import RUN_LIMIT_S, ProducerRun, drain_queue

pytestmark = pytest.mark.slow


def amqp_broker(
    data: Path, name: str = "localhost", config_xml: str | None = None
) -> BrokerProcess:
    port = free_port()
    process = BrokerProcess(
        data, name=name, config_xml=config_xml, extra_args=["--listen", f"amqp://127.0.0.1:{port}"]
    )
    process.amqp_port = port  # type: ignore[attr-defined]
    return process


def amqp_url(process: BrokerProcess) -> str:
    return f"amqp://127.0.0.1:{process.amqp_port}"  # type: ignore[attr-defined]


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    process = amqp_broker(tmp_path / "data").start()
    try:
        yield process
    finally:
        process.kill()


def test_every_accepted_message_survives_a_sigkill_under_load(broker: BrokerProcess) -> None:
    producer = ProducerRun([amqp_url(broker)], "queue://durable", 5000, resend=False)
    _container, thread = producer.run_in_thread()
    wait_until_blocking(lambda: len(producer.accepted) >= 300, 30, "300 messages accepted")
    broker.kill()
    thread.join(RUN_LIMIT_S)
    assert not thread.is_alive(), "the producer stopped when its broker died"
    accepted = set(producer.accepted)
    assert 300 <= len(accepted) < 5000, "the kill came mid-flow"
    broker.start()
    drained = drain_queue(amqp_url(broker), "queue://durable")
    counts = Counter(drained.ids)
    assert accepted - set(counts) == set(), "an accepted message was lost"
    assert [i for i, n in counts.items() if n > 1] == [], "a message came back twice"


def test_messages_delivered_before_a_crash_come_back_flagged(broker: BrokerProcess) -> None:
    url = amqp_url(broker)
    connection = BlockingConnection(url, timeout=10)
    sender = connection.create_sender("queue://flagged")
    for i in range(20):
        sender.send(Message(id=f"f{i}", body=f"f{i}", durable=True))
    receiver = connection.create_receiver("queue://flagged", credit=10)
    first = [receiver.receive(timeout=10) for _ in range(10)]  # delivered, never settled
    assert [m.delivery_count for m in first] == [0] * 10, "a first delivery is not flagged"
    seen = [str(m.id) for m in first]
    broker.kill()
    broker.start()
    drained = drain_queue(url, "queue://flagged")
    assert sorted(drained.ids) == sorted(f"f{i}" for i in range(20))
    for message_id in seen:
        assert drained.delivery_counts[message_id][0] > 0, f"{message_id} not flagged redelivered"


GROUP_XML = """
<broker xmlns="http://activemq.apache.org/schema/core">
  <persistenceAdapter>
    <kahaDB directory="{shared}" lockKeepAlivePeriod="200">
      <locker><shared-file-locker lockAcquireSleepInterval="200"/></locker>
    </kahaDB>
  </persistenceAdapter>
</broker>
"""


def test_amqp_clients_fail_over_within_a_master_slave_group(tmp_path: Path) -> None:
    config = GROUP_XML.format(shared=tmp_path / "shared")
    brokers = [amqp_broker(tmp_path / n, name=n, config_xml=config) for n in ("b1", "b2")]
    try:
        brokers[0].start()
        brokers[1].start(as_slave=True)
        urls = [amqp_url(b).removeprefix("amqp://") for b in brokers]
        producer = ProducerRun(urls, "queue://group", 2000, resend=True)
        _container, thread = producer.run_in_thread()
        wait_until_blocking(lambda: len(producer.accepted) >= 200, 30, "200 accepted on b1")
        brokers[0].kill()
        successor = wait_for_master(brokers[1:])
        assert producer.done.wait(RUN_LIMIT_S), (
            f"the producer finished on {successor.name}: {len(producer.accepted)} accepted"
        )
        thread.join(10)
        assert producer.disconnects >= 1
        drained = drain_queue(amqp_url(successor), "queue://group")
        counts = Counter(drained.ids)
        assert set(counts) == {f"m{i}" for i in range(2000)}, "no message lost"
        duplicates = {i for i, n in counts.items() if n > 1}
        # A resend of a message whose acceptance the kill swallowed is the only duplicate a
        # client without duplicate detection can see; nothing else comes twice.
        assert duplicates <= producer.resent
    finally:
        for broker in brokers:
            broker.kill()
