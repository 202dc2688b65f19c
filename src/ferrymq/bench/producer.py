"""The producer process: SEND frames, encoded once, written in large batches.

A frame is encoded once by the codec with a 12-byte placeholder where the sequence number goes
(in the body, and in the ``receipt`` header when every message asks for one); each message is
then the template's pieces joined by its number, and one write carries about 64 KiB of frames.
The persistent producer keeps at most ``window`` receipts outstanding, which is what lets a
broker's group commit fill up. The paced producer (latency) sends one message at a time at a
fixed rate with its send time in a header.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Protocol

from ferrymq.bench.control import READY, WARM, Control, process_cpu_s, wait_event
from ferrymq.bench.dialect import DIALECTS
from ferrymq.bench.options import BODY_SEQ_BYTES, Endpoint
from ferrymq.bench.results import ProducerResult
from ferrymq.bench.tally import SeqTally
from ferrymq.bench.wire import BrokerError, StompWire, open_wire
from ferrymq.stomp import ClientEvent, ClientSession, ErrorEvent, ReceiptEvent
from ferrymq.stomp.constants import PERSISTENT

SEQ_MARK = b"#BENCH-SEQ##"
"""No character of it is escaped in a header (STOMP 1.2 \"Value Encoding\")."""
assert len(SEQ_MARK) == BODY_SEQ_BYTES
SENT_HEADER = "bench-sent-ns"
"""The latency scenario's send timestamp (monotonic ns)."""
WRITE_BYTES = 64 * 1024
PAD = bytes(range(97, 123)) * 64


@dataclass(frozen=True, slots=True)
class ProducerPlan:
    endpoint: Endpoint
    dialect: str
    destination: str
    warmup: int
    count: int | None
    """Measured messages; None in duration mode."""
    deadline_s: float | None
    """Stop sending after this long (duration mode, or a cap on a count)."""
    size: int
    persistent: bool
    window: int
    """Outstanding receipts allowed; 0 sends no receipt but on the last message."""
    idle_timeout_s: float
    rate: float | None = None
    """Paced mode (latency): messages per second, one per write, timestamped."""


def body(seq: int, size: int) -> bytes:
    return b"%012d" % seq + PAD[: size - BODY_SEQ_BYTES]


class FrameTemplate:
    """A SEND frame with placeholders for its sequence number."""

    def __init__(self, session: ClientSession, plan: ProducerPlan, *, receipt: bool) -> None:
        headers = {PERSISTENT: "true"} if plan.persistent else None
        frame = session.send(
            plan.destination,
            SEQ_MARK + PAD[: plan.size - BODY_SEQ_BYTES],
            headers=headers,
            receipt=SEQ_MARK.decode() if receipt else None,
        )
        self.parts = frame.split(SEQ_MARK)
        if len(self.parts) != (3 if receipt else 2):
            raise ValueError(f"destination {plan.destination!r} holds the placeholder")
        self.length = len(frame)

    def render(self, start: int, stop: int) -> bytes:
        """Frames ``start`` .. ``stop - 1``, concatenated."""
        parts = self.parts
        if len(parts) == 2:
            head, tail = parts
            return head + (tail + head).join([b"%012d" % s for s in range(start, stop)]) + tail
        return b"".join([(b"%012d" % s).join(parts) for s in range(start, stop)])


class Producer:
    def __init__(self, plan: ProducerPlan, control: Control, wire: StompWire) -> None:
        self.plan = plan
        self.control = control
        self.wire = wire
        self.receipts = SeqTally()
        self.requested = 0
        """Receipts asked for so far."""
        self.unexpected = 0
        self.last_receipt_ns = 0
        self._progress: asyncio.Future[None] | None = None
        self.windowed = plan.persistent and plan.window > 0
        self.plain = FrameTemplate(wire.session, plan, receipt=self.windowed)
        self.receipted = FrameTemplate(wire.session, plan, receipt=True)
        self.batch = max(1, WRITE_BYTES // self.plain.length)
        self.window = plan.window
        self.chunked = False
        limit = DIALECTS[plan.dialect].max_unread_bytes
        if limit is not None:
            # Two receipted chunks of half the limit in flight: the broker never has more
            # than ``limit`` unread bytes, so none of its reads ends inside a frame.
            self.chunked = True
            self.batch = max(1, limit // 2 // self.receipted.length)
            fits = 2 * self.batch * self.receipted.length <= limit
            chunks_allowed = 1 if fits else 0
            self.window = chunks_allowed * (self.batch if self.windowed else 1)
        wire.on_events = self.on_events

    def on_events(self, events: list[ClientEvent], now: int) -> None:
        add = self.receipts.add
        for event in events:
            if type(event) is ReceiptEvent:
                receipt_id = event.receipt_id
                if receipt_id.isdigit():
                    add(int(receipt_id))
                    self.last_receipt_ns = now
                elif not self.wire.receipt_arrived(receipt_id, now):
                    self.unexpected += 1
            elif type(event) is ErrorEvent:
                self.wire.error_arrived(event)
        progress = self._progress
        if progress is not None and not progress.done():
            progress.set_result(None)

    @property
    def outstanding(self) -> int:
        return self.requested - self.receipts.unique

    async def wait_receipts(self, most: int) -> None:
        """Wait until at most ``most`` receipts are outstanding; raise if they stop coming."""
        while self.outstanding > most:
            self._check()
            self._progress = asyncio.get_running_loop().create_future()
            try:
                await asyncio.wait_for(self._progress, self.plan.idle_timeout_s)
            except TimeoutError:
                raise BrokerError(
                    f"{self.outstanding} receipts still missing after "
                    f"{self.plan.idle_timeout_s} s without one"
                ) from None
            finally:
                self._progress = None
        self._check()

    def _check(self) -> None:
        if self.wire.error is not None:
            raise BrokerError(self.wire.error)

    async def send_range(self, start: int, stop: int) -> None:
        """Write frames ``start`` .. ``stop - 1`` in batches, honouring the receipt window."""
        seq = start
        while seq < stop:
            n = min(self.batch, stop - seq)
            if self.chunked:
                # Every chunk ends with a receipt; wait for room before writing it.
                await self.wait_receipts(self.window)
                data = self.plain.render(seq, seq + n - 1) + self.receipted.render(
                    seq + n - 1, seq + n
                )
                self.requested += n if self.windowed else 1
            else:
                if self.windowed:
                    await self.wait_receipts(self.window - n)
                    self.requested += n
                data = self.plain.render(seq, seq + n)
            self.wire.write(data)
            seq += n
            self.control.counts[0] = seq
            await self.wire.drain()
            await asyncio.sleep(0)  # let replies (receipts, ERROR) in
            self._check()

    async def send_final(self, seq: int) -> None:
        """The last message asks for a receipt: its arrival means the broker has them all."""
        if self.chunked:
            await self.wait_receipts(self.window)
        elif self.windowed:
            await self.wait_receipts(self.window - 1)
        self.requested += 1
        self.wire.write(self.receipted.render(seq, seq + 1))

    async def send_one(self, seq: int, size: int, *, last: bool) -> None:
        """One message stamped with its send time (the latency scenario)."""
        if last:
            self.requested += 1
        self.wire.write(
            self.wire.session.send(
                self.plan.destination,
                body(seq, size),
                headers={SENT_HEADER: str(time.monotonic_ns())},
                receipt=f"{seq:012d}" if last else None,
            )
        )
        self._check()

    async def close(self) -> None:
        await self.wire.close()


class Sending(Protocol):
    """What the measuring loop needs of a producer, over STOMP or AMQP."""

    batch: int
    requested: int
    unexpected: int
    last_receipt_ns: int
    receipts: SeqTally

    async def send_range(self, start: int, stop: int) -> None: ...
    async def send_final(self, seq: int) -> None: ...
    async def wait_receipts(self, most: int) -> None: ...
    async def send_one(self, seq: int, size: int, *, last: bool) -> None: ...
    async def close(self) -> None: ...


async def produce(plan: ProducerPlan, control: Control, role: str) -> ProducerResult:
    wire, connected = await open_wire(plan.endpoint, DIALECTS[plan.dialect])
    producer = Producer(plan, control, wire)
    control.report(READY, role, connected.version)
    return await run_producer(plan, control, producer, role)


async def run_producer(
    plan: ProducerPlan, control: Control, producer: Sending, role: str
) -> ProducerResult:
    """Warm up, then send the measured messages (by count or until the deadline)."""
    await wait_event(control.go, control.abort)
    cpu_start = process_cpu_s()
    if plan.rate is not None:
        return await _paced(plan, control, producer, role, cpu_start)
    await producer.send_range(0, plan.warmup)
    await producer.wait_receipts(0)
    control.report(WARM, role)
    await wait_event(control.measure, control.abort)
    t_start = time.monotonic_ns()
    # Count mode stops at the count, duration mode at the deadline, a capped count at either.
    stop = None if plan.count is None else plan.warmup + plan.count - 1
    deadline = None if plan.deadline_s is None else t_start + int(plan.deadline_s * 1e9)
    seq = plan.warmup
    capped = False
    while stop is None or seq < stop:
        if deadline is not None and time.monotonic_ns() >= deadline:
            capped = stop is not None
            break
        n = producer.batch if stop is None else min(producer.batch, stop - seq)
        await producer.send_range(seq, seq + n)
        seq += n
    end = seq + 1
    await producer.send_final(seq)
    t_written = time.monotonic_ns()
    control.total.value = end
    await producer.wait_receipts(0)
    result = ProducerResult(
        sent=end,
        warmup=plan.warmup,
        t_start_ns=t_start,
        t_written_ns=t_written,
        t_done_ns=producer.last_receipt_ns,
        requested=producer.requested,
        receipts=producer.receipts.unique,
        receipt_dups=producer.receipts.dups,
        receipt_unexpected=producer.unexpected + producer.receipts.beyond(end),
        cpu_s=process_cpu_s() - cpu_start,
        capped=capped,
    )
    await producer.close()
    return result


async def _paced(
    plan: ProducerPlan, control: Control, producer: Sending, role: str, cpu_start: float
) -> ProducerResult:
    """One message at a time at ``plan.rate``, each stamped with its send time."""
    assert plan.rate is not None
    assert plan.count is not None
    interval_ns = int(1e9 / plan.rate)
    end = plan.warmup + plan.count
    t_start = 0
    for phase_start, phase_stop in ((0, plan.warmup), (plan.warmup, end)):
        if phase_start == plan.warmup:
            control.report(WARM, role)
            await wait_event(control.measure, control.abort)
        origin = time.monotonic_ns()
        if phase_start == plan.warmup:
            t_start = origin
        for seq in range(phase_start, phase_stop):
            delay = origin + (seq - phase_start) * interval_ns - time.monotonic_ns()
            if delay > 0:
                await asyncio.sleep(delay / 1e9)
            await producer.send_one(seq, plan.size, last=seq == end - 1)
    t_written = time.monotonic_ns()
    control.total.value = end
    await producer.wait_receipts(0)
    result = ProducerResult(
        sent=end,
        warmup=plan.warmup,
        t_start_ns=t_start,
        t_written_ns=t_written,
        t_done_ns=producer.last_receipt_ns,
        requested=producer.requested,
        receipts=producer.receipts.unique,
        receipt_dups=producer.receipts.dups,
        receipt_unexpected=producer.unexpected,
        cpu_s=process_cpu_s() - cpu_start,
    )
    await producer.close()
    return result
