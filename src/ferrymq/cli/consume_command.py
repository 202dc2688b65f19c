"""``ferrymq consume``: print messages from a destination, acknowledging each once printed.

Stops after ``--count`` messages or ``--idle-timeout`` seconds without one (else at Ctrl-C).
``--format jsonl`` prints one JSON object per message, so scripts can count and check them.
This module also holds what ``send`` and ``browse`` share: running a client coroutine with the
command's exit codes (0 ok, 1 connection or broker error, 2 usage, 130 interrupted), progress
lines, and the message formats.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import sys
import time
from collections.abc import Callable, Coroutine
from typing import Any, BinaryIO

from ferrymq.client import (
    BrokerURLError,
    ClientError,
    Message,
    UsageError,
    connect,
)

PROGRESS_INTERVAL_S = 2.0
"""A long run reports on stderr this often."""
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
ACK_MODES = ("auto", "client", "client-individual")


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "consume",
        help="print messages from a queue or topic",
        description="Consume messages and print them, acknowledging each once printed.",
    )
    add_connection_arguments(parser)
    parser.add_argument("destination", help="e.g. /queue/orders or /topic/prices")
    parser.add_argument("--count", type=positive_int, help="stop after N messages")
    parser.add_argument(
        "--idle-timeout",
        type=float,
        metavar="SECONDS",
        help="stop when no message came for this long",
    )
    parser.add_argument("--selector", help="a JMS selector, e.g. \"color = 'red'\"")
    parser.add_argument(
        "--ack",
        choices=ACK_MODES,
        default="client-individual",
        help="acknowledgement mode (default client-individual: nothing unprinted is lost)",
    )
    parser.add_argument(
        "--prefetch", type=positive_int, help="activemq.prefetchSize (default: the broker's)"
    )
    parser.add_argument("--durable", metavar="NAME", help="a durable topic subscription name")
    parser.add_argument("--client-id", help="the connection's client id (needed by --durable)")
    add_format_argument(parser)
    parser.set_defaults(run=run)


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "url",
        help="the broker, e.g. tcp://127.0.0.1:61613, or several: "
        "failover:(tcp://a:61613,tcp://b:61613)?randomize=false",
    )
    parser.add_argument("--login", help="user name for CONNECT")
    parser.add_argument("--passcode", help="password for CONNECT")


def add_format_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=("text", "jsonl"),
        default="text",
        help="text: the body, one line each; jsonl: one JSON object per message",
    )


def positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {value}")
    return value


def run(args: argparse.Namespace) -> int:
    if args.durable is not None and args.client_id is None:
        print("ferrymq consume: --durable needs --client-id", file=sys.stderr)
        return EXIT_USAGE
    progress = Progress("consume", "received")
    return run_client("consume", lambda: _consume(args, progress), progress)


async def _consume(args: argparse.Namespace, progress: Progress) -> None:
    prefetch = args.prefetch
    if prefetch is None and args.count is not None and args.ack != "auto":
        prefetch = min(args.count, 1000)  # so the rest is not held back, then redelivered
    out = sys.stdout
    async with connect(
        args.url, login=args.login, passcode=args.passcode, client_id=args.client_id
    ) as conn:
        subscription = await conn.subscribe(
            args.destination,
            selector=args.selector,
            ack=args.ack,
            prefetch=prefetch,
            durable_name=args.durable,
        )
        while args.count is None or progress.count < args.count:
            try:
                message = await subscription.get(timeout=args.idle_timeout)
            except TimeoutError:
                break
            write_message(message, args.format)
            if args.ack != "auto":
                out.flush()  # printed before acknowledged
                await message.ack()
            progress.tick()
        out.flush()
        await subscription.unsubscribe()


# ---- shared by send, consume and browse ----


class Progress:
    """Counts, reports on stderr every PROGRESS_INTERVAL_S, and sums up at the end."""

    def __init__(self, command: str, verb: str) -> None:
        self.command = command
        self.verb = verb
        self.count = 0
        self.started = time.monotonic()
        self._next_report = self.started + PROGRESS_INTERVAL_S

    def tick(self, n: int = 1) -> None:
        self.count += n
        now = time.monotonic()
        if now >= self._next_report:
            self._next_report = now + PROGRESS_INTERVAL_S
            rate = self.count / (now - self.started)
            print(
                f"ferrymq {self.command}: {self.count} {self.verb} ({rate:.0f} msg/s)",
                file=sys.stderr,
                flush=True,
            )

    def summary(self) -> str:
        seconds = time.monotonic() - self.started
        rate = self.count / seconds if seconds > 0 else 0.0
        return (
            f"ferrymq {self.command}: {self.verb} {self.count} messages in {seconds:.2f} s "
            f"({rate:.0f} msg/s)"
        )


def run_client(
    command: str,
    main: Callable[[], Coroutine[Any, Any, None]],
    progress: Progress | None = None,
) -> int:
    """Run ``main`` on a fresh event loop; map what it raises to an exit code and a message."""
    code = EXIT_OK
    try:
        _run_loop(main())
    except (BrokerURLError, UsageError) as exc:
        print(f"ferrymq {command}: {exc}", file=sys.stderr)
        code = EXIT_USAGE
    except (ClientError, OSError) as exc:
        print(f"ferrymq {command}: {exc}", file=sys.stderr)
        code = EXIT_FAILED
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
    if progress is not None:
        print(progress.summary(), file=sys.stderr, flush=True)
    return code


def _run_loop(coroutine: Coroutine[Any, Any, None]) -> None:
    try:
        import uvloop
    except ImportError:
        asyncio.run(coroutine)
    else:
        uvloop.run(coroutine)


def message_record(message: Message) -> dict[str, object]:
    """A message as JSON data: the body as text, or base64 (flagged) when not UTF-8."""
    try:
        body, encoded = message.body.decode("utf-8"), False
    except UnicodeDecodeError:
        body, encoded = base64.b64encode(message.body).decode("ascii"), True
    return {
        "id": message.message_id,
        "destination": message.destination,
        "redelivered": message.redelivered,
        "headers": message.headers,
        "body": body,
        "base64": encoded,
    }


def write_message(message: Message, format: str) -> None:
    if format == "jsonl":
        sys.stdout.write(json.dumps(message_record(message), ensure_ascii=False) + "\n")
        return
    raw: BinaryIO | None = getattr(sys.stdout, "buffer", None)
    if raw is None:
        sys.stdout.write(message.body.decode("utf-8", "replace") + "\n")
    else:
        sys.stdout.flush()
        raw.write(message.body + b"\n")
