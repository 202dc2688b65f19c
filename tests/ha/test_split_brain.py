"""Split brain with real processes: a master SIGSTOPped past its lease, a slave takes over, the
old master is SIGCONTed.  Its next write must fail, and nothing it writes lands after the takeover
(issue 4 "How it is checked" 3, at the store level; the broker-level test builds on this).
"""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

from tests.postgres import PostgresDatabase

WRITER = Path(__file__).with_name("lease_writer.py")
LEASE_MS = 400
KEEP_ALIVE_MS = 100
WRITES_BEFORE_PAUSE = 20
TAKEOVER_WRITES = 50
WAIT_S = 20.0


class Writer:
    """A ``lease_writer.py`` child and every line it printed."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[str] = []

    @classmethod
    async def start(cls, url: str, holder: str, container: str, count: int) -> Writer:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(WRITER),
            url,
            holder,
            container,
            str(LEASE_MS),
            str(KEEP_ALIVE_MS),
            str(count),
            stdout=asyncio.subprocess.PIPE,
        )
        return cls(process)

    async def read_until(self, prefix: str, times: int = 1) -> str:
        """Read lines until ``times`` of them started with ``prefix``; return the last one."""
        assert self.process.stdout is not None
        seen = sum(line.startswith(prefix) for line in self.lines)
        async with asyncio.timeout(WAIT_S):
            while seen < times:
                raw = await self.process.stdout.readline()
                assert raw, f"writer exited ({await self.process.wait()}) after {self.lines[-3:]}"
                self.lines.append(raw.decode().rstrip("\n"))
                seen += self.lines[-1].startswith(prefix)
        return next(line for line in reversed(self.lines) if line.startswith(prefix))

    def written(self) -> list[int]:
        return [int(line[2:]) for line in self.lines if line.startswith("W ")]

    async def reap(self) -> int:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.kill()
        return await self.process.wait()


async def test_a_master_paused_past_its_lease_never_writes_after_the_takeover(
    postgres_database: PostgresDatabase,
) -> None:
    url = postgres_database.url
    a = await Writer.start(url, "broker-A", "queue://A", 0)
    b: Writer | None = None
    try:
        assert await a.read_until("master") == "master 1"
        await a.read_until("W ", WRITES_BEFORE_PAUSE)
        a.process.send_signal(signal.SIGSTOP)

        b = await Writer.start(url, "broker-B", "queue://B", TAKEOVER_WRITES)
        assert await b.read_until("master") == "master 2"
        recovered = await b.read_until("recovered queue://A")
        a_last_at_takeover = int(recovered.split()[-1])
        await b.read_until("done")
        assert await b.process.wait() == 0

        a.process.send_signal(signal.SIGCONT)
        failure = await a.read_until("F ")
        assert await a.process.wait() == 3
    finally:
        await a.reap()
        if b is not None:
            await b.reap()

    # B terminated A's store session when it took over, so A learns it from a new connection.
    assert failure.startswith("F LockLostError lost the database lock: "), failure
    assert "no longer held by broker-A (epoch 1) but by " in failure
    with postgres_database.connect() as db:
        rows = db.execute(
            "SELECT container, count(*), max(seq) FROM ferrymq_messages GROUP BY 1 ORDER BY 1"
        ).fetchall()
        a_rows = {
            seq
            for (seq,) in db.execute(
                "SELECT seq FROM ferrymq_messages WHERE container = 'queue://A'"
            )
        }
    (a_container, _, a_max), (b_container, b_count, _) = rows
    assert (a_container, b_container, b_count) == ("queue://A", "queue://B", TAKEOVER_WRITES)
    assert a_max == a_last_at_takeover, "the old master wrote after the takeover"
    assert set(a.written()) <= a_rows, "a write the old master confirmed is missing"
    assert a_last_at_takeover >= WRITES_BEFORE_PAUSE
