"""Store throughput: concurrent producers storing persistent messages, each awaiting its "receipt".

``python -m ferrymq.store.benchmark [directory]`` prints, for SQLite with ``synchronous`` FULL and
NORMAL, how many messages per second were made durable, how many commits (fsyncs) that took, and
the raw fsync latency of the disk under ``directory``.  ``ferrymq bench`` can call
``run_store_benchmark`` with any ``MessageStore``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ferrymq.store.base import AddMessage, MessageStore, RemoveMessage
from ferrymq.store.sqlite import SqliteStore


@dataclass(frozen=True, slots=True)
class StoreBenchmarkResult:
    messages: int
    seconds: float
    commits: int
    mean_commit_ms: float

    @property
    def messages_per_s(self) -> float:
        return self.messages / self.seconds

    @property
    def messages_per_commit(self) -> float:
        return self.messages / max(1, self.commits)


async def run_store_benchmark(
    store: MessageStore,
    *,
    messages: int = 20_000,
    producers: int = 50,
    body_bytes: int = 1024,
    ack: bool = False,
) -> StoreBenchmarkResult:
    """``producers`` tasks each store one message per write and await it, like a receipted SEND.

    With ``ack`` each producer also removes its message once stored, as a consumer's ack would.
    """
    body = os.urandom(body_bytes)
    seqs = iter(range(1, messages + 1))
    before = store.statistics()

    async def produce(producer: int) -> None:
        for seq in seqs:
            pid = f"ID:bench-{producer}:{seq}"
            await store.write([AddMessage("queue://bench", seq, body, producer_message_id=pid)])
            if ack:
                await store.write([RemoveMessage("queue://bench", seq)])

    started = time.perf_counter()
    async with asyncio.TaskGroup() as group:
        for producer in range(producers):
            group.create_task(produce(producer))
    seconds = time.perf_counter() - started
    after = store.statistics()
    commits = after.commits - before.commits
    commit_ms = after.total_commit_ms - before.total_commit_ms
    return StoreBenchmarkResult(messages, seconds, commits, commit_ms / max(1, commits))


def measure_fsync_ms(directory: Path, samples: int = 200, block_bytes: int = 4096) -> float:
    """Median time of appending one block to a file and fsyncing it."""
    path = directory / "fsync-probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    timings = []
    try:
        for _ in range(samples):
            os.write(fd, bytes(block_bytes))
            started = time.perf_counter()
            os.fsync(fd)
            timings.append((time.perf_counter() - started) * 1000.0)
    finally:
        os.close(fd)
        path.unlink()
    return sorted(timings)[len(timings) // 2]


async def _main(base: Path) -> None:
    print(f"fsync of a 4 KiB append under {base}: median {measure_fsync_ms(base):.3f} ms")
    for synchronous in ("FULL", "NORMAL"):
        for ack in (False, True):
            with tempfile.TemporaryDirectory(dir=base) as directory:
                store = SqliteStore(Path(directory), synchronous=synchronous)
                await store.start()
                result = await run_store_benchmark(store, ack=ack)
                await store.stop()
            label = "send+ack" if ack else "send"
            print(
                f"synchronous={synchronous:<6} {label:<8} {result.messages_per_s:8.0f} msg/s  "
                f"{result.commits:5d} commits  {result.messages_per_commit:5.1f} msg/commit  "
                f"mean commit {result.mean_commit_ms:.3f} ms"
            )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ferrymq.store.benchmark",
        description="SQLite store throughput (synchronous FULL and NORMAL) and disk fsync latency.",
    )
    parser.add_argument(
        "directory",
        nargs="?",
        type=Path,
        default=Path(tempfile.gettempdir()),
        help="where the throwaway stores are made (default: the temporary directory)",
    )
    directory: Path = parser.parse_args(argv).directory
    if not directory.is_dir():
        parser.error(f"{directory} is not a directory")
    asyncio.run(_main(directory))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
