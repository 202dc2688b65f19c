"""``ferrymq browse``: print what a queue holds, without consuming it (a queue browser)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ferrymq.cli.consume_command import (
    add_connection_arguments,
    add_format_argument,
    run_client,
    write_message,
)
from ferrymq.cli.progress import Progress, add_progress_argument
from ferrymq.client import UsageError, connect


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "browse",
        help="list the messages on a queue without consuming them",
        description="Print the messages on a queue (a browser:true subscription).",
    )
    add_connection_arguments(parser)
    parser.add_argument("queue", help="e.g. /queue/orders")
    add_format_argument(parser)
    add_progress_argument(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    progress = Progress("browse", "browsed", enabled=args.progress)
    return run_client("browse", lambda: _browse(args, progress), progress)


TOPIC_PREFIXES = ("/topic/", "/temp-topic/", "/remote-temp-topic/")


async def _browse(args: argparse.Namespace, progress: Progress) -> None:
    if str(args.queue).startswith(TOPIC_PREFIXES):
        # A topic keeps no messages to browse (JMS's QueueBrowser is for queues only): an empty
        # listing would look like an empty queue.
        raise UsageError(
            f"{args.queue} is a topic, and only a queue can be browsed "
            "(to see what a topic publishes, use: ferrymq consume)"
        )
    async with connect(args.url, login=args.login, passcode=args.passcode) as conn:
        subscription = await conn.subscribe(args.queue, browser=True)
        async for message in subscription:  # ends at the broker's browser:end
            write_message(message, args.format)
            progress.tick()
        sys.stdout.flush()
