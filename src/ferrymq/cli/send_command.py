"""``ferrymq send``: send each line of standard input as a message, or ``--count`` made-up ones.

Generated bodies are ``message N`` (N from 1), padded with dots to ``--size`` bytes, so a
consumer can check that every sequence number arrived once. A persistent send waits for the
broker's receipt (ActiveMQ's sync send) unless it is in a ``--transaction-batch``, whose COMMIT
is receipted instead.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import io
import os
import sys
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any, cast

from ferrymq.cli.consume_command import (
    EXIT_USAGE,
    add_connection_arguments,
    positive_int,
    run_client,
)
from ferrymq.cli.progress import Progress, add_progress_argument
from ferrymq.client import Transaction, connect

STDIN_READ_BYTES = 64 * 1024
STDIN_CHUNKS_AHEAD = 8


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "send",
        help="send messages to a queue or topic",
        description="Send standard input, one message per line, or --count generated messages.",
    )
    add_connection_arguments(parser)
    parser.add_argument("destination", help="e.g. /queue/orders or /topic/prices")
    parser.add_argument(
        "-H",
        "--header",
        dest="headers",
        action="append",
        default=[],
        metavar="NAME:VALUE",
        help="a header for every message (repeatable)",
    )
    parser.add_argument(
        "--persistent", action="store_true", help="persistent messages (receipted when stored)"
    )
    parser.add_argument(
        "--count", type=positive_int, help="send N generated messages instead of standard input"
    )
    parser.add_argument(
        "--size", type=positive_int, metavar="BYTES", help="pad generated bodies to this size"
    )
    parser.add_argument(
        "--receipt", action="store_true", help="wait for the broker's receipt of every message"
    )
    parser.add_argument(
        "--transaction-batch",
        type=positive_int,
        metavar="N",
        help="send in transactions of N messages",
    )
    add_progress_argument(parser)
    parser.set_defaults(run=run)


def parse_headers(items: list[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition(":")
        if not sep or not name:
            raise ValueError(f"-H expects NAME:VALUE, got {item!r}")
        headers[name] = value
    return headers


def run(args: argparse.Namespace) -> int:
    try:
        headers = parse_headers(args.headers)
    except ValueError as exc:
        print(f"ferrymq send: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.size is not None and args.count is None:
        print("ferrymq send: --size applies to generated messages (--count)", file=sys.stderr)
        return EXIT_USAGE
    progress = Progress("send", "sent", total=args.count, enabled=args.progress)
    return run_client("send", lambda: _send(args, headers, progress), progress)


async def _send(args: argparse.Namespace, headers: dict[str, str], progress: Progress) -> None:
    bodies = generated(args.count, args.size) if args.count is not None else stdin_lines()
    batch: int | None = args.transaction_batch
    receipt = True if args.receipt else None
    async with connect(args.url, login=args.login, passcode=args.passcode) as conn:
        transaction: Transaction | None = None
        in_transaction = 0
        async for body in bodies:
            if batch is not None and transaction is None:
                transaction = await conn.begin()
            await conn.send(
                args.destination,
                body,
                headers=headers,
                persistent=args.persistent,
                receipt=receipt,
                transaction=transaction,
            )
            progress.tick()
            if transaction is not None:
                in_transaction += 1
                if in_transaction == batch:
                    await transaction.commit()
                    transaction, in_transaction = None, 0
        if transaction is not None:
            await transaction.commit()
    # Leaving ``async with`` sent DISCONNECT and waited for its receipt, which the broker sends
    # only after every frame before it: a SEND it refused without a receipt was answered with an
    # ERROR by then, and ended the connection.
    reason = conn.close_reason
    if reason is not None and reason.error is not None:
        raise reason.error


async def generated(count: int, size: int | None) -> AsyncIterator[bytes]:
    for n in range(1, count + 1):
        body = f"message {n}".encode()
        yield body.ljust(size, b".") if size is not None else body


async def stdin_lines() -> AsyncIterator[bytes]:
    """Lines of standard input without their line ends."""
    rest = b""
    async for chunk in stdin_chunks():
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        for line in lines:
            yield line.removesuffix(b"\r")
    if rest:
        yield rest.removesuffix(b"\r")


async def stdin_chunks() -> AsyncIterator[bytes]:
    """Standard input in chunks, read by a daemon thread a few chunks ahead.

    A blocking read cannot be cancelled, so the thread is a daemon rather than a pool worker:
    at Ctrl-C the command ends at once instead of waiting for the terminal's next line. It reads
    the file descriptor with ``os.read``, not through ``sys.stdin.buffer``, whose lock a daemon
    thread would hold at interpreter shutdown (a fatal error). At EOF it ends by itself.
    """
    loop = asyncio.get_running_loop()
    read = _stdin_reader()
    chunks: asyncio.Queue[bytes | BaseException] = asyncio.Queue()
    room = threading.Semaphore(STDIN_CHUNKS_AHEAD)

    def pump() -> None:
        while True:
            room.acquire()
            try:
                chunk: bytes | BaseException = read(STDIN_READ_BYTES)
            except (OSError, ValueError) as exc:
                chunk = exc
            try:
                loop.call_soon_threadsafe(chunks.put_nowait, chunk)
            except RuntimeError:
                return  # the loop is closed: nobody is reading any more
            if not chunk or isinstance(chunk, BaseException):
                return

    threading.Thread(target=pump, name="ferrymq-send-stdin", daemon=True).start()
    while True:
        chunk = await chunks.get()
        room.release()
        if isinstance(chunk, BaseException):
            raise chunk
        if not chunk:
            return
        yield chunk


def _stdin_reader() -> Callable[[int], bytes]:
    try:
        fd = sys.stdin.fileno()
    except (OSError, ValueError):  # io.UnsupportedOperation: an in-memory stdin
        return cast(io.BufferedIOBase, sys.stdin.buffer).read1
    return functools.partial(os.read, fd)
