"""ActiveMQ's systemUsage limits: paging, spooling and producer flow control."""

from __future__ import annotations

import time
from pathlib import Path

from ferrymq.core.destination import Destination
from ferrymq.testing import BrokerThread, broker_config
from tests.interop.conftest import Clients


def _usage(memory: str, store: str = "100 gb", *, fail: bool = False) -> str:
    return f"""
<broker xmlns="http://activemq.apache.org/schema/core" brokerName="limits">
  <systemUsage>
    <systemUsage sendFailIfNoSpace="{str(fail).lower()}">
      <memoryUsage><memoryUsage limit="{memory}"/></memoryUsage>
      <storeUsage><storeUsage limit="{store}"/></storeUsage>
      <tempUsage><tempUsage limit="1 gb"/></tempUsage>
    </systemUsage>
  </systemUsage>
</broker>
"""


def _paged_out(thread: BrokerThread, queue: str) -> int:
    def read() -> int:
        assert thread.broker is not None
        return thread.broker.service.region.queues[Destination.queue(queue)].paged_out

    return thread.call(read)


def test_deep_queue_pages_to_disk_and_drains_in_order(tmp_path: Path) -> None:
    with BrokerThread(broker_config(tmp_path / "data", xml=_usage("1 mb"))) as thread:
        clients = Clients(thread)
        try:
            producer, listener = clients.connect()
            body = "x" * 1024
            for i in range(3000):
                receipt = {"receipt": "last"} if i == 2999 else {}
                producer.send(
                    "/queue/deep", f"{i:05d}{body}", headers={"persistent": "true", **receipt}
                )
            listener.wait_receipt("last", timeout=30)
            assert _paged_out(thread, "deep") > 1000
            consumer, consumed = clients.connect()
            consumer.subscribe("/queue/deep", id="s", ack="auto")
            messages = consumed.wait_messages(3000, timeout=60)
            assert [int(m.body[:5]) for m in messages] == list(range(3000))
            assert clients.depth("deep") == 0

            def usage() -> tuple[int, int]:
                assert thread.broker is not None
                used = thread.broker.service.region.usage
                return used.memory_used, used.store_used

            # Nothing is left charged once every message is consumed: no accounting leak.
            assert thread.call(usage) == (0, 0)
        finally:
            clients.close_all()


def test_non_persistent_messages_spool_when_memory_is_short(tmp_path: Path) -> None:
    with BrokerThread(broker_config(tmp_path / "data", xml=_usage("1 mb"))) as thread:
        clients = Clients(thread)
        try:
            producer, listener = clients.connect()
            for i in range(2000):
                producer.send("/queue/spool", f"{i:05d}" + "y" * 1024)
            producer.send("/topic/sync", "s", headers={"receipt": "sync"})
            listener.wait_receipt("sync", timeout=30)
            assert _paged_out(thread, "spool") > 0

            def temp_used() -> int:
                assert thread.broker is not None
                return thread.broker.service.region.usage.temp_used

            assert thread.call(temp_used) > 0
            consumer, consumed = clients.connect()
            consumer.subscribe("/queue/spool", id="s", ack="auto")
            messages = consumed.wait_messages(2000, timeout=60)
            assert [int(m.body[:5]) for m in messages] == list(range(2000))
            assert thread.call(temp_used) == 0
        finally:
            clients.close_all()


def test_producer_waits_while_the_store_is_full(tmp_path: Path) -> None:
    with BrokerThread(broker_config(tmp_path / "data", xml=_usage("64 mb", "100 kb"))) as thread:
        clients = Clients(thread)
        try:
            producer, listener = clients.connect()
            for i in range(40):
                producer.send(
                    "/queue/full",
                    f"{i:03d}" + "z" * 10_000,
                    headers={"persistent": "true", "receipt": f"r{i}"},
                )
            listener.wait_for(lambda: len(listener.receipts) >= 5, "5 receipts")
            time.sleep(0.3)
            blocked_at = len(listener.receipts)
            assert blocked_at < 40, "the store limit did not stop the producer"
            assert listener.errors == []
            consumer, consumed = clients.connect()
            consumer.subscribe("/queue/full", id="s", ack="auto")
            messages = consumed.wait_messages(40, timeout=30)
            assert [int(m.body[:3]) for m in messages] == list(range(40))
            listener.wait_receipt("r39")
        finally:
            clients.close_all()


def test_send_fail_if_no_space_answers_an_error_and_keeps_the_connection(
    tmp_path: Path,
) -> None:
    xml = _usage("64 mb", "50 kb", fail=True)
    with BrokerThread(broker_config(tmp_path / "data", xml=xml)) as thread:
        clients = Clients(thread)
        try:
            producer, listener = clients.connect()
            for i in range(20):
                producer.send(
                    "/queue/failing",
                    "z" * 10_000,
                    headers={"persistent": "true", "receipt": f"r{i}"},
                )
            listener.wait_for(lambda: bool(listener.errors), "an ERROR frame")
            error = listener.errors[0]
            assert "Store is Full" in error.headers["message"]
            assert error.headers["receipt-id"].startswith("r")
            producer.send("/queue/other", "small", headers={"receipt": "still-open"})
            listener.wait_receipt("still-open")
        finally:
            clients.close_all()


def test_send_fail_after_timeout_refuses_a_blocked_send(tmp_path: Path) -> None:
    xml = _usage("64 mb", "50 kb").replace(
        'sendFailIfNoSpace="false"', 'sendFailIfNoSpaceAfterTimeout="300"'
    )
    with BrokerThread(broker_config(tmp_path / "data", xml=xml)) as thread:
        clients = Clients(thread)
        try:
            producer, listener = clients.connect()
            for i in range(10):
                producer.send(
                    "/queue/waiting",
                    "z" * 10_000,
                    headers={"persistent": "true", "receipt": f"r{i}"},
                )
            listener.wait_for(lambda: bool(listener.errors), "an ERROR frame")
            started = time.monotonic()
            listener.wait_for(lambda: len(listener.errors) >= 2, "2 ERROR frames", timeout=10)
            # Each blocked SEND waits its 300 ms before it is refused.
            assert time.monotonic() - started >= 0.25
            assert "sendFailIfNoSpaceAfterTimeout" in listener.errors[0].headers["message"]
            assert producer.is_connected()
        finally:
            clients.close_all()
