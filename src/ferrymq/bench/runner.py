"""Run scenarios: one producer process and one or more consumer processes per scenario.

The processes are spawned (not forked: nothing of the caller's event loop or threads leaks into
them), each with its own event loop, so producer and consumers never share a GIL; the broker
is a process of its own. The runner only relays the phases (ready, warm, done) and adds up what
the workers measured.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import queue
import secrets
import time
from collections.abc import Callable
from dataclasses import replace
from multiprocessing.process import BaseProcess
from typing import Any

from ferrymq.bench.amqp_workers import AMQP_VERSION, amqp_consume, amqp_probe, amqp_produce
from ferrymq.bench.cleanup import remove_destinations
from ferrymq.bench.consumer import ConsumerPlan, consume
from ferrymq.bench.control import DONE, ERROR, READY, WARM, Control, broker_cpu_s, run_worker
from ferrymq.bench.dialect import DIALECTS, PROBE_VERSIONS, Dialect, detect
from ferrymq.bench.options import AMQP, BenchOptionError, BenchOptions, Endpoint
from ferrymq.bench.producer import ProducerPlan, produce
from ferrymq.bench.results import BenchReport, ConsumerResult, ProducerResult, ScenarioResult
from ferrymq.bench.scenarios import BY_NAME, Scenario
from ferrymq.bench.summary import summarise
from ferrymq.bench.wire import BrokerError, open_wire
from ferrymq.stomp.constants import ACK_CLIENT_INDIVIDUAL

Progress = Callable[[str], None]
Meter = Callable[[str, int, int | None], None]
"""Called a few times a second inside a scenario: its name, the messages each consumer has
received so far (the slowest one's), and how many it expects (None in duration mode)."""
PRODUCER = "producer"
REPORT_POLL_S = 0.25
JOIN_TIMEOUT_S = 10.0
ABORT_GRACE_S = 10.0


def run_bench(
    options: BenchOptions, progress: Progress | None = None, meter: Meter | None = None
) -> BenchReport:
    """Run every scenario of ``options`` against one broker, one after the other, then remove
    the destinations they created."""
    options.check()
    for name in options.scenarios:
        if name not in BY_NAME:
            raise BenchOptionError(f"unknown scenario {name!r} (known: {', '.join(BY_NAME)})")
    amqp = options.endpoint.protocol == AMQP
    if amqp:
        server = asyncio.run(amqp_probe(options.endpoint))
    else:
        server, _ = asyncio.run(_probe(options.endpoint))
    dialect = detect(server) if options.dialect == "auto" else DIALECTS[options.dialect]
    report = BenchReport(
        url=options.endpoint.url,
        label=options.label or server or options.endpoint.url,
        server=server,
        dialect=dialect.name,
        version=AMQP_VERSION if amqp else dialect.versions[-1],
        size=options.size,
        protocol=options.endpoint.protocol,
    )
    with contextlib.suppress(OSError):
        report.load_average = [round(x, 2) for x in os.getloadavg()]
    if dialect.note:
        report.notes.append(f"{dialect.name}: {dialect.note}")
    run_id = secrets.token_hex(4)
    try:
        for name in options.scenarios:
            _run_one(BY_NAME[name], options, dialect, run_id, report, progress, meter)
    finally:
        if options.cleanup:
            report.cleanup = remove_destinations(
                options.endpoint,
                server,
                options.admin_url,
                report.destinations,
                dict(options.admin_headers),
            )
            if progress is not None:
                progress(f"destinations: {report.cleanup}")
    return report


def _run_one(
    scenario: Scenario,
    options: BenchOptions,
    dialect: Dialect,
    run_id: str,
    report: BenchReport,
    progress: Progress | None,
    meter: Meter | None,
) -> None:
    if progress is not None:
        progress(f"{scenario.name}: {scenario.description}")
    name = f"{options.name_prefix}.{run_id}.{scenario.name}"
    report.destinations.append(dialect.topic(name) if scenario.topic else dialect.queue(name))
    result = run_scenario(scenario, options, dialect, name, meter)
    report.scenarios.append(result)
    if result.stomp_version:
        report.version = result.stomp_version
    if progress is not None:
        progress(f"{scenario.name}: {_one_line(result)}")
        for warning in result.warnings:
            progress(f"{scenario.name}: WARNING: {warning}")


def _one_line(result: ScenarioResult) -> str:
    if result.latency is not None:
        lat = result.latency
        text = f"p50 {lat.p50_ms:.3f} ms, p99 {lat.p99_ms:.3f} ms, max {lat.max_ms:.3f} ms"
    else:
        text = f"{result.msg_per_s:,.0f} msg/s ({result.metric})"
    return text + ("" if result.ok else " -- " + "; ".join(result.problems))


async def _probe(endpoint: Endpoint) -> tuple[str | None, str]:
    """Connect once to learn the broker's ``server`` header and check that it answers."""
    from ferrymq.bench.dialect import ACTIVEMQ

    probe_dialect = Dialect("probe", PROBE_VERSIONS, ACTIVEMQ.individual_ack, None, None, vhost="")
    try:
        wire, connected = await open_wire(endpoint, probe_dialect, versions=PROBE_VERSIONS)
    except (OSError, BrokerError) as exc:
        if endpoint.login is not None:
            raise BrokerError(f"cannot connect to {endpoint.url}: {exc}") from None
        # RabbitMQ may refuse an anonymous login; try its default user before giving up.
        guest = replace(endpoint, login="guest", passcode="guest")
        try:
            wire, connected = await open_wire(guest, probe_dialect, versions=PROBE_VERSIONS)
        except (OSError, BrokerError):
            raise BrokerError(f"cannot connect to {endpoint.url}: {exc}") from None
    await wire.close()
    return connected.server, connected.version


def run_scenario(
    scenario: Scenario,
    options: BenchOptions,
    dialect: Dialect,
    name: str,
    meter: Meter | None = None,
) -> ScenarioResult:
    latency = scenario.latency
    warmup = options.latency_warmup if latency else options.warmup
    count: int | None = options.latency_samples if latency else options.count
    deadline_s = None
    if not latency:
        if options.duration_s is not None:
            count, deadline_s = None, options.duration_s
        else:
            deadline_s = options.max_seconds
    subscribers = options.subscribers if scenario.topic else 1
    destination = dialect.topic(name) if scenario.topic else dialect.queue(name)
    ack = dialect.individual_ack if scenario.ack == ACK_CLIENT_INDIVIDUAL else scenario.ack
    producer_plan = ProducerPlan(
        endpoint=options.endpoint,
        dialect=dialect.name,
        destination=destination,
        warmup=warmup,
        count=count,
        deadline_s=deadline_s,
        size=options.size,
        persistent=scenario.persistent,
        window=options.window if scenario.persistent else 0,
        idle_timeout_s=options.idle_timeout_s,
        rate=options.latency_rate if latency else None,
    )
    consumer_plans = [
        ConsumerPlan(
            endpoint=options.consumer_endpoint or options.endpoint,
            dialect=dialect.name,
            destination=destination,
            index=index,
            ack=ack,
            prefetch=options.prefetch,
            warmup=warmup,
            # With a deadline the producer announces how many it sent.
            total=None if count is None or deadline_s is not None else warmup + count,
            idle_timeout_s=options.idle_timeout_s,
            linger_s=options.linger_s,
            latency=latency,
        )
        for index in range(subscribers)
    ]
    expected = None if count is None or deadline_s is not None else warmup + count
    run = _Run(options, len(consumer_plans), _scenario_meter(meter, scenario.name, expected))
    for plan in consumer_plans:
        run.spawn(f"consumer-{plan.index}", _consumer_main, plan)
    run.spawn(PRODUCER, _producer_main, producer_plan)
    try:
        run.collect()
    finally:
        run.stop()
    producer = run.results.get(PRODUCER)
    consumers = [run.results.get(f"consumer-{plan.index}") for plan in consumer_plans]
    return summarise(
        scenario,
        ack=ack,
        producer=producer if isinstance(producer, ProducerResult) else None,
        consumers=[c if isinstance(c, ConsumerResult) else None for c in consumers],
        expected=count,
        errors=run.errors,
        broker_cpu_s=run.broker_cpu_s,
        broker_cpu_per_process=run.cpu_per_process(),
        stomp_version=run.version,
    )


def _scenario_meter(
    meter: Meter | None, name: str, expected: int | None
) -> Callable[[list[int]], None] | None:
    if meter is None:
        return None

    def report(received: list[int]) -> None:
        meter(name, min(received, default=0), expected)

    return report


class _Run:
    """The processes of one scenario and the phase each has reported."""

    def __init__(
        self, options: BenchOptions, consumers: int, meter: Callable[[list[int]], None] | None
    ) -> None:
        self.options = options
        self.meter = meter
        self.ctx = multiprocessing.get_context("spawn")
        self.control = Control.create(self.ctx, consumers)
        self.processes: dict[str, BaseProcess] = {}
        self.phases: dict[str, set[str]] = {}
        self.results: dict[str, Any] = {}
        self.errors: dict[str, str] = {}
        self.broker_cpu_s: float | None = None
        self.version: str | None = None
        self._cpu_samples: list[list[float]] = []

    def spawn(self, role: str, target: Callable[..., None], plan: object) -> None:
        process = self.ctx.Process(
            target=target, args=(plan, self.control, role), name=f"ferrymq-bench-{role}"
        )
        process.daemon = True
        process.start()
        self.processes[role] = process
        self.phases[role] = set()

    def _finished(self, role: str) -> bool:
        return bool(self.phases[role] & {DONE, ERROR})

    def collect(self) -> None:
        """Relay phases until every worker is done; abort everyone if the run stalls."""
        control = self.control
        # Workers time out on their own after idle_timeout_s; this is the net under them.
        stall_s = 2 * self.options.idle_timeout_s + 30
        last_report = time.monotonic()
        aborted_at: float | None = None
        while not all(self._finished(role) for role in self.processes):
            if self.meter is not None:
                self.meter(control.received())
            try:
                kind, role, payload = control.reports.get(timeout=REPORT_POLL_S)
            except queue.Empty:
                now = time.monotonic()
                self._reap_dead()
                if aborted_at is None and now - last_report > stall_s:
                    self.errors.setdefault("runner", f"no progress for {stall_s:.0f} s")
                    control.abort.set()
                    aborted_at = now
                if aborted_at is not None and now - aborted_at > ABORT_GRACE_S:
                    return
                continue
            last_report = time.monotonic()
            self.phases[role].add(kind)
            if kind == READY and role == PRODUCER and payload:
                self.version = str(payload)
            if kind == DONE:
                self.results[role] = payload
            elif kind == ERROR:
                self.errors[role] = str(payload)
            self._advance()

    def _advance(self) -> None:
        control = self.control
        roles = self.processes
        failed = any(self._finished(role) for role in roles)
        if not control.measure.is_set() and failed:
            control.abort.set()  # someone gave up before the clock started
            return
        if any(ERROR in phases for phases in self.phases.values()):
            control.abort.set()
            return
        if not control.go.is_set() and all(READY in self.phases[r] for r in roles):
            control.go.set()
        if not control.measure.is_set() and all(WARM in self.phases[r] for r in roles):
            self._sample_cpu()
            control.measure.set()
        if all(DONE in self.phases[r] for r in roles) and len(self._cpu_samples) == 1:
            self._sample_cpu()
            if self.options.broker_pids:
                self.broker_cpu_s = sum(self.cpu_per_process())

    def _sample_cpu(self) -> None:
        self._cpu_samples.append([broker_cpu_s(pid) or 0.0 for pid in self.options.broker_pids])

    def cpu_per_process(self) -> list[float]:
        """Each broker's CPU seconds over the measured interval (empty until it ended)."""
        if len(self._cpu_samples) < 2:
            return []
        first, last = self._cpu_samples
        return [b - a for a, b in zip(first, last, strict=True)]

    def _reap_dead(self) -> None:
        for role, process in self.processes.items():
            if not process.is_alive() and not self._finished(role):
                self.phases[role].add(ERROR)
                self.errors[role] = f"worker exited with code {process.exitcode} without a report"
                self.control.abort.set()

    def stop(self) -> None:
        if not all(self._finished(role) for role in self.processes):
            self.control.abort.set()
        deadline = time.monotonic() + JOIN_TIMEOUT_S
        for process in self.processes.values():
            process.join(max(0.0, deadline - time.monotonic()))
        for process in self.processes.values():
            if process.is_alive():
                process.kill()
                process.join(JOIN_TIMEOUT_S)
        self.control.reports.close()
        self.control.reports.join_thread()


def _producer_main(plan: ProducerPlan, control: Control, role: str) -> None:
    send = amqp_produce if plan.endpoint.protocol == AMQP else produce
    run_worker(role, control, lambda: send(plan, control, role))


def _consumer_main(plan: ConsumerPlan, control: Control, role: str) -> None:
    receive = amqp_consume if plan.endpoint.protocol == AMQP else consume
    run_worker(role, control, lambda: receive(plan, control, role))
