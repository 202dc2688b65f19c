"""docs/benchmarks.md from the reports ``benchmarks/compare.sh`` collected.

``python -m ferrymq.bench.comparison --results DIR --output FILE`` reads, for each broker NAME,
``NAME.json`` (a ``ferrymq bench --output`` report), ``NAME.commands`` (how it was started and
measured) and ``NAME.failed`` (why there are no numbers), and writes one page: the machine, the
commands, a table per scenario with every broker side by side and FerryMQ's ratio to ActiveMQ,
how FerryMQ stands against the targets of issue 2, and where it is behind. The explanation of
the gaps is prose a person writes in ``benchmarks/analysis.md``; the page includes it, or says
plainly that it is still to be written.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ferrymq.bench.machine import Machine, describe_machine
from ferrymq.bench.report import from_json
from ferrymq.bench.results import BenchReport, ScenarioResult
from ferrymq.bench.scenarios import SCENARIOS

ORDER = (
    "ferrymq",
    "activemq",
    "coilmq",
    "rabbitmq",
    "ferrymq-tls",
    "activemq-tls",
    "ferrymq-amqp",
    "rabbitmq-amqp",
)
NAMES = {
    "ferrymq": "FerryMQ",
    "ferrymq-amqp": "FerryMQ over AMQP 1.0",
    "rabbitmq-amqp": "RabbitMQ AMQP 1.0 plugin",
    "activemq": "ActiveMQ",
    "coilmq": "coilmq",
    "rabbitmq": "RabbitMQ",
    "ferrymq-tls": "FerryMQ over TLS (ssl://)",
    "activemq-tls": "ActiveMQ over TLS (stomp+ssl://)",
}
THROUGHPUT = ("queue", "topic", "client-individual")


@dataclass
class Run:
    name: str
    report: BenchReport | None = None
    commands: list[str] = field(default_factory=list)
    failure: str | None = None

    @property
    def title(self) -> str:
        return NAMES.get(self.name, self.name)

    def scenario(self, name: str) -> ScenarioResult | None:
        if self.report is None:
            return None
        return next((s for s in self.report.scenarios if s.name == name), None)


def load_runs(results: Path) -> list[Run]:
    names = {p.stem for p in results.iterdir() if p.suffix in (".json", ".failed", ".commands")}
    ordered = [n for n in ORDER if n in names] + sorted(names - set(ORDER))
    runs = []
    for name in ordered:
        run = Run(name)
        report = results / f"{name}.json"
        if report.exists():
            run.report = from_json(json.loads(report.read_text(encoding="utf-8")))
        commands = results / f"{name}.commands"
        if commands.exists():
            run.commands = [c for c in commands.read_text(encoding="utf-8").splitlines() if c]
        failed = results / f"{name}.failed"
        if failed.exists():
            run.failure = failed.read_text(encoding="utf-8").strip()
        runs.append(run)
    return runs


def render_page(
    runs: Sequence[Run],
    machine: Machine,
    bench_args: str,
    analysis: str | None,
    date: str,
    picture: str | None = None,
) -> str:
    """The page; ``picture`` is the path, relative to the page, of ``ferrymq.bench.plot``'s
    drawing of the same reports."""
    out = [
        "# Benchmarks",
        "",
        f"FerryMQ beside ActiveMQ, coilmq and RabbitMQ on one machine, measured on {date} by "
        "`benchmarks/compare.sh` (one broker at a time, alone on the machine, each driven by the "
        "same `ferrymq bench` run). This page is generated; rerun the script to refresh it. "
        "What the scenarios do and how they count is in `benchmarks/README.md`.",
        "",
        "## Machine",
        "",
        "| | |",
        "| --- | --- |",
        *(f"| {name} | {value} |" for name, value in machine.rows()),
        "| brokers | " + ", ".join(_version(run) for run in runs) + " |",
        "",
        *_commands(runs, bench_args),
    ]
    failures = [run for run in runs if run.failure or run.report is None]
    if failures:
        out += ["## Not measured", ""]
        out += [f"- {run.title}: {run.failure or 'no report'}" for run in failures]
        out.append("")
    out += ["## Results", "", *_picture(picture)]
    for scenario in SCENARIOS:
        out += _scenario_section(scenario.name, scenario.description, runs)
    out += _targets(runs)
    out += _amqp_section(runs)
    out += ["## Where FerryMQ is behind, and why", ""]
    behind = _behind(runs)
    out += [f"- {line}" for line in behind] or ["- Nowhere in this run."]
    out.append("")
    if analysis:
        out += [analysis.strip(), ""]
    else:
        out += [
            "**TODO (lead):** explain the gaps above (no `benchmarks/analysis.md` yet).",
            "",
        ]
    return "\n".join(out)


def _commands(runs: Sequence[Run], bench_args: str) -> list[str]:
    out = [
        "## Commands",
        "",
        "```sh",
        "benchmarks/compare.sh" + (f'   # BENCH_ARGS="{bench_args}"' if bench_args else ""),
    ]
    for run in runs:
        out += [f"# {run.title}", *run.commands]
        if run.report is not None and run.report.load_average is not None:
            load = " ".join(map(str, run.report.load_average))
            out.append(f"#   (load average 1/5/15 min before it: {load})")
    return [*out, "```", ""]


def _picture(picture: str | None) -> list[str]:
    if not picture:
        return []
    return [
        f"![Throughput per scenario and broker; latency distribution]({picture})",
        "",
        "Left: msg/s per scenario (hatched: the report found a problem or the run was too "
        "short to measure). Right: the latency scenario's send-to-receive times, as the "
        "share of messages at or below each latency (log scale).",
        "",
    ]


def _version(run: Run) -> str:
    if run.report is not None and run.report.server:
        return run.report.server
    return f"{run.title} (not measured)"


def _scenario_section(name: str, description: str, runs: Sequence[Run]) -> list[str]:
    measured = [(run, run.scenario(name)) for run in runs]
    rows = [(run, result) for run, result in measured if result is not None]
    if not rows:
        return []
    out = [f"### {name}", "", description + ".", ""]
    if name == "latency":
        out += [
            "| broker | p50 ms | p90 ms | p99 ms | max ms | samples | check |",
            "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
        ]
        for run, result in rows:
            lat = result.latency
            if lat is None:
                out.append(f"| {run.title} | | | | | | {_check(result)} |")
                continue
            out.append(
                f"| {run.title} | {lat.p50_ms:.3f} | {lat.p90_ms:.3f} | {lat.p99_ms:.3f} | "
                f"{lat.max_ms:.3f} | {lat.samples} | {_check(result)} |"
            )
    else:
        metric = rows[0][1].metric
        out += [
            f"| broker | msg/s ({metric}) | seconds | sent msg/s | received | lost | dup "
            "| broker CPU s | check |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
        ]
        for run, result in rows:
            cpu = "" if result.broker_cpu_s is None else f"{result.broker_cpu_s:.1f}"
            out.append(
                f"| {run.title} | {result.msg_per_s:,.0f} | {result.seconds:.2f} | "
                f"{result.sent_msg_per_s:,.0f} | {result.received} | {result.lost} | "
                f"{result.duplicated} | {cpu} | {_check(result)} |"
            )
    ratio = _ratio(runs, name)
    if ratio is not None:
        out += ["", f"FerryMQ / ActiveMQ: **{ratio:.2f}**" + _ratio_meaning(name)]
    problems = [f"- {run.title}: {problem}" for run, result in rows for problem in result.problems]
    if problems:
        out += ["", "Problems found (those numbers are not to be trusted):", "", *problems]
    warnings = [f"- {run.title}: {text}" for run, result in rows for text in result.warnings]
    if warnings:
        out += ["", "Warnings (too short a run to measure):", "", *warnings]
    notes = [f"- {run.title}: {note}" for run, result in rows for note in result.notes]
    if notes:
        out += ["", *notes]
    return [*out, ""]


def _check(result: ScenarioResult) -> str:
    if result.skipped is not None:
        return f"skipped: {result.skipped}"
    return "ok" if result.ok else "**FAIL**"


def _ratio_meaning(name: str) -> str:
    if name == "latency":
        return " (p99; below 1 is better)"
    return " (above 1 is better)"


def _value(result: ScenarioResult | None) -> float | None:
    """The number compared across brokers; None when it cannot be trusted."""
    if result is None or not result.ok:
        return None
    if result.latency is not None:
        return result.latency.p99_ms
    return result.msg_per_s if result.msg_per_s > 0 else None


def _ratio(runs: Sequence[Run], name: str) -> float | None:
    by_name = {run.name: _value(run.scenario(name)) for run in runs}
    ours, theirs = by_name.get("ferrymq"), by_name.get("activemq")
    if ours is None or not theirs:
        return None
    return ours / theirs


def _targets(runs: Sequence[Run]) -> list[str]:
    out = [
        "## Against the targets of issue 2",
        "",
        "| scenario | target | FerryMQ | met |",
        "| --- | --- | ---: | --- |",
    ]
    for name, target, value, met in _target_rows(runs):
        shown = "" if value is None else _fmt(name, value)
        out.append(f"| {name} | {target} | {shown} | {met} |")
    return [*out, ""]


def _stomp(runs: Sequence[Run]) -> list[Run]:
    """The STOMP runs: issue 2's targets compare STOMP brokers."""
    return [run for run in runs if run.report is None or run.report.protocol != "amqp"]


def _target_rows(runs: Sequence[Run]) -> list[tuple[str, str, float | None, str]]:
    runs = _stomp(runs)
    rows = []
    for scenario in SCENARIOS:
        name = scenario.name
        values = {run.name: _value(run.scenario(name)) for run in runs}
        ours = values.pop("ferrymq", None)
        amq, coil = values.get("activemq"), values.get("coilmq")
        if name == "latency":
            others = [v for v in values.values() if v is not None]
            target = "p99 no worse than the best of the others"
            met = _verdict(ours, others and ours is not None and ours <= min(others))
        elif name == "queue-persistent":
            target = "ahead of ActiveMQ and coilmq"
            met = _verdict(ours, _ahead(ours, [amq, coil], 1.0))
        else:
            target = "at least 2x ActiveMQ, ahead of coilmq"
            met = _verdict(ours, _ahead(ours, [amq], 2.0) and _ahead(ours, [coil], 1.0))
        rows.append((name, target, ours, met))
    return rows


def _ahead(ours: float | None, others: Sequence[float | None], factor: float) -> bool:
    return ours is not None and all(o is None or ours >= factor * o for o in others)


def _verdict(ours: float | None, met: object) -> str:
    if ours is None:
        return "not measured"
    return "yes" if met else "**no**"


def _fmt(name: str, value: float) -> str:
    return f"{value:.3f} ms p99" if name == "latency" else f"{value:,.0f} msg/s"


def _behind(runs: Sequence[Run]) -> list[str]:
    runs = _stomp(runs)
    lines = []
    for name, target, ours, met in _target_rows(runs):
        if met == "yes":
            continue
        if ours is None:
            lines.append(f"{name}: FerryMQ has no trustworthy number in this run.")
            continue
        others = [
            f"{run.title} {_fmt(name, value)}"
            for run in runs
            if run.name != "ferrymq" and (value := _value(run.scenario(name))) is not None
        ]
        lines.append(f"{name}: FerryMQ {_fmt(name, ours)}; {', '.join(others)} (target: {target}).")
    return lines


AMQP_COLUMNS = (
    ("FerryMQ STOMP", "ferrymq"),
    ("FerryMQ AMQP", "ferrymq-amqp"),
    ("RabbitMQ AMQP 1.0", "rabbitmq-amqp"),
    ("ActiveMQ STOMP", "activemq"),
)


def _amqp_section(runs: Sequence[Run]) -> list[str]:
    """FerryMQ over AMQP 1.0 beside its own STOMP and RabbitMQ's AMQP 1.0 plugin (issue 17's
    targets: AMQP at least FerryMQ's STOMP, and ahead of RabbitMQ's AMQP 1.0 everywhere)."""
    by_name = {run.name: run for run in runs}
    if "ferrymq-amqp" not in by_name:
        return []
    out = [
        "## AMQP 1.0 beside STOMP (issue 17)",
        "",
        "| scenario | " + " | ".join(title for title, _ in AMQP_COLUMNS) + " | AMQP / STOMP "
        "| AMQP / RabbitMQ AMQP | targets met |",
        "| --- |" + " ---: |" * (len(AMQP_COLUMNS) + 2) + " --- |",
    ]
    for scenario in SCENARIOS:
        name = scenario.name
        values = {
            key: _value(by_name[key].scenario(name)) if key in by_name else None
            for _, key in AMQP_COLUMNS
        }
        cells = ["" if v is None else _fmt(name, v) for v in values.values()]
        ours = values["ferrymq-amqp"]
        ratios = [_ratio_of(name, ours, values[key]) for key in ("ferrymq", "rabbitmq-amqp")]
        met = _verdict(ours, all(r is not None and r >= 1.0 for r in ratios))
        shown = ["" if r is None else f"{r:.2f}" for r in ratios]
        out.append(f"| {name} | " + " | ".join([*cells, *shown, met]) + " |")
    return [*out, "", "Ratios are oriented so that above 1 is better for FerryMQ over AMQP.", ""]


def _ratio_of(name: str, ours: float | None, theirs: float | None) -> float | None:
    if ours is None or not theirs:
        return None
    return theirs / ours if name == "latency" else ours / theirs


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--results", type=Path, required=True)
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--bench-args", default="")
    parser.add_argument("--analysis", type=Path, help="hand-written explanation to include")
    parser.add_argument("--picture", help="the plot to embed, relative to the page")
    args = parser.parse_args(argv)
    analysis = None
    if args.analysis is not None and args.analysis.exists():
        analysis = args.analysis.read_text(encoding="utf-8")
    page = render_page(
        load_runs(args.results),
        describe_machine(),
        args.bench_args,
        analysis,
        time.strftime("%Y-%m-%d"),
        args.picture,
    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(page, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
