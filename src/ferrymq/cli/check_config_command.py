"""``ferrymq check-config FILE``: every problem of an activemq.xml file at once.

The broker stops at a file's first error, which makes fixing a file one restart per mistake.
This command reads the whole file, lists each error (the broker would not start) and each
setting the broker would ignore or not do yet, every line starting with `file:line`, and exits
1 when there is an error, 0 otherwise.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ferrymq.cli.properties import add_properties_option
from ferrymq.config.activemq_xml import CheckResult, check_config


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "check-config",
        help="list every error and ignored setting of an activemq.xml or broker.xml file",
        description=(
            "Read an activemq.xml file as `ferrymq broker --config` would and list every "
            "problem at once: errors (the broker would not start) and settings it ignores. "
            "Exit code 1 when there is an error, 0 otherwise."
        ),
    )
    parser.add_argument("file", type=Path, metavar="FILE", help="the activemq.xml to check")
    add_properties_option(parser, "a ${NAME} placeholder value, as for `ferrymq broker`")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    properties = dict(args.properties)
    result = check_config(args.file, properties)
    print(report(args.file, result))
    return 1 if result.errors else 0


def report(path: Path, result: CheckResult) -> str:
    """Errors, then ignored settings, then a summary line."""
    lines: list[str] = []
    if result.errors:
        lines.append("errors (the broker will not start):")
        lines.extend(f"  {error}" for error in result.errors)
    if result.warnings:
        lines.append("ignored or not yet supported (the broker starts and says so):")
        lines.extend(f"  {warning}" for warning in result.warnings)
    errors, warnings = len(result.errors), len(result.warnings)
    verdict = "will not start" if errors else "loads"
    lines.append(
        f"{path}: {verdict}: {errors} error{'s' * (errors != 1)}, "
        f"{warnings} ignored setting{'s' * (warnings != 1)}"
    )
    return "\n".join(lines)
