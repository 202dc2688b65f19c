"""The producer and consumer processes over AMQP 1.0: the same scenarios, spelt as links.

Producer: one sender link. A message is encoded once by proton with a placeholder where the
sequence number goes (its body is one data section, as a plain bytes body is sent), then each
transfer is the template's two pieces joined by its number. The persistent producer marks its
messages ``durable`` (header) and sends them unsettled, keeping at most ``window`` unsettled,
as the STOMP producer keeps receipts; the others send pre-settled (at most once, as STOMP's SEND
without a receipt) but for the last message, whose settlement says the broker has them all.
Sending never exceeds the broker's credit (AMQP 1.0 part 2.6.7).

Consumer: one receiver link whose credit is the prefetch (1000 for queues, 32767 for topics, as
ActiveMQ's STOMP defaults), topped up when half is used. Auto ack asks the broker for
pre-settled transfers; client-individual accepts and settles each one.

Addresses: FerryMQ and ActiveMQ take ``queue://NAME`` and ``topic://NAME``; RabbitMQ's AMQP 1.0
plugin (3.x, "Routing and Addressing") takes ``/queue/NAME`` (declares the queue and uses it)
and ``/topic/NAME`` (the ``amq.topic`` exchange, routing key NAME, a private queue per
receiver), as its STOMP plugin does.
"""

from __future__ import annotations

import asyncio
import collections
import time
from typing import Any, cast

import proton

from ferrymq.bench.amqp_wire import AmqpWire, open_amqp, server_of
from ferrymq.bench.consumer import ConsumerPlan, Counting, run_consumer
from ferrymq.bench.control import READY, Control
from ferrymq.bench.dialect import RABBITMQ
from ferrymq.bench.options import BODY_SEQ_BYTES, Endpoint
from ferrymq.bench.producer import (
    PAD,
    SENT_HEADER,
    SEQ_MARK,
    WRITE_BYTES,
    ProducerPlan,
    body,
    run_producer,
)
from ferrymq.bench.results import ConsumerResult, ProducerResult
from ferrymq.bench.tally import SeqTally
from ferrymq.bench.wire import BrokerError
from ferrymq.stomp.constants import ACK_AUTO

AMQP_VERSION = "1.0"
QUEUE_CREDIT = 1000
TOPIC_CREDIT = 32767
BODY_SECTIONS = (b"\x00\x53\x75", b"\x00\x53\x77")
"""The descriptors of a data section and of an amqp-value (AMQP 1.0 part 3.2): a body sent as
bytes is one of them, its binary right after."""
_ACCEPTED = proton.Delivery.ACCEPTED


def amqp_address(destination: str, dialect: str) -> str:
    """The AMQP address of ``/queue/NAME`` or ``/topic/NAME`` for ``dialect``."""
    if dialect == RABBITMQ.name:
        return destination
    kind, _, name = destination.lstrip("/").partition("/")
    return f"{kind}://{name}"


class AmqpProducer:
    def __init__(self, plan: ProducerPlan, wire: AmqpWire, sender: proton.Sender) -> None:
        self.plan = plan
        self.wire = wire
        self.sender = sender
        self.receipts = SeqTally()
        """Sequence numbers of the unsettled messages the broker settled."""
        self.requested = 0
        self.unexpected = 0
        self.last_receipt_ns = 0
        self.unsettled: collections.deque[tuple[int, proton.Delivery]] = collections.deque()
        self.windowed = plan.persistent and plan.window > 0
        encoded = proton.Message(
            body=SEQ_MARK + PAD[: plan.size - BODY_SEQ_BYTES],
            durable=plan.persistent,
            inferred=True,
        ).encode()
        self.head, self.tail = encoded.split(SEQ_MARK)
        self.batch = max(1, WRITE_BYTES // len(encoded))
        self._progress: asyncio.Future[None] | None = None
        wire.on_read = self.on_read

    def on_read(self, now: int) -> None:
        """Count what the broker settled (in order, as a queue settles them)."""
        unsettled = self.unsettled
        while unsettled:
            seq, delivery = unsettled[0]
            if not delivery.settled:
                break
            unsettled.popleft()
            if delivery.remote_state != _ACCEPTED:
                self.wire.fail(f"the broker did not accept message {seq}: {_outcome(delivery)}")
            delivery.settle()
            self.receipts.add(seq)
            self.last_receipt_ns = now
        progress = self._progress
        if progress is not None and not progress.done():
            progress.set_result(None)

    async def _wait(self, ready: bool) -> None:
        if ready:
            self.wire.check()
            return
        self.wire.check()
        self._progress = asyncio.get_running_loop().create_future()
        try:
            await asyncio.wait_for(self._progress, self.plan.idle_timeout_s)
        except TimeoutError:
            raise BrokerError(
                f"{len(self.unsettled)} messages still unsettled and {self.sender.credit} "
                f"credit after {self.plan.idle_timeout_s} s without progress"
            ) from None
        finally:
            self._progress = None

    async def wait_receipts(self, most: int) -> None:
        while len(self.unsettled) > most:
            await self._wait(False)
        self.wire.check()

    def _room(self, want: int) -> int:
        """How many messages may go now: the broker's credit and the unsettled window."""
        room = min(want, self.sender.credit)
        if self.windowed:
            room = min(room, self.plan.window - len(self.unsettled))
        return max(0, room)

    async def send_range(self, start: int, stop: int) -> None:
        seq = start
        while seq < stop:
            n = self._room(min(self.batch, stop - seq))
            if n == 0:
                await self._wait(False)
                continue
            self._send(seq, seq + n, settled=not self.windowed)
            seq += n
            self.wire.flush()
            await self.wire.drain()
            await asyncio.sleep(0)  # let dispositions, flow and errors in
            self.wire.check()

    def _send(self, start: int, stop: int, *, settled: bool) -> None:
        sender, head, tail = self.sender, self.head, self.tail
        delivery, stream, advance = sender.delivery, sender.stream, sender.advance
        unsettled = self.unsettled
        for seq in range(start, stop):
            transfer = delivery(str(seq))
            stream(head + b"%012d" % seq + tail)
            advance()
            if settled:
                transfer.settle()
            else:
                unsettled.append((seq, transfer))
        if not settled:
            self.requested += stop - start

    async def send_final(self, seq: int) -> None:
        while self._room(1) == 0:
            await self._wait(False)
        self._send(seq, seq + 1, settled=False)
        self.wire.flush()

    async def send_one(self, seq: int, size: int, *, last: bool) -> None:
        """One message stamped with its send time (application property), for latency."""
        while self._room(1) == 0:
            await self._wait(False)
        message = proton.Message(
            body=body(seq, size),
            durable=self.plan.persistent,
            inferred=True,
            properties={SENT_HEADER: str(time.monotonic_ns())},
        )
        transfer = self.sender.delivery(str(seq))
        self.sender.stream(message.encode())
        self.sender.advance()
        if last:
            self.unsettled.append((seq, transfer))
            self.requested += 1
        else:
            transfer.settle()
        self.wire.flush()
        self.wire.check()

    async def close(self) -> None:
        await self.wire.close()


def _outcome(delivery: proton.Delivery) -> str:
    condition = getattr(delivery.remote, "condition", None)
    text = str(delivery.remote_state)
    return f"{text} ({condition.name}: {condition.description})" if condition else text


async def amqp_produce(plan: ProducerPlan, control: Control, role: str) -> ProducerResult:
    wire, session = await open_amqp(plan.endpoint)
    sender = session.sender(f"bench-producer-{role}")
    wire.attach(sender, amqp_address(plan.destination, plan.dialect), settled=False)
    await wire.attached(sender, plan.idle_timeout_s)
    producer = AmqpProducer(plan, wire, sender)
    control.report(READY, role, AMQP_VERSION)
    return await run_producer(plan, control, producer, role)


class AmqpConsumer(Counting):
    def __init__(
        self, plan: ConsumerPlan, control: Control, wire: AmqpWire, receiver: proton.Receiver
    ) -> None:
        super().__init__(plan, control)
        self.wire = wire
        self.receiver = receiver
        topic = plan.destination.startswith("/topic/")
        self.credit = plan.prefetch or (TOPIC_CREDIT if topic else QUEUE_CREDIT)
        wire.on_read = self.on_read

    @property
    def error(self) -> str | None:
        return self.wire.error

    def on_read(self, now: int) -> None:
        receiver = self.receiver
        add = self.tally.add
        warmup, limit, acking = self.plan.warmup, self.limit, self.acking
        recv, advance = receiver.recv, receiver.advance
        delivery = receiver.current
        while delivery is not None and not delivery.partial:
            data = recv(delivery.pending) or b""
            advance()
            if acking or not delivery.settled:
                delivery.update(_ACCEPTED)
            delivery.settle()
            delivery = receiver.current
            self.received += 1
            seq = _sequence(data)
            if seq is None:
                self.unparsable += 1
                continue
            if seq < 0 or not add(seq) or seq >= limit:
                continue
            self.in_range += 1
            if seq < warmup:
                self.warm += 1
                continue
            if not self.t_first:
                self.t_first = now
            self.t_last = now
            if self.plan.latency:
                self._latency(data, now)
        if receiver.credit < self.credit // 2:
            receiver.flow(self.credit - receiver.credit)
        self.last_activity = now
        self.control.counts[1 + self.plan.index] = self.received

    def _latency(self, data: bytes, now: int) -> None:
        message = proton.Message()
        message.decode(data)
        properties = cast(dict[str, Any] | None, message.properties)
        sent = (properties or {}).get(SENT_HEADER)
        if sent is not None:
            self.latencies.append(now - int(sent))


def _sequence(data: bytes) -> int | None:
    """The sequence number at the start of the message's data section, None if it has none."""
    at = data.rfind(BODY_SECTIONS[0])
    if at < 0:
        at = data.rfind(BODY_SECTIONS[1])
        if at < 0:
            return None
    code = data[at + 3 : at + 4]
    start = at + 5 if code == b"\xa0" else at + 8 if code == b"\xb0" else -1
    if start < 0:
        return None
    try:
        return int(data[start : start + BODY_SEQ_BYTES])
    except ValueError:
        return None


async def amqp_probe(endpoint: Endpoint) -> str | None:
    """Connect once: check that the broker answers, and learn its name if it says it."""
    try:
        wire, _ = await open_amqp(endpoint)
    except OSError as exc:
        raise BrokerError(f"cannot connect to {endpoint.url}: {exc}") from None
    server = server_of(wire)
    await wire.close()
    return server


async def amqp_consume(plan: ConsumerPlan, control: Control, role: str) -> ConsumerResult:
    wire, session = await open_amqp(plan.endpoint)
    receiver = session.receiver(f"bench-consumer-{plan.index}")
    wire.attach(
        receiver, amqp_address(plan.destination, plan.dialect), settled=plan.ack == ACK_AUTO
    )
    consumer = AmqpConsumer(plan, control, wire, receiver)
    receiver.flow(consumer.credit)
    wire.flush()
    await wire.attached(receiver, plan.idle_timeout_s)
    control.report(READY, role)
    result = await run_consumer(plan, control, consumer, role)
    if wire.error is None:
        await wire.close()
    return result
