"""``ferrymq bench URL``: throughput and latency of any STOMP broker (see ``ferrymq.bench``)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ferrymq.bench import (
    DIALECTS,
    NAMES,
    BenchOptionError,
    BenchOptions,
    BrokerError,
    Endpoint,
    parse_url,
    render_table,
    run_bench,
    to_json,
)


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "bench",
        help="benchmark a STOMP broker",
        description=(
            "Measure a STOMP broker (FerryMQ, ActiveMQ, RabbitMQ, coilmq, ...) with producers "
            "and consumers in separate processes; every message is counted, and any loss or "
            "duplicate is reported."
        ),
    )
    parser.add_argument("url", help="tcp://HOST:PORT, stomp://HOST:PORT or HOST:PORT")
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
    parser.set_defaults(run=run)


def options_from_args(args: argparse.Namespace) -> BenchOptions:
    host, port = parse_url(args.url)
    return BenchOptions(
        endpoint=Endpoint(host, port, args.login, args.passcode),
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
    )


def run(args: argparse.Namespace) -> int:
    try:
        options = options_from_args(args)
        report = run_bench(options, progress=lambda line: print(line, file=sys.stderr))
    except (BenchOptionError, BrokerError) as exc:
        print(f"ferrymq bench: {exc}", file=sys.stderr)
        return 2
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
