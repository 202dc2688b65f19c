"""Durability contract: what SqliteStore confirmed survives a kill -9 of its process."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

from ferrymq.store import SqliteStore

from .crash_writer import CONTAINER, REMOVE_EVERY

CRASH_WRITER = Path(__file__).with_name("crash_writer.py")
CONFIRMED_BEFORE_KILL = 400
CHILD_MAX_SECONDS = 60.0  # a bound only: the test kills it long before


async def run_and_kill(directory: Path) -> list[str]:
    """Everything the writer printed before SIGKILL, as complete lines."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        str(CRASH_WRITER),
        str(directory),
        str(CHILD_MAX_SECONDS),
        stdout=asyncio.subprocess.PIPE,
    )
    assert child.stdout is not None
    transcript = bytearray()
    try:
        async with asyncio.timeout(30):
            while transcript.count(b"\n") < CONFIRMED_BEFORE_KILL:
                chunk = await child.stdout.read(65536)
                assert chunk, f"writer exited early with status {await child.wait()}"
                transcript += chunk
    finally:
        if child.returncode is None:
            child.send_signal(signal.SIGKILL)
    transcript += await child.stdout.read()  # what it printed while the signal was on its way
    assert await child.wait() == -signal.SIGKILL  # killed mid-run, not finished
    text = transcript.decode()
    return text.splitlines() if text.endswith("\n") else text.splitlines()[:-1]


async def test_confirmed_writes_survive_kill_9(tmp_path: Path) -> None:
    directory = tmp_path / "kahadb"
    lines = await run_and_kill(directory)
    added = {int(line[2:]) for line in lines if line.startswith("A ")}
    removed = {int(line[2:]) for line in lines if line.startswith("R ")}
    assert len(added) >= CONFIRMED_BEFORE_KILL // 2
    assert removed

    store = SqliteStore(directory)  # the kernel dropped the dead writer's lock
    recovery = await store.start()
    stored = {m.seq for m in await store.load(CONTAINER, 0, 1_000_000)}
    await store.stop()
    # A removal may be durable before the child printed it, so only never-removed seqs must stay.
    kept = {seq for seq in added if seq % REMOVE_EVERY}
    assert kept <= stored, "a confirmed add was lost"
    assert not removed & stored, "a confirmed removal came back"
    assert recovery.last_seq >= max(added)
