"""Master/slave groups of ``ferrymq broker`` processes: start one, find who serves after a kill.

The brokers of a group share a configuration (a lock file, a database lease, or a pure
master/slave link) and each has its own data directory; the test SIGKILLs the master and waits
for a slave to take over, so each broker is a separate process (``BrokerProcess``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path

from ferrymq.testing.brokers import BrokerProcess
from ferrymq.testing.waiting import wait_until_blocking

TAKEOVER_TIMEOUT_S = 20.0


@contextlib.contextmanager
def broker_group(
    data_root: Path, config_xml: str, names: Sequence[str]
) -> Iterator[list[BrokerProcess]]:
    """One broker process per name on the same configuration, each in its own data directory
    under ``data_root``, not started yet; all SIGKILLed on the way out, whatever happened."""
    brokers = [BrokerProcess(data_root / name, name=name, config_xml=config_xml) for name in names]
    try:
        yield brokers
    finally:
        for broker in brokers:
            broker.kill()


def start_group(brokers: Sequence[BrokerProcess]) -> None:
    """The first broker becomes master; each of the others waits as its slave."""
    brokers[0].start()
    for broker in brokers[1:]:
        broker.start(as_slave=True)


def wait_for_master(
    brokers: Sequence[BrokerProcess], timeout_s: float = TAKEOVER_TIMEOUT_S
) -> BrokerProcess:
    """The first of ``brokers`` to report that it serves (after its master was killed)."""

    def master() -> BrokerProcess | None:
        return next((broker for broker in brokers if broker.state == "master"), None)

    wait_until_blocking(
        lambda: master() is not None,
        timeout_s,
        "a broker to take over",
        detail=lambda: "".join(line for b in brokers for line in b.output[-5:]),
    )
    found = master()
    assert found is not None
    return found
