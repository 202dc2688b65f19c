"""Delayed and repeated delivery: ActiveMQ's ``AMQ_SCHEDULED_*`` message headers.

With ``schedulerSupport="true"`` a message sent with ``AMQ_SCHEDULED_DELAY`` (ms),
``AMQ_SCHEDULED_PERIOD`` (ms between repeats), ``AMQ_SCHEDULED_REPEAT`` (extra deliveries) or
``AMQ_SCHEDULED_CRON`` (a cron entry; each firing starts a burst of 1 + REPEAT deliveries, the
first after DELAY) is not routed at once: it is stored as a *job* in the store's
``scheduled://`` container and delivered when due.  Each delivery and the job's next state are
one store batch, so a crash neither loses a delivery nor repeats one: a new master or a
restarted broker reloads the jobs and goes on where the store says.  The first delivery keeps
the message's id; each repeat is a new message.  Delivered copies carry ``scheduledJobId`` and
no longer the scheduling headers.  Without scheduler support the headers are plain properties,
as in ActiveMQ.

Jobs are held in memory (a heap by due time); a broker holding millions of scheduled messages
would want them paged like a queue.
"""

from __future__ import annotations

import heapq
import json
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ferrymq.core import codec
from ferrymq.core.context import CoreContext
from ferrymq.core.cron import CronError, CronSchedule, parse_cron
from ferrymq.core.destination import Destination
from ferrymq.core.errors import BrokerError
from ferrymq.core.message import Message, require_long
from ferrymq.store.base import AddMessage, RemoveMessage, StoredMessage

SCHEDULED_CONTAINER = "scheduled://"
DELAY = "AMQ_SCHEDULED_DELAY"
PERIOD = "AMQ_SCHEDULED_PERIOD"
REPEAT = "AMQ_SCHEDULED_REPEAT"
CRON = "AMQ_SCHEDULED_CRON"
JOB_ID = "scheduledJobId"
SCHEDULING_HEADERS = (DELAY, PERIOD, REPEAT, CRON)

_LENGTH = struct.Struct(">I")


@dataclass(slots=True)
class Job:
    seq: int
    """Key of the job's row in the ``scheduled://`` container."""
    message: Message
    targets: tuple[Destination, ...]
    due_ms: int
    remaining: int
    """Deliveries left in the current burst after the next one."""
    burst_start_ms: int
    """When the current cron firing happened (0 without cron)."""
    delivered: int
    delay_ms: int
    period_ms: int
    repeat: int
    cron: CronSchedule | None

    @property
    def job_id(self) -> str:
        return f"{self.message.message_id}#{self.seq}"

    def __lt__(self, other: Job) -> bool:
        return (self.due_ms, self.seq) < (other.due_ms, other.seq)


def wants_scheduling(message: Message) -> bool:
    properties = message.properties
    return any(name in properties for name in SCHEDULING_HEADERS)


def _long(message: Message, name: str) -> int:
    value = message.properties.get(name)
    if value is None or value.strip() == "":
        return 0
    try:
        number = int(value.strip())
    except ValueError:
        raise BrokerError(f"header {name} must be a whole number, got {value!r}") from None
    if number < 0:
        raise BrokerError(f"header {name} must not be negative, got {number}")
    return require_long(name, number)


@dataclass(frozen=True, slots=True)
class ScheduleRequest:
    delay_ms: int
    period_ms: int
    repeat: int
    cron: CronSchedule | None


def check_schedule(message: Message) -> ScheduleRequest:
    """Read and check a message's scheduling headers; ``BrokerError`` names a bad one."""
    cron_text = message.properties.get(CRON, "").strip()
    try:
        cron = parse_cron(cron_text) if cron_text else None
    except CronError as exc:
        raise BrokerError(f"header {CRON}: {exc}") from None
    return ScheduleRequest(
        _long(message, DELAY), _long(message, PERIOD), _long(message, REPEAT), cron
    )


class Scheduler:
    """ActiveMQ's ``SchedulerBroker`` and its ``JobScheduler`` in one."""

    def __init__(
        self, context: CoreContext, deliver: Callable[[Message, Sequence[Destination]], None]
    ) -> None:
        """``deliver`` routes a job's message when it comes due, as a send would."""
        self._context = context
        self._deliver_to = deliver
        self._heap: list[Job] = []
        self._jobs: dict[int, Job] = {}

    def __len__(self) -> int:
        return len(self._jobs)

    def next_due(self) -> int | None:
        while self._heap and self._heap[0].seq not in self._jobs:
            heapq.heappop(self._heap)
        return self._heap[0].due_ms if self._heap else None

    # -- taking a message ---------------------------------------------------------------------

    def schedule(self, message: Message, targets: tuple[Destination, ...]) -> None:
        now = self._context.now_ms
        request = check_schedule(message)
        cron = request.cron
        burst = cron.next_after(now) if cron is not None else 0
        job = Job(
            self._context.next_seq(),
            message,
            targets,
            (burst or now) + request.delay_ms,
            request.repeat,
            burst,
            0,
            request.delay_ms,
            request.period_ms,
            request.repeat,
            cron,
        )
        self._store(job)
        self._add(job)
        if job.due_ms <= now:
            self.fire_due(now)  # no delay: the first delivery goes out with the send

    def _add(self, job: Job) -> None:
        self._jobs[job.seq] = job
        heapq.heappush(self._heap, job)

    def _store(self, job: Job) -> None:
        self._context.effects.store_ops.append(
            AddMessage(
                SCHEDULED_CONTAINER,
                job.seq,
                encode_job(job),
                job.message.priority,
                0,
                True,
                None,
            )
        )

    # -- time passing -------------------------------------------------------------------------

    def fire_due(self, now_ms: int) -> int:
        """Deliver every job due by ``now_ms``; returns how many deliveries were made."""
        now = now_ms
        fired = 0
        heap = self._heap
        while heap and heap[0].due_ms <= now:
            job = heapq.heappop(heap)
            if self._jobs.get(job.seq) is not job:
                continue
            del self._jobs[job.seq]
            self._context.effects.store_ops.append(RemoveMessage(SCHEDULED_CONTAINER, job.seq))
            self._deliver(job, now)
            fired += 1
            following = self._advance(job, now)
            if following is not None:
                self._store(following)
                self._add(following)
        return fired

    def _deliver(self, job: Job, now_ms: int) -> None:
        template = job.message
        properties = {k: v for k, v in template.properties.items() if k not in SCHEDULING_HEADERS}
        properties[JOB_ID] = job.job_id
        first = job.delivered == 0 and job.cron is None
        copy = template.copy(
            message_id=template.message_id if first else self._context.new_message_id(),
            producer_message_id=template.producer_message_id if first else None,
            properties=properties,
            timestamp=now_ms,
        )
        self._deliver_to(copy, job.targets)

    def _advance(self, job: Job, now_ms: int) -> Job | None:
        """The job's next state after one delivery, or None when it is finished."""
        if job.remaining > 0:
            return Job(
                self._context.next_seq(),
                job.message,
                job.targets,
                job.due_ms + job.period_ms,
                job.remaining - 1,
                job.burst_start_ms,
                job.delivered + 1,
                job.delay_ms,
                job.period_ms,
                job.repeat,
                job.cron,
            )
        if job.cron is None:
            return None
        burst = job.cron.next_after(max(job.burst_start_ms, now_ms))
        return Job(
            self._context.next_seq(),
            job.message,
            job.targets,
            burst + job.delay_ms,
            job.repeat,
            burst,
            job.delivered + 1,
            job.delay_ms,
            job.period_ms,
            job.repeat,
            job.cron,
        )

    # -- recovery -----------------------------------------------------------------------------

    def restore(self, records: Iterable[StoredMessage]) -> None:
        for record in records:
            job = decode_job(record.seq, record.blob)
            self._add(job)


def encode_job(job: Job) -> bytes:
    state = {
        "due": job.due_ms,
        "rem": job.remaining,
        "burst": job.burst_start_ms,
        "n": job.delivered,
        "delay": job.delay_ms,
        "period": job.period_ms,
        "repeat": job.repeat,
        "cron": job.cron.text if job.cron is not None else None,
        "to": [d.qualified for d in job.targets],
    }
    raw = json.dumps(state, separators=(",", ":")).encode()
    return _LENGTH.pack(len(raw)) + raw + codec.encode(job.message)


def decode_job(seq: int, blob: bytes) -> Job:
    try:
        (length,) = _LENGTH.unpack_from(blob)
        state = json.loads(blob[4 : 4 + length])
        message = codec.decode(blob[4 + length :])
        return Job(
            seq,
            message,
            tuple(Destination.parse_qualified(d) for d in state["to"]),
            state["due"],
            state["rem"],
            state["burst"],
            state["n"],
            state["delay"],
            state["period"],
            state["repeat"],
            parse_cron(state["cron"]) if state["cron"] else None,
        )
    except (struct.error, ValueError, KeyError, TypeError) as exc:
        raise codec.CodecError(f"damaged scheduled job #{seq}: {exc}") from exc
