"""``ferrymq consume``: print messages from a destination, acknowledging each once printed.

Stops after ``--count`` messages or ``--idle-timeout`` seconds without one (else at Ctrl-C).
``--format jsonl`` prints one JSON object per message, so scripts can count and check them.
This module also holds what ``send`` and ``browse`` share: running a client coroutine with the
command's exit codes (0 ok, 1 connection or broker error, 2 usage, 130 interrupted, 141 when
the reader of stdout went away), and the message formats.

A line printed to a pipe counts as printed only once the next process has read it: ``consume``
waits for that before it acknowledges, so ``ferrymq consume ... | head -1`` takes one message
and leaves the rest on the queue instead of acknowledging lines nobody will ever read.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import sys
from collections.abc import Callable, Coroutine
from typing import Any, BinaryIO

from ferrymq.cli.pipes import EXIT_BROKEN_PIPE, read_by_reader, silence_stdout
from ferrymq.cli.progress import Progress, add_progress_argument
from ferrymq.client import (
    BrokerURLError,
    ClientError,
    Message,
    UsageError,
    connect,
)

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
    add_progress_argument(parser)
    parser.set_defaults(run=run)


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "url",
        help="the broker, e.g. tcp://127.0.0.1:61613 (STOMP) or amqp://127.0.0.1:5672 "
        "(AMQP 1.0; amqps:// over TLS), or several: "
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
    progress = Progress("consume", "received", total=args.count, enabled=args.progress)
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
                await read_by_reader(out)  # printed, and read, before acknowledged
                await message.ack()
            progress.tick()
        out.flush()
        await subscription.unsubscribe()


# ---- shared by send, consume and browse ----


def run_client(
    command: str,
    main: Callable[[], Coroutine[Any, Any, None]],
    progress: Progress | None = None,
) -> int:
    """Run ``main`` on a fresh event loop; map what it raises to an exit code and a message."""
    code = EXIT_OK
    try:
        _run_loop(main())
    except BrokenPipeError:
        silence_stdout()
        code = EXIT_BROKEN_PIPE
    except (BrokerURLError, UsageError) as exc:
        print(f"ferrymq {command}: {exc}", file=sys.stderr)
        code = EXIT_USAGE
    except (ClientError, OSError) as exc:
        print(f"ferrymq {command}: {exc}", file=sys.stderr)
        code = EXIT_FAILED
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
    if progress is not None:
        progress.finish()
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
