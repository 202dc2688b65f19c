"""``ferrymq bench URL``: throughput and latency of any STOMP broker (see ``ferrymq.bench``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ferrymq.bench import (
    DIALECTS,
    NAMES,
    BenchOptionError,
    BenchOptions,
    BenchReport,
    BrokerError,
    Endpoint,
    parse_url,
    render_table,
    run_bench,
    to_json,
)
from ferrymq.bench import plot as bench_plot
from ferrymq.bench.options import protocol_of, tls_query
from ferrymq.cli.admin_client import (
    FORMS,
    AdminAddressError,
    AdminCredentialsError,
    add_credential_options,
    admin_base_url,
    auth_headers,
    credentials_from,
)
from ferrymq.cli.progress import Progress, add_progress_argument


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "bench",
        help="benchmark a STOMP or AMQP 1.0 broker",
        description=(
            "Measure a STOMP broker (FerryMQ, ActiveMQ, RabbitMQ, coilmq, ...), or an AMQP 1.0 "
            "one with an amqp:// URL, with producers and consumers in separate processes; every "
            "message is counted, and any loss or duplicate is reported."
        ),
    )
    parser.add_argument(
        "url", help="tcp://HOST:PORT, stomp://HOST:PORT, HOST:PORT, or amqp://HOST:PORT (AMQP 1.0)"
    )
    parser.add_argument(
        "--scenario",
        action="append",
        choices=NAMES,
        help="run only this scenario (repeatable; default all)",
    )
    parser.add_argument("--count", type=int, default=100_000, help="messages per scenario")
    parser.add_argument("--warmup", type=int, default=10_000, help="warm-up messages")
    parser.add_argument("--duration", type=float, help="send for this many seconds instead")
    parser.add_argument(
        "--max-seconds", type=float, help="cap each throughput scenario's sending time"
    )
    parser.add_argument("--size", type=int, default=256, help="body bytes (default 256)")
    parser.add_argument(
        "--window", type=int, default=1000, help="outstanding receipts, persistent scenario"
    )
    parser.add_argument("--subscribers", type=int, default=4, help="topic subscribers")
    parser.add_argument("--prefetch", type=int, help="consumer prefetch (default: broker's)")
    parser.add_argument("--latency-samples", type=int, default=2000)
    parser.add_argument("--latency-warmup", type=int, default=200)
    parser.add_argument(
        "--latency-rate", type=float, default=500.0, help="msg/s in the latency scenario"
    )
    parser.add_argument(
        "--timeout", type=float, default=30.0, help="give up after this long without progress"
    )
    _add_broker_arguments(parser)
    _add_after_run_arguments(parser)
    parser.set_defaults(run=run)


def _add_broker_arguments(parser: argparse.ArgumentParser) -> None:
    """How to talk to the broker, and how to name and keep the report."""
    parser.add_argument("--login")
    parser.add_argument("--passcode")
    parser.add_argument(
        "--dialect",
        choices=["auto", *DIALECTS],
        default="auto",
        help="destination and header rules (default: from the broker's server header)",
    )
    parser.add_argument("--broker-pid", type=int, help="report this process's CPU time")
    parser.add_argument("--label", help="name of the broker in the report")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--output", help="also write the JSON report to this file")


def _add_after_run_arguments(parser: argparse.ArgumentParser) -> None:
    """What happens around the run: its picture, its leftovers, its progress."""
    parser.add_argument(
        "--plot",
        type=Path,
        metavar="FILE",
        help="draw throughput and the latency distribution into FILE (PNG; needs matplotlib: "
        "pip install 'ferrymq[plot]')",
    )
    parser.add_argument(
        "--compare",
        type=Path,
        action="append",
        default=[],
        metavar="REPORT",
        help="with --plot: also draw this earlier --output report (repeatable)",
    )
    parser.add_argument(
        "--admin",
        help=f"FerryMQ's admin API ({FORMS}), through which the run removes the destinations "
        "it created (default: port 8161 on the broker's host, for a FerryMQ broker)",
    )
    add_credential_options(parser)
    parser.add_argument(
        "--keep-destinations",
        action="store_true",
        help="leave the run's destinations on the broker",
    )
    add_progress_argument(parser)


def options_from_args(args: argparse.Namespace) -> BenchOptions:
    host, port = parse_url(args.url)
    return BenchOptions(
        endpoint=Endpoint(
            host, port, args.login, args.passcode, tls_query(args.url), protocol_of(args.url)
        ),
        scenarios=tuple(args.scenario or NAMES),
        dialect=args.dialect,
        count=args.count,
        warmup=args.warmup,
        duration_s=args.duration,
        max_seconds=args.max_seconds,
        size=args.size,
        window=args.window,
        subscribers=args.subscribers,
        prefetch=args.prefetch,
        latency_samples=args.latency_samples,
        latency_warmup=args.latency_warmup,
        latency_rate=args.latency_rate,
        idle_timeout_s=args.timeout,
        broker_pids=(args.broker_pid,) if args.broker_pid is not None else (),
        label=args.label,
        admin_url=None if args.admin is None else admin_base_url(args.admin),
        admin_headers=tuple(auth_headers(credentials_from(args)).items()),
        cleanup=not args.keep_destinations,
    )


class ScenarioProgress:
    """One ``Progress`` per scenario (messages the slowest consumer has), between the lines
    that start and end each scenario."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.current: Progress | None = None

    def line(self, text: str) -> None:
        self._finish()
        print(f"ferrymq bench: {text}", file=sys.stderr, flush=True)

    def meter(self, scenario: str, received: int, expected: int | None) -> None:
        if self.current is None or self.current.command != f"bench {scenario}":
            self._finish()
            self.current = Progress(
                f"bench {scenario}", "received", total=expected, enabled=self.enabled
            )
        self.current.update(received)

    def _finish(self) -> None:
        if self.current is not None:
            self.current.finish()
            self.current = None


def run(args: argparse.Namespace) -> int:
    if args.compare and args.plot is None:
        print("ferrymq bench: --compare needs --plot FILE", file=sys.stderr)
        return 2
    progress = ScenarioProgress(args.progress)
    earlier: list[BenchReport] = []
    try:
        options = options_from_args(args)
        if args.plot is not None:
            bench_plot.check_available()
            earlier = bench_plot.load_reports(args.compare)
        report = run_bench(options, progress=progress.line, meter=progress.meter)
    except (BenchOptionError, BrokerError, AdminAddressError, AdminCredentialsError) as exc:
        progress.line(str(exc))
        return 2
    except (OSError, ValueError) as exc:  # an unreadable --compare report
        progress.line(f"cannot read a --compare report: {exc}")
        return 2
    if args.plot is not None:
        bench_plot.plot_reports([report, *earlier], args.plot)
        progress.line(f"wrote {args.plot}")
    data = to_json(report)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2)
            out.write("\n")
    if args.json:
        json.dump(data, sys.stdout, indent=2)
        print()
    else:
        sys.stdout.write(render_table(report))
    return 0 if report.ok else 1
