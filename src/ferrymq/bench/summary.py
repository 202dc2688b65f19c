"""From what the workers measured to one scenario's numbers, with every count checked.

The clock starts when the producer writes its first measured message and stops when the last
consumer holds its last expected message (end to end), or when the last receipt arrives (the
persistent scenario's headline: receipted messages per second). A message lost, duplicated or
unknown is a problem named in the result, never a silently lower number.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ferrymq.bench.results import ConsumerResult, ProducerResult, ScenarioResult, SubscriberRate
from ferrymq.bench.scenarios import Scenario
from ferrymq.bench.stats import LatencySummary, rate

NS = 1e9
MIN_MEASURED_S = 1.0
MIN_MEASURED_MESSAGES = 1000
MIN_LATENCY_SAMPLES = 1000
"""Below these a rate is mostly start-up and scheduling noise, and a p99 is one of a handful
of samples: the report still shows the number, with a warning."""


def summarise(
    scenario: Scenario,
    *,
    ack: str,
    producer: ProducerResult | None,
    consumers: Sequence[ConsumerResult | None],
    expected: int | None,
    errors: Mapping[str, str],
    broker_cpu_s: float | None = None,
    broker_cpu_per_process: Sequence[float] = (),
    stomp_version: str | None = None,
) -> ScenarioResult:
    """Add up one scenario; ``expected`` is the measured count asked for (None: duration)."""
    problems = [f"{role}: {_first_line(text)}" for role, text in sorted(errors.items())]
    result = ScenarioResult(
        name=scenario.name,
        description=scenario.description,
        messages=0,
        seconds=0.0,
        msg_per_s=0.0,
        metric=_metric(scenario, len(consumers)),
        ack_mode=ack,
        broker_cpu_s=broker_cpu_s,
        broker_cpu_per_process=list(broker_cpu_per_process),
        stomp_version=stomp_version,
        problems=problems,
    )
    done = [c for c in consumers if c is not None]
    for index, consumer in enumerate(consumers):
        if consumer is None:
            problems.append(f"consumer-{index} reported nothing")
    for consumer in done:
        _check_consumer(consumer, len(consumers), problems)
        result.lost += consumer.missing
        result.duplicated += consumer.dups
        result.unexpected += consumer.unexpected
        result.reordered += consumer.reordered
        result.consumer_cpu_s += consumer.cpu_s
    if producer is None:
        if not problems:
            problems.append("the producer reported nothing")
        return result
    measured = producer.sent - producer.warmup
    result.messages = measured
    result.producer_cpu_s = producer.cpu_s
    if producer.capped:
        result.notes.append(f"time cap reached after {measured} of {expected} messages")
    elif expected is not None and measured != expected:
        problems.append(f"the producer sent {measured} measured messages, not {expected}")
    _check_receipts(scenario, producer, problems)
    t0 = producer.t_start_ns
    sent_s = (producer.t_done_ns - t0) / NS if producer.t_done_ns else 0.0
    result.sent_msg_per_s = rate(measured, sent_s)

    for consumer in done:
        result.received += max(0, consumer.unique - producer.warmup)
    complete = len(done) == len(consumers) and all(c.missing == 0 for c in done)
    end_s = (max(c.t_last_ns for c in done) - t0) / NS if complete and done else 0.0
    result.end_to_end_msg_per_s = rate(result.received, end_s)
    if scenario.topic:
        result.subscribers = [
            SubscriberRate(
                c.index,
                c.unique - producer.warmup,
                rate(c.unique - producer.warmup, (c.t_last_ns - t0) / NS) if c.t_last_ns else 0.0,
            )
            for c in done
        ]
    if scenario.latency:
        samples = [s for c in done for s in c.latencies_ns]
        if samples:
            result.latency = LatencySummary.from_ns(samples)
        else:
            problems.append("no latency samples")
    if scenario.persistent or scenario.latency:
        result.seconds, result.msg_per_s = sent_s, result.sent_msg_per_s
    else:
        result.seconds, result.msg_per_s = end_s, result.end_to_end_msg_per_s
    result.warnings.extend(short_run_warnings(result))
    return result


def short_run_warnings(result: ScenarioResult) -> list[str]:
    """Say so when the measured window is too short for its number to mean anything."""
    if result.latency is not None:
        samples = result.latency.samples
        if samples >= MIN_LATENCY_SAMPLES:
            return []
        return [
            f"only {samples} latency samples: too few for a meaningful p99 (at least "
            f"{MIN_LATENCY_SAMPLES}); use --latency-samples 2000 (the default) or more"
        ]
    if result.seconds <= 0 or (
        result.seconds >= MIN_MEASURED_S and result.messages >= MIN_MEASURED_MESSAGES
    ):
        return []
    return [
        f"measured for only {result.seconds:.2f} s ({result.messages} messages): too "
        f"short for a meaningful rate (at least {MIN_MEASURED_S:.0f} s and "
        f"{MIN_MEASURED_MESSAGES} messages); raise --count (default 100000) or use "
        "--duration 10"
    ]


def _metric(scenario: Scenario, subscribers: int) -> str:
    if scenario.persistent:
        return "receipted msg/s"
    if scenario.latency:
        return "paced send rate"
    if scenario.topic:
        return f"delivered msg/s, sum of {subscribers} subscribers"
    return "end-to-end msg/s"


def _check_receipts(scenario: Scenario, producer: ProducerResult, problems: list[str]) -> None:
    """Every receipt asked for came, once; the persistent scenario asked one per message."""
    if scenario.persistent and producer.requested != producer.sent:
        problems.append(f"receipts asked for {producer.requested} of {producer.sent} messages")
    if producer.receipts < producer.requested:
        problems.append(f"{producer.requested - producer.receipts} receipts never arrived")
    if producer.receipt_dups:
        problems.append(f"{producer.receipt_dups} duplicate receipts")
    if producer.receipt_unexpected:
        problems.append(f"{producer.receipt_unexpected} unexpected receipts")


def _check_consumer(consumer: ConsumerResult, count: int, problems: list[str]) -> None:
    who = f"consumer-{consumer.index}" if count > 1 else "consumer"
    if consumer.missing:
        examples = ", ".join(map(str, consumer.missing_examples))
        problems.append(f"{who}: LOST {consumer.missing} messages (sequence numbers {examples}...)")
    if consumer.dups:
        problems.append(f"{who}: DUPLICATED {consumer.dups} messages")
    if consumer.unexpected:
        problems.append(f"{who}: {consumer.unexpected} messages this run never sent")
    if consumer.error:
        problems.append(f"{who}: {_first_line(consumer.error)}")


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text
