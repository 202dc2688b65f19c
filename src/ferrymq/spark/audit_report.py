"""The human-readable part of a delivery audit: ``summary.md`` (Markdown, also printed).

Built on the driver from small, already aggregated results; the chart is a text histogram, so
the report needs nothing beyond Spark (matplotlib is not a dependency of FerryMQ).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SummaryInput", "render_summary"]

LISTED = 20
"""Messages listed by id per problem section; the Parquet tables hold them all."""
BAR_WIDTH = 40


@dataclass(frozen=True)
class SummaryInput:
    records: int
    brokers: Sequence[str]
    first_us: int | None
    last_us: int | None
    dropped: Mapping[str, int]
    """Broker name -> trace records its writer dropped (a hole in the trace)."""
    counts: Mapping[str, int]
    lost: Sequence[Mapping[str, Any]] = ()
    duplicated: Sequence[Mapping[str, Any]] = ()
    stuck: Sequence[Mapping[str, Any]] = ()
    stuck_total: int = 0
    """Placements stuck (a message is stuck on one broker)."""
    dead_lettered: Sequence[Mapping[str, Any]] = ()
    dead_lettered_total: int = 0
    routes: Sequence[Mapping[str, Any]] = ()
    hops: Sequence[Mapping[str, Any]] = ()
    histogram: Sequence[tuple[str, int]] = field(default_factory=list)


def _time(us: int | None) -> str:
    if us is None:
        return "?"
    from datetime import UTC, datetime

    return datetime.fromtimestamp(us / 1e6, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines.extend("| " + " | ".join(_cell(v) for v in row) + " |" for row in rows)
    return lines


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.1f}"
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return "" if value is None else str(value).replace("|", "\\|")


def _listing(title: str, total: int, header: Sequence[str], rows: list[list[object]]) -> list[str]:
    lines = ["", f"## {title}: {total}"]
    if total:
        lines.append("")
        lines.extend(_table(header, rows[:LISTED]))
        if total > LISTED:
            lines.append(f"\n… and {total - LISTED} more (see the Parquet table).")
    return lines


def _latency(title: str, key: str, rows: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = ["", f"## {title}"]
    if not rows:
        return [*lines, "", "No deliveries to measure."]
    header = [key, "destination", "messages", "p50 ms", "p95 ms", "p99 ms", "max ms"]
    columns = (key, "destination", "messages", "p50_ms", "p95_ms", "p99_ms", "max_ms")
    body = [[row[column] for column in columns] for row in rows]
    return [*lines, "", *_table(header, body)]


def _histogram(buckets: Sequence[tuple[str, int]]) -> list[str]:
    lines = ["", "## End-to-end latency histogram", ""]
    most = max((count for _, count in buckets), default=0)
    if not most:
        return [*lines, "No deliveries to measure."]
    width = max(len(label) for label, _ in buckets)
    lines.append("```text")
    for label, count in buckets:
        bar = "#" * (round(count / most * BAR_WIDTH) if count else 0)
        lines.append(f"{label:>{width}} | {bar} {count}")
    lines.append("```")
    return lines


def render_summary(data: SummaryInput) -> str:
    lines = [
        "# Delivery audit",
        "",
        f"{data.records} trace records from {len(data.brokers)} broker(s) "
        f"({', '.join(data.brokers)}), {_time(data.first_us)} to {_time(data.last_us)} UTC.",
    ]
    holes = {name: n for name, n in data.dropped.items() if n}
    if holes:
        detail = ", ".join(f"{name}: {n}" for name, n in sorted(holes.items()))
        lines += ["", f"**Warning:** the trace has holes (records dropped: {detail})."]
    lines += ["", *_table(["status", "messages"], sorted(data.counts.items()))]
    lines += _listing(
        "Lost",
        data.counts.get("lost", 0),
        ["message", "destination", "origin"],
        [[r["message_id"], r["destination"], r["origin"]] for r in data.lost],
    )
    lines += _listing(
        "Duplicated",
        data.counts.get("duplicated", 0),
        ["message", "destination", "acknowledged by"],
        [[r["message_id"], r["destination"], r["acks"]] for r in data.duplicated],
    )
    lines += _listing(
        "Stuck",
        data.stuck_total,
        ["message", "destination", "broker", "since"],
        [
            [r["message_id"], r["destination"], r["broker_name"], _time(r["arrived_at"])]
            for r in data.stuck
        ],
    )
    lines += _listing(
        "Dead-lettered",
        data.dead_lettered_total,
        ["message", "destination", "broker", "cause", "dead-letter queue"],
        [
            [r["message_id"], r["destination"], r["broker_name"], r["cause"], r["dlq"]]
            for r in data.dead_lettered
        ],
    )
    lines += _latency("End-to-end latency per route", "route", data.routes)
    lines += _latency("Per-hop latency", "hop", data.hops)
    lines += _histogram(data.histogram)
    return "\n".join(lines) + "\n"
