"""A bench report as a table for people and as JSON for scripts (``benchmarks/compare.sh``)."""

from __future__ import annotations

import dataclasses
from typing import Any

from ferrymq.bench.results import BenchReport, ScenarioResult, SubscriberRate
from ferrymq.bench.stats import LatencySummary

COLUMNS = (
    ("scenario", "<"),
    ("messages", ">"),
    ("seconds", ">"),
    ("msg/s", ">"),
    ("measured as", "<"),
    ("sent msg/s", ">"),
    ("received", ">"),
    ("lost", ">"),
    ("dup", ">"),
    ("check", "<"),
)


def _row(result: ScenarioResult) -> tuple[str, ...]:
    if result.skipped is not None:
        return (result.name, "", "", "", "", "", "", "", "", f"skipped: {result.skipped}")
    return (
        result.name,
        str(result.messages),
        f"{result.seconds:.2f}",
        f"{result.msg_per_s:,.0f}",
        result.metric,
        f"{result.sent_msg_per_s:,.0f}",
        str(result.received),
        str(result.lost),
        str(result.duplicated),
        "ok" if result.ok else "FAIL",
    )


def render_table(report: BenchReport) -> str:
    """The human report: one row per scenario, then details, then every problem found."""
    lines = [
        f"ferrymq bench: {report.label} at {report.url} (server {report.server or 'unknown'}, "
        f"dialect {report.dialect}, {report.protocol.upper()} {report.version}, "
        f"{report.size}-byte bodies)",
    ]
    if report.load_average is not None:
        lines.append("load average before the run: " + " ".join(map(str, report.load_average)))
    lines.append("")
    rows = [tuple(name for name, _ in COLUMNS)] + [_row(r) for r in report.scenarios]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    for row in rows:
        cells = [
            cell.ljust(width) if align == "<" else cell.rjust(width)
            for cell, width, (_, align) in zip(row, widths, COLUMNS, strict=True)
        ]
        lines.append("  ".join(cells).rstrip())
    details: list[str] = []
    for result in report.scenarios:
        details.extend(_details(result))
    if details:
        lines += ["", *details]
    problems = [
        f"  {result.name}: {problem}" for result in report.scenarios for problem in result.problems
    ]
    if problems:
        lines += ["", "PROBLEMS (these numbers are not to be trusted):", *problems]
    warnings = [
        f"  {result.name}: {warning}" for result in report.scenarios for warning in result.warnings
    ]
    if warnings:
        lines += ["", "WARNINGS (counted right, but too little to measure):", *warnings]
    if report.cleanup:
        lines += ["", f"destinations: {report.cleanup}"]
    lines += ["", *(f"note: {note}" for note in report.notes)] if report.notes else []
    return "\n".join(lines) + "\n"


def _details(result: ScenarioResult) -> list[str]:
    if result.skipped is not None:
        return []
    out: list[str] = []
    if result.latency is not None:
        out.append(f"{result.name}: {format_latency(result.latency)}")
    if result.subscribers:
        out.append(f"{result.name}: " + ", ".join(_subscriber(s) for s in result.subscribers))
    cpu = [f"producer {result.producer_cpu_s:.2f}", f"consumers {result.consumer_cpu_s:.2f}"]
    if result.broker_cpu_s is not None:
        cpu.insert(0, f"broker {result.broker_cpu_s:.2f}")
    extra = f", ack {result.ack_mode}" if result.ack_mode != "auto" else ""
    if result.reordered:
        extra += f", {result.reordered} out of order"
    out += [f"{result.name}: note: {note}" for note in result.notes]
    out.append(f"{result.name}: CPU s {', '.join(cpu)}{extra}")
    return out


def format_latency(latency: LatencySummary) -> str:
    return (
        f"p50 {latency.p50_ms:.3f} ms, p90 {latency.p90_ms:.3f} ms, "
        f"p99 {latency.p99_ms:.3f} ms, max {latency.max_ms:.3f} ms ({latency.samples} samples)"
    )


def _subscriber(rate: SubscriberRate) -> str:
    return f"#{rate.index} {rate.msg_per_s:,.0f} msg/s"


def to_json(report: BenchReport) -> dict[str, Any]:
    """Everything in the report, plus ``ok`` flags, as JSON-ready data."""
    data = dataclasses.asdict(report)
    data["ok"] = report.ok
    for result, item in zip(report.scenarios, data["scenarios"], strict=True):
        item["ok"] = result.ok
    return data


def from_json(data: dict[str, Any]) -> BenchReport:
    """Read back what ``to_json`` wrote (for the comparison page)."""
    scenarios = []
    for item in data["scenarios"]:
        fields = {f.name for f in dataclasses.fields(ScenarioResult)}
        values = {k: v for k, v in item.items() if k in fields}
        latency = values.get("latency")
        if latency:
            latency["cdf_ms"] = tuple(latency.get("cdf_ms", ()))
        values["latency"] = LatencySummary(**latency) if latency else None
        values["subscribers"] = [SubscriberRate(**s) for s in values.get("subscribers", [])]
        scenarios.append(ScenarioResult(**values))
    fields = {f.name for f in dataclasses.fields(BenchReport)} - {"scenarios"}
    report = BenchReport(**{k: v for k, v in data.items() if k in fields})
    report.scenarios = scenarios
    return report
