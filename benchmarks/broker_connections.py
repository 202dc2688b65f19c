"""Throughput of AMQP broker connections next to one broker (issue 18 "Performance").  Run from
the repository root:

    .venv/bin/python -m benchmarks.broker_connections [--count 20000] [--warmup 2000] [--runs 3]

Every case runs ``ferrymq bench``'s ``queue`` (non-persistent, ``ack:auto``) and
``queue-persistent`` (a receipt on every SEND, at most 1000 outstanding) scenarios with bench's
own producer and consumer processes, so every message is counted (a lost or duplicated one fails
the run), against separate ``ferrymq broker`` processes on fresh data directories:

- ``single``: producer and consumer on one broker;
- ``mirror``: the same on broker A, which has ``<amqp-connection><mirror/></amqp-connection>`` to
  broker B (B listens on ``amqp://``).  While the scenario runs, A's admin API
  (``GET /api/v1/broker-connections``) is sampled for the mirror's ``lag_ms`` and ``backlog``;
  after it, the time until the backlog is 0 is measured, and B must then hold what A holds (the
  queue empty, every message and every acknowledgement mirrored: B's enqueued count = A's);
- ``mirror-sync``: the same with ``<mirror sync="true"/>``;
- ``federation``: the producer on B, the consumer on A, A with a ``<federation>`` local queue
  policy for the bench queue on B (one hop).

The headline is end to end: from the producer's first measured SEND to the consumer holding the
last message; the producer's receipted rate is printed beside it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ferrymq.bench.dialect import ACTIVEMQ
from ferrymq.bench.options import BenchOptions, Endpoint
from ferrymq.bench.results import ScenarioResult
from ferrymq.bench.runner import run_scenario
from ferrymq.bench.scenarios import BY_NAME, Scenario
from ferrymq.testing import BrokerProcess, free_port

SCENARIOS = ("queue", "queue-persistent")
CASES = ("single", "mirror", "mirror-sync", "federation")
QUEUE = "bench.connections"
CONNECTION = "B"
CONNECT_TIMEOUT_S = 30.0
DRAIN_TIMEOUT_S = 300.0
"""How long the mirror may take to empty its backlog after a scenario."""
SAMPLE_INTERVAL_S = 0.05
HTTP_TIMEOUT_S = 5.0
MAX_SECONDS = 120.0
"""Cap on one scenario's sending time, as ``ferrymq bench --max-seconds``."""
PATHS = {
    "single": "1 broker",
    "mirror": "A (mirror -> B)",
    "mirror-sync": "A (sync mirror -> B)",
    "federation": "B -> federation -> A",
}


@dataclass
class Node:
    """A ``ferrymq broker`` process with an AMQP listener and an admin API."""

    process: BrokerProcess
    amqp_port: int
    admin_port: int

    @property
    def pid(self) -> int:
        assert self.process.process is not None
        return self.process.process.pid

    def get(self, path: str) -> Any:
        url = f"http://127.0.0.1:{self.admin_port}{path}"
        with urllib.request.urlopen(url, timeout=HTTP_TIMEOUT_S) as answer:
            return json.load(answer)

    def queue(self, name: str) -> dict[str, Any] | None:
        """A queue's admin record (None: no such queue)."""
        try:
            record: dict[str, Any] = self.get(f"/api/v1/destinations/queue/{name}")
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise
        return record

    def connection(self) -> dict[str, Any] | None:
        for record in self.get("/api/v1/broker-connections")["broker_connections"]:
            if record.get("name") == CONNECTION:
                return dict(record)
        return None

    def mirror(self) -> dict[str, Any]:
        record = self.connection() or {}
        for element in record.get("elements", []):
            if element.get("type") == "mirror":
                return dict(element)
        raise RuntimeError(f"broker {self.process.name} shows no mirror element: {record}")


def node(root: Path, name: str, connections: str = "") -> Node:
    amqp_port, admin_port = free_port(), free_port()
    xml = f"""<beans><broker xmlns="http://activemq.apache.org/schema/core" brokerName="{name}"
      persistent="true"><broker-connections>{connections}</broker-connections></broker></beans>"""
    process = BrokerProcess(
        root / name,
        name=name,
        config_xml=xml,
        extra_args=[
            "--listen",
            f"amqp://127.0.0.1:{amqp_port}",
            "--admin",
            f"127.0.0.1:{admin_port}",
        ],
    )
    return Node(process, amqp_port, admin_port)


def connection_xml(case: str, port: int) -> str:
    if case == "federation":
        element = f"""<federation><local-queue-policy name="bench">
          <include address-match="#" queue-match="{QUEUE}"/></local-queue-policy></federation>"""
    else:
        element = '<mirror sync="true"/>' if case == "mirror-sync" else "<mirror/>"
    return (
        f'<amqp-connection uri="tcp://127.0.0.1:{port}" name="{CONNECTION}" '
        f'retry-interval="100">{element}</amqp-connection>'
    )


def wait_connected(a: Node) -> None:
    deadline = time.monotonic() + CONNECT_TIMEOUT_S
    record: dict[str, Any] | None = None
    while time.monotonic() < deadline:
        try:
            record = a.connection()
        except OSError:  # its admin listener not up yet
            record = None
        if record is not None and record.get("state") == "connected":
            return
        time.sleep(0.05)
    raise TimeoutError(f"broker connection {CONNECTION} did not connect: {record}")


@dataclass
class Lag:
    """What the mirror's statistics showed during and after one scenario."""

    max_lag_ms: int = 0
    max_backlog: int = 0
    drain_s: float = 0.0
    """From the end of the bench run (last receipt, last message consumed) to backlog 0."""
    forwarded: int = 0
    samples: int = 0
    missed: int = 0
    """Samples the admin API did not answer in time."""
    last_error: str | None = None


class Sampler:
    """Polls A's mirror statistics in a thread while a scenario runs."""

    def __init__(self, a: Node) -> None:
        self.a = a
        self.lag = Lag()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def sample(self) -> dict[str, Any]:
        mirror = self.a.mirror()
        self.lag.samples += 1
        self.lag.max_lag_ms = max(self.lag.max_lag_ms, int(mirror.get("lag_ms") or 0))
        self.lag.max_backlog = max(self.lag.max_backlog, int(mirror.get("backlog") or 0))
        self.lag.forwarded = int(mirror.get("forwarded") or 0)
        return mirror

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_INTERVAL_S):
            try:
                self.sample()
            except OSError as exc:  # a busy broker's admin API slow to answer: the next one
                self.lag.missed += 1
                self.lag.last_error = str(exc)

    def drain(self) -> None:
        """Wait (bounded) until the mirror's backlog is 0 and nothing is in flight."""
        started = time.monotonic()
        while time.monotonic() - started < DRAIN_TIMEOUT_S:
            mirror = self.sample()
            if not mirror.get("backlog") and not mirror.get("lag_ms"):
                self.lag.drain_s = time.monotonic() - started
                return
            time.sleep(SAMPLE_INTERVAL_S)
        raise TimeoutError(f"the mirror still has a backlog after {DRAIN_TIMEOUT_S:.0f} s")


@dataclass
class Outcome:
    result: ScenarioResult
    cpu_s: list[float]
    """Broker CPU seconds while measuring: [the broker] or [A, B]."""
    lag: Lag | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.result.ok and not self.problems


def run_case(
    scenario: Scenario,
    producer_at: Node,
    consumer_at: Node,
    pids: list[int],
    count: int,
    warmup: int,
) -> Outcome:
    """One bench scenario with its producer and its consumer where the case puts them."""
    options = BenchOptions(
        endpoint=Endpoint("127.0.0.1", producer_at.process.port),
        consumer_endpoint=Endpoint("127.0.0.1", consumer_at.process.port),
        scenarios=(scenario.name,),
        count=count,
        warmup=warmup,
        max_seconds=MAX_SECONDS,
        broker_pids=tuple(pids),
    )
    options.check()
    result = run_scenario(scenario, options, ACTIVEMQ, QUEUE)
    return Outcome(result, result.broker_cpu_per_process)


def mirrored_problems(a: Node, b: Node, sampler: Sampler) -> list[str]:
    """B must hold what A holds once the mirror drained: the bench queue empty on both, every
    message enqueued on A enqueued on B."""
    on_a, on_b = a.queue(QUEUE), b.queue(QUEUE)
    if on_a is None or on_b is None:
        return [f"the queue is missing: on A {on_a}, on B {on_b}"]
    problems = []
    if on_b["depth"] != on_a["depth"] or on_b["depth"] != 0:
        problems.append(f"depth on A {on_a['depth']}, on B {on_b['depth']} (want 0 and 0)")
    if on_b["enqueued"] != on_a["enqueued"]:
        problems.append(f"enqueued on A {on_a['enqueued']}, on B {on_b['enqueued']}")
    if sampler.a.mirror().get("rejected"):
        problems.append("the target rejected events")
    return problems


def run_once(root: Path, case: str, scenario: Scenario, count: int, warmup: int) -> Outcome:
    if case == "single":
        single = node(root, "single")
        with single.process:
            return run_case(scenario, single, single, [single.pid], count, warmup)
    b = node(root, "B")
    a = node(root, "A", connection_xml(case, b.amqp_port))
    with b.process, a.process:
        wait_connected(a)
        pids = [a.pid, b.pid]
        if case == "federation":
            return run_case(scenario, b, a, pids, count, warmup)
        with Sampler(a) as sampler:
            outcome = run_case(scenario, a, a, pids, count, warmup)
        sampler.drain()
        outcome.lag = sampler.lag
        outcome.problems = mirrored_problems(a, b, sampler)
        return outcome


def describe(run: int, name: str, case: str, outcome: Outcome) -> str:
    r = outcome.result
    cpu_text = " + ".join(f"{c:.1f}" for c in outcome.cpu_s)
    problems = [*r.problems, *outcome.problems]
    status = "ok" if not problems else "FAIL: " + "; ".join(problems)
    text = (
        f"run {run + 1} {name} {case}: end to end {r.end_to_end_msg_per_s:,.0f} msg/s,"
        f" sent {r.sent_msg_per_s:,.0f} msg/s, received {r.received}, lost {r.lost},"
        f" dup {r.duplicated}, broker CPU {cpu_text} s"
    )
    if outcome.lag is not None:
        lag = outcome.lag
        text += (
            f", mirror lag max {lag.max_lag_ms} ms, backlog max {lag.max_backlog},"
            f" drained {lag.drain_s:.1f} s after the run, forwarded {lag.forwarded}"
        )
        if lag.missed:
            text += (
                f" ({lag.missed} of {lag.samples + lag.missed} samples missed: {lag.last_error})"
            )
    return f"{text}, {status}"


def table(outcomes: dict[tuple[str, str], list[Outcome]]) -> list[str]:
    lines = [
        "| scenario | path | end-to-end msg/s (median) | runs | producer's msg/s | "
        "vs 1 broker | broker CPU s | mirror lag max ms | backlog max | drained after s "
        "| check |",
        "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for (name, case), results in outcomes.items():
        e2e = statistics.median(o.result.end_to_end_msg_per_s for o in results)
        single = outcomes.get((name, "single"))
        base = statistics.median(o.result.end_to_end_msg_per_s for o in single) if single else 0
        share = f"{e2e / base:.0%}" if base else "-"
        sent = statistics.median(o.result.sent_msg_per_s for o in results)
        cpu = " + ".join(
            f"{statistics.median(o.cpu_s[i] for o in results):.1f}"
            for i in range(len(results[0].cpu_s))
        )
        lags = [o.lag for o in results if o.lag is not None]
        lag_text = "- | - | -"
        if lags:
            lag_text = (
                f"{statistics.median(x.max_lag_ms for x in lags):,.0f} | "
                f"{statistics.median(x.max_backlog for x in lags):,.0f} | "
                f"{statistics.median(x.drain_s for x in lags):.1f}"
            )
        runs_text = ", ".join(f"{o.result.end_to_end_msg_per_s:,.0f}" for o in results)
        check = "ok" if all(o.ok for o in results) else "FAIL"
        lines.append(
            f"| {name} | {PATHS[case]} | {e2e:,.0f} | {runs_text} | {sent:,.0f} | {share} "
            f"| {cpu} | {lag_text} | {check} |"
        )
    return lines


def main(count: int, warmup: int, runs: int, cases: tuple[str, ...]) -> int:
    outcomes: dict[tuple[str, str], list[Outcome]] = {}
    with tempfile.TemporaryDirectory(prefix="ferrymq-connections-bench-") as tmp:
        for run in range(runs):
            for name in SCENARIOS:
                for case in cases:
                    root = Path(tmp) / f"{run}-{name}-{case}"
                    outcome = run_once(root, case, BY_NAME[name], count, warmup)
                    outcomes.setdefault((name, case), []).append(outcome)
                    print(describe(run, name, case, outcome), flush=True)
    print(
        f"\n{count:,} messages of 256 bytes per run after {warmup:,} warm-up; median of {runs}.\n"
    )
    print("\n".join(table(outcomes)))
    return 0 if all(o.ok for results in outcomes.values() for o in results) else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=20_000)
    parser.add_argument("--warmup", type=int, default=2_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--case", action="append", choices=CASES, help="only these (repeatable)")
    arguments = parser.parse_args()
    raise SystemExit(
        main(arguments.count, arguments.warmup, arguments.runs, tuple(arguments.case or CASES))
    )
