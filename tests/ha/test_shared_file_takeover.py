"""Taking over a shared-file store from a master that still holds it (issue 13, items 3 and 4).

Each broker runs with the store's test hook (``FERRYMQ_TEST_HOLD_BEFORE_COMMIT``): creating its
hold file makes the master's writer thread stop inside a write transaction, after its writes
were applied and before its final fence check and COMMIT.  Removing the lock file stands for an
expired NFSv4 lease: the slave then takes the lock while the old master still has the database
open, and SQLite's lock on the database (held in EXCLUSIVE locking mode) keeps it out.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import stomp
from ferrymq.store.lockfile import LockFile
from ferrymq.store.sqlite import HOLD_BEFORE_COMMIT_ENV
from ferrymq.testing import BrokerProcess, listening, wait_for_master, wait_until_blocking
from tests.ha.conftest import WAIT_S, stomp_client
from tests.ha.test_shared_file_group import INTERVAL_MS, group_config
from tests.interop.conftest import Collector

QUEUE = "/queue/kept"
RECEIPTED = 10
BUSY_WARNING = "cannot open its store yet"


class Hold:
    """One broker's hold file: while it exists, that broker's next commit waits before its
    final checks."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.held = path.with_name(f"{path.name}.held")

    def engage(self) -> None:
        self.path.touch()

    def release(self) -> None:
        self.path.unlink(missing_ok=True)

    def wait_held(self, timeout_s: float = WAIT_S) -> None:
        """Until a transaction, its writes applied, waits at the hold."""
        wait_until_blocking(
            self.held.exists, timeout_s, f"a transaction to reach the hold {self.path}"
        )


def wait_for_line(broker: BrokerProcess, text: str, timeout_s: float = WAIT_S) -> str:
    def said() -> str | None:
        return next((line for line in list(broker.output) if text in line), None)

    wait_until_blocking(
        lambda: said() is not None,
        timeout_s,
        f"{broker.name} to say {text!r}",
        detail=lambda: "".join(broker.output[-20:]),
    )
    line = said()
    assert line is not None
    return line


def alive(broker: BrokerProcess) -> bool:
    return broker.process is not None and broker.process.poll() is None


def lock_is_held(shared: Path) -> bool:
    """Whether some process holds the flock on the group's lock file."""
    probe = LockFile(shared / "lock")
    if probe.try_acquire():
        probe.release()
        return False
    return True


@pytest.fixture
def keep_alive_ms() -> int:
    return INTERVAL_MS


@pytest.fixture
def pair(
    tmp_path: Path, keep_alive_ms: int
) -> Iterator[tuple[list[BrokerProcess], dict[str, Hold]]]:
    """A shared-file master (b1) and its slave (b2), each with its own hold file."""
    config = group_config(tmp_path / "shared", keep_alive_ms=keep_alive_ms)
    holds = {name: Hold(tmp_path / f"hold-{name}") for name in ("b1", "b2")}
    brokers = [
        BrokerProcess(
            tmp_path / name,
            name=name,
            config_xml=config,
            env={HOLD_BEFORE_COMMIT_ENV: str(holds[name].path)},
        )
        for name in ("b1", "b2")
    ]
    try:
        brokers[0].start()
        brokers[1].start(as_slave=True)
        yield brokers, holds
    finally:
        for hold in holds.values():
            hold.release()
        for broker in brokers:
            broker.kill()


def send_receipted(port: int) -> tuple[stomp.Connection12, Collector]:
    """RECEIPTED persistent messages ``m-0`` ... with receipts, all receipted."""
    producer, sent = stomp_client(port)
    for i in range(RECEIPTED):
        producer.send(QUEUE, f"m-{i}", headers={"persistent": "true", "receipt": f"r-{i}"})
    sent.wait_receipt(f"r-{RECEIPTED - 1}")
    return producer, sent


def stored_bodies(port: int) -> list[str]:
    """Every message of the queue, in order: consumed up to a sentinel sent last, which comes
    after anything stored before it."""
    consumer, received = stomp_client(port)
    consumer.send(QUEUE, "sentinel", headers={"persistent": "true", "receipt": "s"})
    received.wait_receipt("s")
    consumer.subscribe(QUEUE, id="all", ack="auto")
    received.wait_for(lambda: any(m.body == "sentinel" for m in received.messages), "the sentinel")
    consumer.disconnect()
    bodies = [m.body for m in received.messages]
    return bodies[: bodies.index("sentinel")]


def test_a_slave_that_wins_the_lock_from_a_paused_master_waits_for_the_store(
    pair: tuple[list[BrokerProcess], dict[str, Hold]], tmp_path: Path
) -> None:
    """Item 3: the master is SIGSTOPped inside a store transaction and its lock file is
    removed; the slave takes the lock but SQLite's lock keeps it out of the database.  It must
    keep the lock and retry (saying why), not exit; once the old master is gone it opens the
    store and serves every receipted message."""
    (master, slave), holds = pair
    producer, sent = send_receipted(master.port)
    holds["b1"].engage()
    producer.send(QUEUE, "held", headers={"persistent": "true", "receipt": "r-held"})
    holds["b1"].wait_held()
    master.pause()
    os.unlink(tmp_path / "shared" / "lock")

    warning = wait_for_line(slave, BUSY_WARNING)
    assert "WARNING" in warning
    assert "paused or deposed master" in warning
    assert alive(slave)
    assert slave.state == "slave"
    assert not listening(slave.port)
    assert lock_is_held(tmp_path / "shared")  # by the slave: the paused master's file is gone

    master.kill()
    holds["b1"].release()
    assert wait_for_master([slave]) is slave
    assert stored_bodies(slave.port) == [f"m-{i}" for i in range(RECEIPTED)]
    assert "r-held" not in sent.receipts
    assert alive(slave)


def test_a_deposed_master_held_before_commit_writes_nothing_after_losing_its_lock(
    pair: tuple[list[BrokerProcess], dict[str, Hold]], tmp_path: Path
) -> None:
    """Item 4: the master's writer thread waits between apply and commit with messages
    applied while its lock file is taken by the slave.  Released, the transaction runs its
    final fence check, finds the lock gone and rolls back; the old master steps down to slave
    and closes the database, and only then can the new master open it.

    What this proves: nothing the deposed master wrote after losing its lock becomes visible,
    and no receipt was given for it.  The hold sits before the final checks, so they run on
    resume.  After the last check only COMMIT is left; in that window SQLite's own lock on the
    database (held from open to close in EXCLUSIVE locking mode) keeps the successor out until
    the old master closes it, so a late COMMIT lands before the successor's recovery, never on
    top of it (on a file system that honours locks; see docs/master-slave.md)."""
    (master, slave), holds = pair
    producer, sent = send_receipted(master.port)
    holds["b1"].engage()
    for i in range(3):
        producer.send(QUEUE, f"held-{i}", headers={"persistent": "true", "receipt": f"r-held-{i}"})
    holds["b1"].wait_held()
    os.unlink(tmp_path / "shared" / "lock")

    wait_for_line(slave, BUSY_WARNING)  # it took the lock; the old master still has the store
    assert slave.state == "slave"
    holds["b1"].release()
    assert wait_for_master([slave]) is slave
    assert master.wait_for_state("slave"), "".join(master.output[-20:])
    wait_for_line(master, "no longer holds lock file")  # the final fence check failed
    assert alive(master)

    assert stored_bodies(slave.port) == [f"m-{i}" for i in range(RECEIPTED)]
    assert not [r for r in sent.receipts if r.startswith("r-held")]


@pytest.mark.parametrize("keep_alive_ms", [0])
def test_an_idle_master_notices_its_lost_lock_file_even_without_keep_alive(
    pair: tuple[list[BrokerProcess], dict[str, Hold]], tmp_path: Path
) -> None:
    """With ``lockKeepAlivePeriod="0"`` (kahaDB's default, ActiveMQ's "never") an idle master
    would keep the database, and so any successor, waiting until its next write: FerryMQ checks
    the lock file every second anyway, and the master steps down and closes the store.  The
    lock is then free for both brokers; whichever takes it serves every receipted message."""
    (master, slave), _ = pair
    send_receipted(master.port)
    os.unlink(tmp_path / "shared" / "lock")
    wait_for_line(master, "lost its lock: stepping down")

    def serving() -> BrokerProcess | None:
        if slave.state == "master":
            return slave
        started = [
            line for line in master.output if line.startswith(f"broker {master.name} started")
        ]
        return master if len(started) > 1 else None

    wait_until_blocking(
        lambda: serving() is not None,
        WAIT_S,
        "the slave, or the stepped-down master, to serve",
        detail=lambda: "".join(master.output[-10:] + slave.output[-10:]),
    )
    successor = serving()
    assert successor is not None
    assert stored_bodies(successor.port) == [f"m-{i}" for i in range(RECEIPTED)]
