"""The consumer process: subscribe, count every message by its sequence number, ack in batches.

Each read is decoded at once; the sequence number is the body's first 12 bytes, so nothing but
the codec looks at headers (the latency scenario also reads the send timestamp). In client ack
modes the ACK frames of one read go out in one write. The consumer stops when it holds every
message it expects, listens ``linger_s`` longer for duplicates, or gives up after
``idle_timeout_s`` without a message and reports what is missing.
"""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass

from ferrymq.bench.control import READY, WARM, Control, process_cpu_s
from ferrymq.bench.dialect import DIALECTS
from ferrymq.bench.options import BODY_SEQ_BYTES, Endpoint
from ferrymq.bench.producer import SENT_HEADER
from ferrymq.bench.results import ConsumerResult
from ferrymq.bench.tally import SeqTally
from ferrymq.bench.wire import BrokerError, StompWire, open_wire
from ferrymq.stomp import ClientEvent, ErrorEvent, MessageEvent, ReceiptEvent
from ferrymq.stomp.constants import ACK_AUTO

POLL_S = 0.05
SUBSCRIBED = "bench-subscribed"


@dataclass(frozen=True, slots=True)
class ConsumerPlan:
    endpoint: Endpoint
    dialect: str
    destination: str
    index: int
    ack: str
    prefetch: int | None
    warmup: int
    total: int | None
    """Every sequence number expected (warm-up included); None until the producer says."""
    idle_timeout_s: float
    linger_s: float
    latency: bool = False


class Counting:
    """Counts messages by sequence number, whichever protocol brings them; the subclass reads
    the wire and says what went wrong with it (``error``)."""

    def __init__(self, plan: ConsumerPlan, control: Control) -> None:
        self.plan = plan
        self.control = control
        self.tally = SeqTally(plan.total or 0)
        self.limit = plan.total if plan.total is not None else sys.maxsize
        self.received = 0
        self.unparsable = 0
        self.warm = 0
        self.in_range = 0
        self.t_first = 0
        self.t_last = 0
        self.last_activity = time.monotonic_ns()
        self.latencies: list[int] = []
        self.acking = plan.ack != ACK_AUTO

    @property
    def error(self) -> str | None:
        raise NotImplementedError

    @property
    def complete(self) -> bool:
        if self.limit == sys.maxsize:
            total = self.control.announced_total()
            if total is None:
                return False
            self.limit = total
            self.in_range = self.tally.count_below(total)
        return self.in_range >= self.limit

    async def wait_until(self, done: str) -> bool:
        """Wait until ``warm`` or ``complete``; False after ``idle_timeout_s`` without a message."""
        idle_ns = int(self.plan.idle_timeout_s * 1e9)
        while True:
            if done == "warm" and self.warm >= self.plan.warmup:
                return True
            if done == "complete" and self.complete:
                return True
            if self.error is not None:
                return False
            if time.monotonic_ns() - self.last_activity > idle_ns:
                return False
            await asyncio.sleep(POLL_S)

    def result(self, cpu_s: float) -> ConsumerResult:
        total = self.limit if self.limit != sys.maxsize else self.tally.highest + 1
        missing, examples = self.tally.missing(total)
        return ConsumerResult(
            index=self.plan.index,
            received=self.received,
            unique=self.tally.count_below(total),
            dups=self.tally.dups,
            unexpected=self.unparsable + self.tally.beyond(total),
            missing=missing,
            missing_examples=examples,
            reordered=self.tally.reordered,
            t_first_ns=self.t_first,
            t_last_ns=self.t_last if missing == 0 else 0,
            cpu_s=cpu_s,
            latencies_ns=tuple(self.latencies),
            error=self.error,
        )


class Consumer(Counting):
    def __init__(self, plan: ConsumerPlan, control: Control, wire: StompWire) -> None:
        super().__init__(plan, control)
        self.wire = wire
        wire.on_events = self.on_events

    @property
    def error(self) -> str | None:
        return self.wire.error

    def on_events(self, events: list[ClientEvent], now: int) -> None:
        add = self.tally.add
        warmup, limit = self.plan.warmup, self.limit
        ack = self.wire.session.ack
        acks: list[bytes] = []
        for event in events:
            if type(event) is MessageEvent:
                self.received += 1
                if self.acking:
                    acks.append(ack(event))
                try:
                    seq = int(event.body[:BODY_SEQ_BYTES])
                except ValueError:
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
                if self.plan.latency and SENT_HEADER in event.headers:
                    # A broker that dropped the header leaves fewer samples, never a 0 ms one.
                    self.latencies.append(now - int(event.headers[SENT_HEADER]))
            elif type(event) is ReceiptEvent:
                self.wire.receipt_arrived(event.receipt_id, now)
            elif type(event) is ErrorEvent:
                self.wire.error_arrived(event)
        if acks:
            self.wire.write(b"".join(acks))
        self.last_activity = now
        self.control.counts[1 + self.plan.index] = self.received


async def consume(plan: ConsumerPlan, control: Control, role: str) -> ConsumerResult:
    dialect = DIALECTS[plan.dialect]
    wire, _ = await open_wire(plan.endpoint, dialect)
    consumer = Consumer(plan, control, wire)
    subscribed = wire.expect_receipt(SUBSCRIBED)
    wire.write(
        wire.session.subscribe(
            plan.destination,
            f"bench-{plan.index}",
            ack=plan.ack,
            headers=dialect.subscribe_headers(plan.ack, plan.prefetch),
            receipt=SUBSCRIBED,
        )
    )
    try:
        await asyncio.wait_for(subscribed, plan.idle_timeout_s)
    except TimeoutError:
        raise BrokerError(f"no RECEIPT for SUBSCRIBE within {plan.idle_timeout_s} s") from None
    control.report(READY, role)
    result = await run_consumer(plan, control, consumer, role)
    if wire.error is None:
        await wire.close()
    return result


async def run_consumer(
    plan: ConsumerPlan, control: Control, consumer: Counting, role: str
) -> ConsumerResult:
    """Wait for the warm-up, then for every message (or ``idle_timeout_s`` without one)."""
    cpu_start = process_cpu_s()
    if await consumer.wait_until("warm"):
        control.report(WARM, role)
        if await consumer.wait_until("complete"):
            await asyncio.sleep(plan.linger_s)
    return consumer.result(process_cpu_s() - cpu_start)
