"""``ferrymq stat``: a running broker's destinations, read from its admin API."""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from typing import Any


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "stat",
        help="show destinations of a running broker",
        description="Show a running broker's destinations (read from its admin HTTP API).",
    )
    parser.add_argument(
        "--admin",
        default="http://127.0.0.1:8161",
        help="the broker's admin URL (default http://127.0.0.1:8161)",
    )
    parser.add_argument("--type", choices=["queue", "topic", "temp-queue", "temp-topic"])
    parser.add_argument("--format", choices=["table", "json"], default="table")
    parser.set_defaults(run=run)


def fetch(admin: str, path: str) -> Any:
    url = admin.rstrip("/") + path
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


def run(args: argparse.Namespace) -> int:
    query = f"?type={args.type}" if args.type else ""
    try:
        data = fetch(args.admin, "/api/v1/destinations" + query)
    except (urllib.error.URLError, OSError) as exc:
        print(f"ferrymq stat: cannot reach the admin API at {args.admin}: {exc}", file=sys.stderr)
        return 1
    rows = data["destinations"]
    if args.format == "json":
        json.dump(rows, sys.stdout, indent=2)
        print()
        return 0
    header = ("TYPE", "NAME", "DEPTH", "ENQUEUED", "DEQUEUED", "CONSUMERS")
    table = [header] + [
        (
            r["type"],
            r["name"],
            str(r["depth"]),
            str(r["enqueued"]),
            str(r["dequeued"]),
            str(r["consumers"]),
        )
        for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
    return 0
