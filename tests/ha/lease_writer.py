"""Child process of the split-brain test: take the lease, then write until a write fails.

``python lease_writer.py <url> <holder> <container> <lease_ms> <keep_alive_ms> <count>``
prints ``master <epoch>`` once it holds the lease, ``recovered <container> <last_seq>`` for each
container its store found, ``W <seq>`` once the add of ``seq`` is durable, ``K lost`` if its
keep-alive finds the lease gone (it keeps writing anyway: the fence, not the keep-alive, is what
is tested), ``F <error class> <message>`` when a write fails (then it exits 3), and ``done`` after
``count`` writes (0: write until a failure).
"""

from __future__ import annotations

import asyncio
import itertools
import sys

from ferrymq.ha.lease import LeaseDatabaseLocker
from ferrymq.store import AddMessage, StoreError
from ferrymq.store.postgres import PostgresStore


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def keep_alive(locker: LeaseDatabaseLocker) -> None:
    while True:
        await asyncio.sleep(locker.keep_alive_period_ms / 1000)
        if not await locker.keep_alive():
            say("K lost")
            return


async def main(
    url: str, holder: str, container: str, lease_ms: int, keep_ms: int, count: int
) -> int:
    locker = LeaseDatabaseLocker(
        url,
        lease_holder_id=holder,
        lock_acquire_sleep_interval_ms=lease_ms,
        lock_keep_alive_period_ms=keep_ms,
    )
    await locker.acquire()
    say(f"master {locker.fence().epoch}")
    store = PostgresStore(url, fence=locker.fence())
    recovery = await store.start()
    for state in recovery.containers.values():
        say(f"recovered {state.container} {state.last_seq}")
    renewing = asyncio.create_task(keep_alive(locker))
    try:
        for seq in (
            itertools.count(recovery.last_seq + 1)
            if count == 0
            else range(recovery.last_seq + 1, recovery.last_seq + 1 + count)
        ):
            try:
                await store.write([AddMessage(container, seq, holder.encode())])
            except StoreError as e:
                say(f"F {type(e).__name__} {e}")
                return 3
            say(f"W {seq}")
        say("done")
        return 0
    finally:
        renewing.cancel()
        await store.stop()
        await locker.release()


if __name__ == "__main__":
    url, holder, container, lease, keep, count = sys.argv[1:]
    sys.exit(asyncio.run(main(url, holder, container, int(lease), int(keep), int(count))))
