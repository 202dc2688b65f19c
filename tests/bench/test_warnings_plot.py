"""A run too short to measure says so; ``--plot`` draws reports (issue 15, items 7 and 12)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ferrymq.bench.comparison import Run, render_page
from ferrymq.bench.plot import plot_reports
from ferrymq.bench.report import from_json, render_table, to_json
from ferrymq.bench.results import BenchReport
from ferrymq.bench.scenarios import BY_NAME
from ferrymq.bench.summary import summarise
from ferrymq.broker import Broker
from tests.bench.test_report import MACHINE, SECOND, consumer, latency_result, producer

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
RUN_TIMEOUT_S = 120


def queue_result(seconds: float, sent: int = 1100) -> BenchReport:
    report = BenchReport("tcp://127.0.0.1:1", "ferrymq", "FerryMQ/0.1.0", "activemq", "1.2", 256)
    report.scenarios.append(
        summarise(
            BY_NAME["queue"],
            ack="auto",
            producer=producer(sent=sent),
            consumers=[
                consumer(unique=sent, t_last_ns=10 * SECOND + int(seconds * SECOND)),
            ],
            expected=sent - 100,
            errors={},
        )
    )
    return report


def test_a_short_window_is_a_warning_in_the_report() -> None:
    report = queue_result(0.03)
    (result,) = report.scenarios
    assert result.ok  # every message counted: a warning, not a failure
    assert result.warnings == [
        "measured for only 0.03 s (1000 messages): too short for a meaningful rate (at least "
        "1 s and 1000 messages); raise --count (default 100000) or use --duration 10"
    ]
    text = render_table(report)
    assert "WARNINGS (counted right, but too little to measure):" in text
    assert "  queue: measured for only 0.03 s" in text
    assert from_json(json.loads(json.dumps(to_json(report)))) == report


def test_too_few_messages_is_a_warning_however_long() -> None:
    (result,) = queue_result(5.0, sent=600).scenarios
    assert result.warnings
    assert "(500 messages)" in result.warnings[0]


def test_a_long_enough_window_has_no_warning() -> None:
    (result,) = queue_result(2.0).scenarios
    assert result.warnings == []
    assert "WARNINGS" not in render_table(queue_result(2.0))


def test_latency_wants_a_thousand_samples() -> None:
    assert latency_result().warnings == []  # 1000 samples
    few = summarise(
        BY_NAME["latency"],
        ack="auto",
        producer=producer(sent=130, warmup=100),
        consumers=[consumer(unique=130, latencies_ns=tuple(range(1, 31)))],
        expected=30,
        errors={},
    )
    assert few.warnings == [
        "only 30 latency samples: too few for a meaningful p99 (at least 1000); "
        "use --latency-samples 2000 (the default) or more"
    ]


def test_plot_draws_every_report(tmp_path: Path) -> None:
    first = queue_result(2.0)
    first.scenarios.append(latency_result())
    second = queue_result(0.5)
    second.label = "activemq"
    output = tmp_path / "img" / "bench.png"
    plot_reports([first, second], output)
    assert output.read_bytes().startswith(PNG_MAGIC)


def test_plot_without_matplotlib_names_the_extra(tmp_path: Path) -> None:
    # As on an install without the extra: the import machinery finds no matplotlib.
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "from ferrymq.cli.main import main\n"
        f"sys.exit(main(['bench', 'tcp://127.0.0.1:1', '--plot', {str(tmp_path / 'x.png')!r}]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    assert done.stderr == (
        "ferrymq bench: --plot needs matplotlib, which is not installed: "
        "pip install 'ferrymq[plot]'\n"
    )


async def test_bench_plot_against_a_broker(broker: Broker, tmp_path: Path) -> None:
    import asyncio

    url = broker.stomp_urls[0]
    common = ["--count", "300", "--warmup", "10", "--latency-samples", "50", "--timeout", "10"]
    common += ["--latency-warmup", "5", "--latency-rate", "1000", "--no-progress"]
    earlier = tmp_path / "earlier.json"
    picture = tmp_path / "bench.png"

    async def bench(*argv: str) -> str:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "ferrymq.cli.main",
            "bench",
            url,
            "--scenario",
            "queue",
            "--scenario",
            "latency",
            *common,
            *argv,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        _, err = await asyncio.wait_for(process.communicate(), RUN_TIMEOUT_S)
        assert process.returncode == 0, err.decode()
        return err.decode()

    await bench("--output", str(earlier), "--label", "before")
    err = await bench("--plot", str(picture), "--compare", str(earlier), "--label", "after")
    assert picture.read_bytes().startswith(PNG_MAGIC)
    assert f"ferrymq bench: wrote {picture}" in err
    assert "queue: WARNING: measured for only" in err  # 300 messages: too short, said on stderr


def test_the_comparison_page_embeds_the_picture_and_warnings() -> None:
    short = Run("ferrymq", queue_result(0.03))
    page = render_page([short], MACHINE, "", None, "2026-01-01", "img/benchmarks.png")
    assert "![Throughput per scenario and broker; latency distribution](img/benchmarks.png)" in (
        page
    )
    assert "Warnings (too short a run to measure):" in page
    assert "- FerryMQ: measured for only 0.03 s (1000 messages)" in page
    assert "](img/" not in render_page([short], MACHINE, "", None, "2026-01-01")
