"""What each process measured, and what a scenario adds up to.

Times are ``time.monotonic_ns()`` values: on Linux that is CLOCK_MONOTONIC, one clock for every
process on the machine, so a consumer's arrival time and a producer's send time can be
subtracted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ferrymq.bench.stats import LatencySummary


@dataclass(frozen=True, slots=True)
class ProducerResult:
    sent: int
    """Messages sent, warm-up included."""
    warmup: int
    t_start_ns: int
    """Just before the first measured message was written."""
    t_written_ns: int
    """After the last measured message was handed to the socket."""
    t_done_ns: int
    """When the broker confirmed the last message (its receipt)."""
    requested: int = 0
    """Receipts asked for: every message when persistent, else the last (or each chunk's)."""
    receipts: int = 0
    """Distinct receipts that arrived for them."""
    receipt_dups: int = 0
    receipt_unexpected: int = 0
    cpu_s: float = 0.0
    capped: bool = False
    """The time cap stopped a count-mode run before its count."""


@dataclass(frozen=True, slots=True)
class ConsumerResult:
    index: int
    received: int
    """MESSAGE frames, duplicates and strangers included."""
    unique: int
    """Distinct expected sequence numbers."""
    dups: int
    unexpected: int
    """Frames whose body is not one of this run's sequence numbers."""
    missing: int
    missing_examples: tuple[int, ...]
    reordered: int
    """Messages that arrived after one with a higher sequence number (information only)."""
    t_first_ns: int
    t_last_ns: int
    """When the last missing measured message arrived (0 if never)."""
    cpu_s: float = 0.0
    latencies_ns: tuple[int, ...] = ()
    error: str | None = None


@dataclass(frozen=True, slots=True)
class SubscriberRate:
    index: int
    received: int
    msg_per_s: float


@dataclass(slots=True)
class ScenarioResult:
    """One scenario against one broker, as printed and as written to JSON."""

    name: str
    description: str
    messages: int
    """Measured messages sent (per subscriber for topics)."""
    seconds: float
    """The interval behind ``msg_per_s``."""
    msg_per_s: float
    """The headline: end to end for queues and topics (summed over subscribers), receipted for
    the persistent scenario, the send rate for latency."""
    metric: str
    """What ``msg_per_s`` counts, in words."""
    sent_msg_per_s: float = 0.0
    """Producer side: measured messages / (last confirmation - first send)."""
    received: int = 0
    """Messages the consumers received, summed, warm-up excluded."""
    end_to_end_msg_per_s: float = 0.0
    lost: int = 0
    duplicated: int = 0
    unexpected: int = 0
    reordered: int = 0
    subscribers: list[SubscriberRate] = field(default_factory=list)
    latency: LatencySummary | None = None
    producer_cpu_s: float = 0.0
    consumer_cpu_s: float = 0.0
    broker_cpu_s: float | None = None
    broker_cpu_per_process: list[float] = field(default_factory=list)
    """With several brokers measured (a producer's and a consumer's across a bridge), each
    one's share of ``broker_cpu_s``, in the order of ``BenchOptions.broker_pids``."""
    ack_mode: str = "auto"
    stomp_version: str | None = None
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Facts a reader needs that are not faults (a time cap that cut the count short)."""
    warnings: list[str] = field(default_factory=list)
    """Why the numbers, though counted right, mean little (a measured window too short)."""
    skipped: str | None = None

    @property
    def ok(self) -> bool:
        return not self.problems and self.skipped is None


@dataclass(slots=True)
class BenchReport:
    url: str
    label: str
    server: str | None
    dialect: str
    version: str
    size: int
    scenarios: list[ScenarioResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    load_average: list[float] | None = None
    """The machine's 1, 5 and 15 minute load averages just before the run: anything else
    busy on the machine shows here."""
    destinations: list[str] = field(default_factory=list)
    """The destinations the run created (``/queue/ferrymq.bench.<run>.<scenario>``)."""
    cleanup: str | None = None
    """What became of them: removed through the admin API, or why they are still there."""
    protocol: str = "stomp"
    """``stomp`` or ``amqp`` (``version`` is then AMQP's, 1.0)."""

    @property
    def ok(self) -> bool:
        return all(s.ok or s.skipped is not None for s in self.scenarios)
