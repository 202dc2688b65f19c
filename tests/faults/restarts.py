"""SIGKILL and restart a ``BrokerProcess`` on the same data directory and port."""

from __future__ import annotations

import signal

from ferrymq.testing import BrokerProcess


def reap(broker: BrokerProcess) -> None:
    """After SIGKILL: let the log reader reach EOF, then close the dead child's stdout pipe.

    ``BrokerProcess.kill``/``start`` leave the previous child's pipe open, which is a
    ResourceWarning (an error in this suite) once the Popen object is collected.
    """
    broker.stop()
    process = broker.process
    if process is not None and process.stdout is not None:
        process.stdout.close()


def kill_and_restart(broker: BrokerProcess) -> list[str]:
    """SIGKILL, then start on the same data and port; returns the killed broker's log."""
    broker.kill()
    assert broker.process is not None
    assert broker.process.returncode == -signal.SIGKILL
    log = list(broker.output)
    reap(broker)
    broker.start()
    return log
