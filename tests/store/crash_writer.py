"""Child process of the kill -9 test: store messages, print each one the store confirmed.

``python crash_writer.py <directory> <max_seconds>`` writes ``A <seq>`` once the add of ``seq``
is durable and ``R <seq>`` once its removal is, from several concurrent producers, until killed
(or, as a bound, until ``max_seconds`` pass).
"""

from __future__ import annotations

import asyncio
import itertools
import sys
from pathlib import Path

from ferrymq.store import AddMessage, RemoveMessage, SqliteStore

CONTAINER = "queue://crash"
PRODUCERS = 8
REMOVE_EVERY = 3
"""Every third message is removed again once its add is confirmed."""


async def main(directory: Path, max_seconds: float) -> None:
    store = SqliteStore(directory)
    await store.start()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max_seconds
    counter = itertools.count(1)

    async def produce() -> None:
        while loop.time() < deadline:
            seq = next(counter)
            await store.write([AddMessage(CONTAINER, seq, seq.to_bytes(8, "big") * 128)])
            sys.stdout.write(f"A {seq}\n")
            if seq % REMOVE_EVERY == 0:
                await store.write([RemoveMessage(CONTAINER, seq)])
                sys.stdout.write(f"R {seq}\n")
            sys.stdout.flush()

    async with asyncio.TaskGroup() as group:
        for _ in range(PRODUCERS):
            group.create_task(produce())
    await store.stop()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), float(sys.argv[2])))
