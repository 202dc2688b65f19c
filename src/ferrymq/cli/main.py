"""The ``ferrymq`` command: one sub-command per module, each with ``add_parser`` and ``run``."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from types import ModuleType

from ferrymq import __version__
from ferrymq.cli import audit_command, broker_command, stat_command

COMMANDS: list[ModuleType] = [broker_command, stat_command, audit_command]


def _optional_commands() -> list[ModuleType]:
    """Commands built on the client library (send, consume, browse, bench)."""
    found: list[ModuleType] = []
    for name in ("send_command", "consume_command", "browse_command", "bench_command"):
        try:
            module = __import__(f"ferrymq.cli.{name}", fromlist=["run"])
        except ModuleNotFoundError as exc:
            if exc.name != f"ferrymq.cli.{name}":
                raise
            continue
        found.append(module)
    return found


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ferrymq", description="FerryMQ: a fault-tolerant STOMP message broker"
    )
    parser.add_argument("--version", action="version", version=f"ferrymq {__version__}")
    parser.add_argument(
        "--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR (default INFO)"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS + _optional_commands():
        module.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
