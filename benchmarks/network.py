"""Throughput across one network bridge, next to one broker (issue 5 "Performance").  Run from
the repository root:

    .venv/bin/python -m benchmarks.network [--count 20000] [--warmup 2000] [--runs 3]

Two ``ferrymq broker`` processes, A with ``<networkConnector uri="static:(B)"/>`` and B with no
configuration, run a producer on A and a consumer on B; the same producer and consumer on one
broker give the single-broker figure.  Each case runs ``ferrymq bench``'s ``queue`` (non-
persistent, ``ack:auto``) and ``queue-persistent`` (a receipt on every SEND, at most 1000
outstanding) scenarios with bench's own producer and consumer processes, so every message is
counted (a lost or duplicated one fails the run) and the numbers are measured as on
docs/benchmarks.md.  ``ferrymq bench`` points producer and consumer at one URL; this script
gives each its own.  Every run starts fresh brokers on fresh data directories.

The headline is end to end: from the producer's first measured SEND to the consumer holding the
last message.  For the persistent scenario the producer's receipted rate (what bench's own table
shows) is printed too: across a bridge it is only A's half of the work.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ferrymq.bench.dialect import ACTIVEMQ
from ferrymq.bench.options import BenchOptions, Endpoint
from ferrymq.bench.results import ScenarioResult
from ferrymq.bench.runner import run_scenario
from ferrymq.bench.scenarios import BY_NAME, Scenario
from ferrymq.testing import BrokerProcess

SCENARIOS = ("queue", "queue-persistent")
BRIDGE_TIMEOUT_S = 30.0
MAX_SECONDS = 120.0
"""Cap on one scenario's sending time, as ``ferrymq bench --max-seconds``."""


@dataclass
class Outcome:
    result: ScenarioResult
    cpu_s: list[float]
    """Broker CPU seconds while measuring: [the broker] or [A, B]."""


def run_case(
    scenario: Scenario,
    producer_at: BrokerProcess,
    consumer_at: BrokerProcess,
    pids: list[int],
    count: int,
    warmup: int,
    destination: str,
) -> Outcome:
    """One bench scenario with the producer on one broker and the consumer on another (or the
    same): ``ferrymq bench``'s own runner, told where the consumer connects."""
    options = BenchOptions(
        endpoint=Endpoint("127.0.0.1", producer_at.port),
        consumer_endpoint=Endpoint("127.0.0.1", consumer_at.port),
        scenarios=(scenario.name,),
        count=count,
        warmup=warmup,
        max_seconds=MAX_SECONDS,
        broker_pids=tuple(pids),
    )
    options.check()
    result = run_scenario(scenario, options, ACTIVEMQ, destination)
    return Outcome(result, result.broker_cpu_per_process)


def network_pair(root: Path) -> tuple[BrokerProcess, BrokerProcess]:
    b = BrokerProcess(root / "B", name="B", config_xml=_broker_xml("B"))
    connector = f'<networkConnector name="bench" uri="static:(tcp://127.0.0.1:{b.port})"/>'
    a = BrokerProcess(root / "A", name="A", config_xml=_broker_xml("A", connector))
    return a, b


def _broker_xml(name: str, connectors: str = "") -> str:
    return f"""<broker xmlns="http://activemq.apache.org/schema/core" brokerName="{name}"
      brokerId="{name}"><networkConnectors>{connectors}</networkConnectors></broker>"""


def wait_for_bridge(broker: BrokerProcess) -> None:
    deadline = time.monotonic() + BRIDGE_TIMEOUT_S
    while time.monotonic() < deadline:
        if any("network bridge bench:" in line and "started" in line for line in broker.output):
            return
        time.sleep(0.05)
    raise TimeoutError(
        f"the bridge of broker {broker.name} did not start:\n" + "".join(broker.output[-20:])
    )


def run_once(root: Path, case: str, scenario: Scenario, count: int, warmup: int) -> Outcome:
    if case == "single":
        broker = BrokerProcess(root / "single", name="single")
        with broker:
            assert broker.process is not None
            return run_case(scenario, broker, broker, [broker.process.pid], count, warmup, "x")
    a, b = network_pair(root)
    with b, a:
        assert a.process is not None
        assert b.process is not None
        wait_for_bridge(a)
        return run_case(scenario, a, b, [a.process.pid, b.process.pid], count, warmup, "x")


def main(count: int, warmup: int, runs: int) -> None:
    outcomes: dict[tuple[str, str], list[Outcome]] = {}
    with tempfile.TemporaryDirectory(prefix="ferrymq-network-bench-") as tmp:
        for run in range(runs):
            for name in SCENARIOS:
                for case in ("single", "bridge"):
                    outcome = run_once(
                        Path(tmp) / f"{run}-{name}-{case}", case, BY_NAME[name], count, warmup
                    )
                    outcomes.setdefault((name, case), []).append(outcome)
                    r = outcome.result
                    cpu_text = " + ".join(f"{c:.1f}" for c in outcome.cpu_s)
                    status = "ok" if r.ok else "FAIL: " + "; ".join(r.problems)
                    print(
                        f"run {run + 1} {name} {case}: end to end {r.end_to_end_msg_per_s:,.0f}"
                        f" msg/s, sent {r.sent_msg_per_s:,.0f} msg/s, received {r.received},"
                        f" lost {r.lost}, dup {r.duplicated}, broker CPU {cpu_text} s, {status}",
                        flush=True,
                    )
    print(
        f"\n{count:,} messages of 256 bytes per run after {warmup:,} warm-up; median of {runs}.\n"
    )
    print(
        "| scenario | path | end-to-end msg/s (median) | runs | producer's msg/s | "
        "broker CPU s | check |"
    )
    print("| --- | --- | ---: | --- | ---: | ---: | --- |")
    for (name, case), results in outcomes.items():
        e2e = [o.result.end_to_end_msg_per_s for o in results]
        sent = [o.result.sent_msg_per_s for o in results]
        cpu = [sum(o.cpu_s) for o in results]
        per_broker = " + ".join(
            f"{statistics.median(o.cpu_s[i] for o in results):.1f}"
            for i in range(len(results[0].cpu_s))
        )
        path = "1 broker" if case == "single" else "A -> bridge -> B"
        check = "ok" if all(o.result.ok for o in results) else "FAIL"
        print(
            f"| {name} | {path} | {statistics.median(e2e):,.0f} | "
            + ", ".join(f"{x:,.0f}" for x in e2e)
            + f" | {statistics.median(sent):,.0f} | {per_broker or statistics.median(cpu)} "
            f"| {check} |"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=20_000)
    parser.add_argument("--warmup", type=int, default=2_000)
    parser.add_argument("--runs", type=int, default=3)
    arguments = parser.parse_args()
    main(arguments.count, arguments.warmup, arguments.runs)
