"""The AMQP hot paths: the same messages as the general paths, in fewer calls and writes.

The producer's path is the one a busy AMQP client and broker spend their time on: the client
encodes a SEND without proton's ``Message`` and writes a run of sends in one socket write; the
broker reads a message's head sections in the pass that finds them, and accepts a read's
transfers in one disposition, not one frame (and one write) per message.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import proton
import pytest

from ferrymq.adapters.amqp import body
from ferrymq.adapters.amqp.codec import decode
from ferrymq.amqp.client_mapping import encoded_for_send, message_for_send
from ferrymq.client.amqp_transport import FLUSH_SENDS, AmqpTransport
from ferrymq.client.commands import ConnectionInfo, Disconnect, Send
from ferrymq.client.errors import ClientError, ConnectionClosed
from ferrymq.client.transport import BrokerEvent
from ferrymq.stomp.events import Connected, ReceiptEvent
from ferrymq.testing import BrokerThread
from ferrymq.util.uri import URI, parse_uri

from .bystanders import start_broker
from .proton_support import region_of
from .wire import (
    ACCEPTED,
    ATTACH,
    DISPOSITION,
    FLOW,
    RawAmqp,
    attach_frame,
    message_bytes,
    transfer_frame,
)

FIELDS = (
    "address",
    "durable",
    "priority",
    "correlation_id",
    "reply_to",
    "subject",
    "content_type",
    "content_encoding",
    "expiry_time",
    "group_id",
    "group_sequence",
    "properties",
    "body",
    "inferred",
    "id",
    "user_id",
    "creation_time",
    "ttl",
)
EVERY_HEADER = {
    "persistent": "true",
    "priority": "7",
    "correlation-id": "c-1",
    "reply-to": "/queue/replies",
    "type": "order",
    "content-type": "text/plain",
    "content-encoding": "gzip",
    "expires": "1700000000000",
    "JMSXGroupID": "g",
    "JMSXGroupSeq": "5",
    "custom": "välue",
    "ferrymq.producer-message-id": "p:1",
}


@pytest.mark.parametrize(
    ("destination", "payload", "headers"),
    [
        ("/queue/a", b"hello", {}),
        ("/topic/t", b"\x00\xff" * 200, EVERY_HEADER),
        ("plain", b"", {"priority": "12", "persistent": "false", "x": "y" * 300}),
    ],
    ids=["bare", "every-field", "large-property"],
)
def test_the_client_encodes_a_send_as_proton_does(
    destination: str, payload: bytes, headers: dict[str, str]
) -> None:
    fast, general = proton.Message(), proton.Message()
    fast.decode(encoded_for_send(destination, payload, headers))
    general.decode(message_for_send(destination, payload, headers).encode())
    for name in FIELDS:
        assert getattr(fast, name) == getattr(general, name), name


def test_split_reads_the_head_sections_it_finds() -> None:
    message = proton.Message(
        body="text",
        durable=True,
        id="m-1",
        properties={"a": "1", "b": 2},
        annotations={proton.symbol("x-opt-k"): "v"},
    )
    encoded = bytes(message.encode())
    plain, read = body.split(encoded), body.split(encoded, decode)
    assert plain.values == {}
    assert read.head == plain.head
    assert read.body == plain.body
    assert sorted(read.values) == sorted(plain.head)
    for code, at in plain.head.items():
        assert read.values[code] == decode(encoded, at)[0]


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    running = start_broker(tmp_path, "amqp://127.0.0.1:0?wireFormat.producerCredit=1000")
    try:
        yield running
    finally:
        running.stop()


def test_transfers_read_together_are_accepted_in_one_disposition(broker: BrokerThread) -> None:
    count = 20
    with RawAmqp(broker.amqp_port) as raw:
        raw.handshake()
        raw.send(attach_frame("batch", 0, sender=True, address="queue://batch"))
        raw.until(ATTACH)
        raw.until(FLOW)
        raw.send(b"".join(transfer_frame(0, n, message_bytes(f"m{n}")) for n in range(count)))
        accepted: list[int] = []
        dispositions = 0
        while len(accepted) < count:
            disposition = raw.until(DISPOSITION)
            dispositions += 1
            assert getattr(disposition.field(4), "descriptor", None) == ACCEPTED, disposition
            first, last = cast(int, disposition.field(1)), cast("int | None", disposition.field(2))
            accepted.extend(range(first, (first if last is None else last) + 1))
    assert sorted(accepted) == list(range(count))
    assert dispositions < count / 2, f"{dispositions} dispositions for {count} transfers"


class _Events:
    def __init__(self) -> None:
        self.receipted = asyncio.Event()

    def on_event(self, event: BrokerEvent) -> None:
        if isinstance(event, ReceiptEvent):
            self.receipted.set()

    def on_closed(self, error: ConnectionClosed) -> None:
        pass

    def on_transport_interrupted(self) -> None:
        pass

    def on_transport_resumed(self, connected: Connected) -> None:
        pass

    def on_request_failed(self, receipt_id: str, error: ClientError) -> None:
        pass


def test_a_run_of_sends_goes_out_in_few_writes(broker: BrokerThread) -> None:
    """A producer that never yields (no receipts asked) still writes every ``FLUSH_SENDS``
    sends, and the broker gets every message."""
    count = 10 * FLUSH_SENDS

    async def run() -> int:
        uri = cast(URI, parse_uri(f"amqp://127.0.0.1:{broker.amqp_port}"))
        transport = AmqpTransport(uri, ConnectionInfo())
        listener = _Events()
        await transport.open(listener)
        # A first send, receipted: the link is attached and has its credit from now on.
        await transport.write(Send("/queue/runs", b"first", {}, receipt="r-1"))
        async with asyncio.timeout(10):
            await listener.receipted.wait()
        writer = transport._writer
        assert writer is not None
        writes = 0
        write = writer.write

        def counted(data: bytes | bytearray | memoryview) -> None:
            nonlocal writes
            writes += 1
            write(data)

        writer.write = counted  # type: ignore[method-assign]
        try:
            for n in range(count):
                await transport.write(Send("/queue/runs", f"m{n}".encode(), {}))
            await transport.write(Disconnect("bye"))  # waits until every send was settled
        finally:
            await transport.close()
        return writes

    writes = asyncio.run(run())
    assert writes <= count // FLUSH_SENDS + 2, f"{writes} writes for {count} sends"
    region = region_of(broker)
    depth = broker.call(lambda: sum(q.depth for d, q in region.queues.items() if d.name == "runs"))
    assert depth == count + 1
