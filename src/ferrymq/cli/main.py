"""The ``ferrymq`` command: one sub-command per module, each with ``add_parser`` and ``run``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from types import ModuleType

from ferrymq import __version__
from ferrymq.cli import (
    admin_commands,
    audit_command,
    broker_command,
    check_config_command,
    hash_password_command,
    health_command,
    stat_command,
)
from ferrymq.cli.logging_setup import LoggingSetupError, add_logging_options, configure_logging
from ferrymq.cli.pipes import EXIT_BROKEN_PIPE, silence_stdout

COMMANDS: list[ModuleType] = [
    broker_command,
    check_config_command,
    stat_command,
    health_command,
    admin_commands,  # purge, delete, move, retry, connections, broker-connections
    audit_command,
    hash_password_command,
]


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
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS + _optional_commands():
        module.add_parser(commands)
    add_logging_options(parser, dict.fromkeys(commands.choices.values()))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        configure_logging(args)
    except LoggingSetupError as exc:
        print(f"ferrymq: --log-config {exc}", file=sys.stderr)
        return 2
    try:
        code: int = args.run(args)
        sys.stdout.flush()  # here, not at exit, so that a closed pipe is caught below
    except BrokenPipeError:
        # The reader of stdout left (`ferrymq stat | head -1`): end quietly, as SIGPIPE would.
        silence_stdout()
        return EXIT_BROKEN_PIPE
    return code


if __name__ == "__main__":
    sys.exit(main())
