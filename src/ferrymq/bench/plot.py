"""Pictures of bench reports: throughput per scenario per broker, and the latency distribution.

``ferrymq bench --plot FILE`` draws its own run (and any earlier reports given with
``--compare``); ``benchmarks/compare.sh`` draws every broker it measured with
``python -m ferrymq.bench.plot --results DIR --output FILE``. One PNG, two panels: grouped bars
of msg/s (one group per throughput scenario, one bar per broker; a scenario whose numbers are
not to be trusted is hatched), and the cumulative distribution of the latency scenario's
send-to-receive times (one line per broker, log scale: the tail is what differs).

matplotlib is an optional extra (``pip install 'ferrymq[plot]'``); nothing else imports it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ferrymq.bench.options import BenchOptionError
from ferrymq.bench.report import from_json
from ferrymq.bench.results import BenchReport, ScenarioResult
from ferrymq.bench.scenarios import SCENARIOS
from ferrymq.bench.stats import CDF_PERCENTILES

INSTALL_HINT = "pip install 'ferrymq[plot]'"
ORDER = ("ferrymq", "activemq", "coilmq", "rabbitmq")


def check_available() -> None:
    """Raise ``BenchOptionError`` before a run whose ``--plot`` could not be drawn."""
    if importlib.util.find_spec("matplotlib") is None:
        raise BenchOptionError(f"--plot needs matplotlib, which is not installed: {INSTALL_HINT}")


def plot_reports(reports: Sequence[BenchReport], output: Path) -> None:
    """Draw ``reports`` side by side into ``output`` (PNG, or what its suffix says)."""
    check_available()
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed, none opened
    import matplotlib.pyplot as plt

    figure, (bars, cdf) = plt.subplots(1, 2, figsize=(13, 5), layout="constrained")
    _throughput(bars, reports)
    _latency(cdf, reports)
    figure.suptitle(_title(reports))
    output.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(output, dpi=110)
    plt.close(figure)


def _title(reports: Sequence[BenchReport]) -> str:
    sizes = sorted({report.size for report in reports})
    return (
        "ferrymq bench: "
        + ", ".join(r.label for r in reports)
        + (f" ({'/'.join(map(str, sizes))}-byte bodies)" if sizes else "")
    )


def _scenario(report: BenchReport, name: str) -> ScenarioResult | None:
    return next((s for s in report.scenarios if s.name == name and s.skipped is None), None)


def _throughput(axes: Any, reports: Sequence[BenchReport]) -> None:
    names = [
        s.name
        for s in SCENARIOS
        if not s.latency and any(_scenario(r, s.name) is not None for r in reports)
    ]
    width = 0.8 / max(1, len(reports))
    for index, report in enumerate(reports):
        results = [_scenario(report, name) for name in names]
        heights = [r.msg_per_s if r is not None else 0.0 for r in results]
        positions = [n + (index - (len(reports) - 1) / 2) * width for n in range(len(names))]
        drawn = axes.bar(positions, heights, width, label=report.label)
        for patch, result in zip(drawn, results, strict=True):
            if result is not None and (not result.ok or result.warnings):
                patch.set_hatch("//")  # counted wrong, or too short to mean much
    axes.set_xticks(range(len(names)), names)
    axes.yaxis.set_major_formatter(lambda value, _: f"{value:,.0f}")
    axes.set_ylabel("messages per second")
    axes.set_title("Throughput (hatched: a problem or warning in the report)")
    axes.grid(axis="y", alpha=0.3)
    if reports:
        axes.legend()


def _latency(axes: Any, reports: Sequence[BenchReport]) -> None:
    drawn = 0
    for report in reports:
        result = _scenario(report, "latency")
        if result is None or result.latency is None or not result.latency.cdf_ms:
            continue
        lat = result.latency
        axes.plot(
            [lat.min_ms, *lat.cdf_ms],
            [0.0, *CDF_PERCENTILES],
            label=f"{report.label} (p99 {lat.p99_ms:.2f} ms, {lat.samples} samples)",
        )
        drawn += 1
    axes.set_xscale("log")
    axes.set_xlabel("send to receive, ms (log scale)")
    axes.set_ylabel("% of messages at or below")
    axes.set_ylim(0, 100)
    axes.set_title("Latency distribution (the latency scenario)")
    axes.grid(alpha=0.3, which="both")
    if drawn:
        axes.legend(loc="lower right")
    else:
        axes.text(0.5, 0.5, "no latency samples", ha="center", transform=axes.transAxes)


def load_reports(paths: Sequence[Path]) -> list[BenchReport]:
    return [from_json(json.loads(path.read_text(encoding="utf-8"))) for path in paths]


def results_reports(results: Path) -> list[BenchReport]:
    """The ``NAME.json`` reports of a ``compare.sh`` results directory, FerryMQ first."""
    found = {path.stem: path for path in results.glob("*.json")}
    names = [n for n in ORDER if n in found] + sorted(set(found) - set(ORDER))
    return load_reports([found[name] for name in names])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Draw bench reports (see ferrymq.bench.plot).")
    parser.add_argument("--results", type=Path, help="a compare.sh results directory")
    parser.add_argument("reports", nargs="*", type=Path, help="ferrymq bench --output files")
    parser.add_argument("--output", type=Path, required=True, help="the picture to write")
    args = parser.parse_args(argv)
    reports = results_reports(args.results) if args.results else []
    reports += load_reports(args.reports)
    if not reports:
        parser.error("no reports: give --results DIR or report files")
    try:
        plot_reports(reports, args.output)
    except BenchOptionError as exc:
        parser.exit(2, f"{parser.prog}: {exc}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
